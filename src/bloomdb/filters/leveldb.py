"""``leveldb``: byte-identical to LevelDB's ``leveldb.BuiltinBloomFilter2`` (util/bloom.cc).

A static family: the filter is built once from all keys (``LevelDBBloom.build(keys,
bits_per_key)``, or ``filters.build("leveldb:10", keys)``) exactly as LevelDB's
``NewBloomFilterPolicy(bits_per_key)->CreateFilter`` builds it, and read straight from the bytes
LevelDB writes into a filter block (``from_leveldb_bytes`` / ``to_leveldb_bytes``).

* Hash: LevelDB's 32-bit ``BloomHash`` (seed 0xbc9f1d34, unsigned tail bytes) of the key's
  bytes (``str`` as UTF-8, integers as 8 bytes little-endian, like every bloomdb family).
* k = int(bits_per_key x 0.69) clamped to 1..30; bits = max(n x bits_per_key, 64) rounded up to
  whole bytes; double hashing with ``delta = rotr32(h, 17)``; k in the last byte.
* Reading: fewer than 2 bytes contain nothing; a stored k > 30 (LevelDB's reserved encodings)
  answers "may contain" for every key.

Cost: k random bit reads per query (one cache miss each on a large filter) — LevelDB's filters
are per 2 KiB data block, so they are small and cached.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .. import keys as _keys
from ..errors import InvalidArgument, StaticFilterError
from ..hashing._leveldb_kernels import (
    leveldb_hash_batch_bytes,
    leveldb_hash_batch_ints,
    leveldb_hash_bytes,
    leveldb_hash_u64,
)
from ..keys import KeyBatch
from . import _leveldb_kernels as K
from . import format as fmt
from . import math as fm
from .leveldb_fpr import probe_fpr
from .registry import register
from ._common_kernels import popcount_bytes
from .base import Filter, single_key_batch

#: The seed of LevelDB's BloomHash.
BLOOM_HASH_SEED = 0xBC9F1D34
#: LevelDB's name for this filter policy (stored in the metaindex block as "filter.<name>").
POLICY_NAME = "leveldb.BuiltinBloomFilter2"

_PARAMS = struct.Struct("<I4x")  # bits_per_key it was built with (0: read from raw LevelDB bytes)
_SEED = np.uint64(BLOOM_HASH_SEED)


def leveldb_hash(key: Any, seed: int = BLOOM_HASH_SEED) -> int:
    """LevelDB's ``Hash(data, n, seed)`` of one key (``BloomHash`` with the default seed)."""
    b = single_key_batch(key)
    if b.is_int:
        return int(leveldb_hash_u64(b.ints[0], np.uint64(seed)))
    return int(leveldb_hash_bytes(b.data, 0, b.data.shape[0], np.uint64(seed)))


def bloom_hashes(batch: KeyBatch) -> np.ndarray:
    """``BloomHash`` of every key of a batch (uint32 values in a uint64 array). Cost: one pass."""
    out = np.empty(len(batch), dtype=np.uint64)
    if len(batch):
        if batch.is_int:
            leveldb_hash_batch_ints(np.ascontiguousarray(batch.ints), _SEED, out)
        else:
            leveldb_hash_batch_bytes(batch.data, batch.offsets, _SEED, out)
    return out


def num_probes_for(bits_per_key: int) -> int:
    """LevelDB's k: ``bits_per_key x 0.69`` rounded down, clamped to 1..30."""
    return max(1, min(30, int(bits_per_key * 0.69)))


def _check_leveldb_bpk(bits_per_key: Any) -> int:
    try:
        b = float(bits_per_key)
    except (TypeError, ValueError):
        b = float("nan")
    if isinstance(bits_per_key, bool) or not b == b or b != int(b) or not 1 <= b <= 10_000:
        raise InvalidArgument(
            f"leveldb: bits_per_key is an integer 1..10000 (LevelDB's NewBloomFilterPolicy), got {bits_per_key!r}"
        )
    return int(b)


@register
class LevelDBBloom(Filter):
    """LevelDB's Bloom filter (leveldb.BuiltinBloomFilter2), byte for byte; static (built once)."""

    family = "leveldb"
    family_version = 1
    static = True
    example_spec = "leveldb:10"
    spec_meaning = "bits per key (an integer, as LevelDB's NewBloomFilterPolicy)"

    _STATIC_MSG = (
        "leveldb filters are built from all their keys at once: LevelDBBloom.build(keys, bits_per_key) "
        "or filters.build('leveldb:10', keys); LevelDBBloom.from_leveldb_bytes(b) reads one"
    )

    def __init__(self, *args: Any, **kwargs: Any):
        raise StaticFilterError(self._STATIC_MSG)

    @classmethod
    def from_spec(cls, arg: str | None, capacity: int | None = None, **kwargs: Any) -> "LevelDBBloom":
        """Refused: a static family has no empty filter to add keys to (StaticFilterError)."""
        raise StaticFilterError(cls._STATIC_MSG)

    def _init(self, buf: np.ndarray, bits_per_key: int, count: int) -> None:
        self._buf = buf
        self._bpk = bits_per_key
        self._count = count
        self._readonly = True

    @classmethod
    def _new(cls, buf: np.ndarray, bits_per_key: int, count: int) -> "LevelDBBloom":
        self = cls.__new__(cls)
        self._init(buf, bits_per_key, count)
        return self

    # ---- builder and raw bytes ----------------------------------------------------------

    @classmethod
    def build(cls, keys: Any, bits_per_key: Any = 10, **kwargs: Any) -> "LevelDBBloom":
        """LevelDB ``CreateFilter`` over ``keys`` at ``bits_per_key`` (an integer; default 10).

        Raises InvalidArgument for a bad bits/key or unknown keyword, KeyTypeError for bad keys.
        Cost: one hash pass plus k bit writes per key.
        """
        if kwargs:
            raise InvalidArgument(f"leveldb: unexpected arguments {sorted(kwargs)}")
        bpk = _check_leveldb_bpk(bits_per_key)
        hashes = [bloom_hashes(b) for b in _keys.to_batches(keys)]
        h = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
        n = int(h.shape[0])
        nbytes = (max(n * bpk, 64) + 7) // 8
        buf = fmt.aligned_zeros(nbytes + 1)
        k = num_probes_for(bpk)
        buf[nbytes] = k
        K.add_hashes(buf, k, h)
        return cls._new(buf, bpk, n)

    @classmethod
    def from_leveldb_bytes(cls, data: bytes | bytearray | memoryview, count: int = 0) -> "LevelDBBloom":
        """A filter over a copy of exactly what LevelDB wrote into a filter block (any length).

        ``count`` is the number of keys when known (LevelDB does not store it).
        """
        mv = memoryview(data).cast("B")
        buf = fmt.aligned_empty(mv.nbytes)
        buf[:] = np.frombuffer(mv, dtype=np.uint8)
        return cls._new(buf, 0, int(count))

    def to_leveldb_bytes(self) -> bytes:
        """The filter exactly as LevelDB stores it: bit array, then the k byte."""
        return self._snapshot()[0].tobytes()

    # ---- envelope -----------------------------------------------------------------------

    def _params(self) -> bytes:
        return _PARAMS.pack(self._bpk)

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int) -> "LevelDBBloom":
        (bpk,) = _PARAMS.unpack(params)
        return cls._new(payload, bpk, count)

    def _payload(self) -> np.ndarray:
        return self._buf

    # ---- queries ------------------------------------------------------------------------

    def _add_batch(self, batch: KeyBatch, atomic: bool) -> None:  # pragma: no cover - _check_mutable refuses first
        raise StaticFilterError("leveldb filters are static")

    def _query_batch(self, batch: KeyBatch, out: np.ndarray) -> None:
        K.query_hashes(self._buf, bloom_hashes(batch), out)

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        """Keys given as their LevelDB BloomHash values (``might_contain_hashes``)."""
        K.query_hashes(self._buf, hashes, out)

    has_probe_kernel = True

    @property
    def kernel_args(self) -> np.ndarray:
        """The raw LevelDB bytes, for :func:`_leveldb_kernels.check_hash` (``key_may_match``) in
        engine kernels; the hash is the key's LevelDB BloomHash."""
        return self._buf

    # ---- facts --------------------------------------------------------------------------

    @property
    def num_bits(self) -> int:
        return max(0, self._buf.shape[0] - 1) * 8

    @property
    def num_probes(self) -> int:
        """The stored k (0 for a filter shorter than 2 bytes; > 30 means "reserved: always true")."""
        self._check_source()
        return int(self._buf[-1]) if self._buf.shape[0] >= 2 else 0

    @property
    def capacity(self) -> int:
        return max(1, self._count)

    def fill_ratio(self) -> float:
        """Fraction of set bits in the bit array (the k byte excluded)."""
        if self.num_bits == 0:
            return 0.0
        self._check_source()
        return popcount_bytes(self._buf[:-1]) / self.num_bits

    def estimated_fpr(self) -> float:
        """Standard Bloom FP at the stored k and the key count (or the fill ratio when unknown)."""
        k = self.num_probes
        if self.num_bits == 0:
            return 0.0
        if k > 30:
            return 1.0
        if self._count:
            return fm.standard_fpr(self.num_bits / self._count, k)
        return self.fill_ratio() ** k

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """``(1 - e^(-k/b))^k`` with LevelDB's k for ``b`` unless given (no key count: the textbook).

        A lower bound in practice: LevelDB's 32-bit hash and rotate-and-add probes match it for
        filters of up to ~10K keys (LevelDB's per-block filters), but measure above it for big
        ones (at 10 bits/key: 0.90% at 10K keys, 1.45% at 100K, 1.30% at 1M; textbook 0.84%).
        :meth:`bench_expected_fpr` models the scheme itself (:mod:`.leveldb_fpr`).
        """
        k = num_probes if num_probes is not None else num_probes_for(int(bits_per_key))
        return fm.standard_fpr(bits_per_key, k)

    def bench_expected_fpr(self) -> float:
        """The model of LevelDB's own probe scheme at this filter's size, k and key count
        (:func:`.leveldb_fpr.probe_fpr`: its third probe takes at most 2^18 values), or the absent
        key's 32-bit hash equals one of the ``count`` keys' (``count / 2^32``), which sets every
        probed bit — the floor at high bits/key: 0.023% at 1M keys."""
        n = max(1, self.count)
        k = self.num_probes
        bits = 1.0 if k > 30 else probe_fpr(n, self.num_bits, k)  # k > 30: reserved, always true
        return fm.independent_fpr(bits, fm.fingerprint_fpr(n, 32))

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """LevelDB takes whole bits per key: each value rounded (duplicates dropped)."""
        seen = dict.fromkeys(max(1, round(b)) for b in bits_per_key_values)
        return [f"leveldb:{b}" for b in seen]
