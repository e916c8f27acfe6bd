"""``sbbf``: the Parquet split-block Bloom filter (parquet-format BloomFilter.md; Apple, 2021).

Bit-compatible with the filters Parquet writers (Arrow C++, parquet-mr, DuckDB, ...) store in
column chunks: 256-bit blocks of eight 32-bit words, eight salted multiply-shift bits per value
(one in each word), the block chosen from the upper 32 bits of the value's hash, and the hash is
XXH64 (seed 0) of the value's Parquet plain encoding. bloomdb keys encode exactly that way for
INT64 (8 bytes little-endian) and BYTE_ARRAY (the bytes, no length prefix) columns; other
physical types (INT32 = 4 bytes, FLOAT, DOUBLE) are hashed by :mod:`bloomdb.parquet`.

Sizing: ``fpr=`` follows the spec's recipe (Arrow's ``OptimalNumOfBytes``: ``-8 n / ln(1 -
p^(1/8))`` bits, at least 32 bytes, next power of two, at most 128 MiB); ``bits_per_key`` (the
number in ``"sbbf:10"``) gives whole 32-byte blocks, so a bits/key sweep measures what it says;
``num_bytes=`` sets it directly. The spec allows any number of blocks, but Parquet writers use
powers of two (Arrow C++ also rounds the size it is asked for up to one, 32 B .. 128 MiB), so
other readers may assume it: put only power-of-two filters (``fpr=`` sizing) into Parquet files.
``to_parquet_bitset`` / ``from_parquet_bitset`` move the raw bitset in and out of Parquet.

Cost: one 32-byte block per value (one cache miss at most), eight bit tests.

Concurrency: any number of threads may insert and check at once and no value is lost. A writer
alone sets bits with plain stores; writers that overlap use an atomic OR, skipped when the bit is
already set (:mod:`.writers`). ``add_many(keys, threads=N)`` splits the keys between threads
(:mod:`.parallel`) and gives the same bytes as a serial build.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..keys import KeyBatch
from . import _sbbf_kernels as K
from . import format as fmt
from . import math as fm
from .registry import register
from .base import Filter, check_bits_per_key, check_capacity, check_fpr

_PARAMS = struct.Struct("<QQ")  # capacity, num_bytes
BYTES_PER_BLOCK = 32
MIN_BYTES = 32
#: Parquet writers cap a filter at 128 MiB (Arrow ``kMaximumBloomFilterBytes``).
MAX_BYTES = 128 * 1024 * 1024
_MAX_BLOCKS = (1 << 31) - 1  # the spec: 1 <= z < 2^31


def optimal_num_bits(ndv: int, fpp: float) -> float:
    """The unrounded, uncapped bits of the Parquet recipe, ``-8 ndv / ln(1 - fpp^(1/8))`` (inf when
    ``fpp^(1/8)`` is below float precision)."""
    fpp = check_fpr(fpp, family="sbbf")
    denom = math.log1p(-(fpp ** (1.0 / 8.0)))
    return -8.0 * ndv / denom if denom else math.inf


def optimal_num_bytes(ndv: int, fpp: float) -> int:
    """Bytes of a filter for ``ndv`` distinct values at false-positive rate ``fpp``, as Parquet
    writers size it (Arrow C++ ``OptimalNumOfBytes``): ``-8 ndv / ln(1 - fpp^(1/8))`` bits,
    at least 32 bytes, rounded up to a power of two, at most 128 MiB."""
    m = optimal_num_bits(ndv, fpp)
    bits = MAX_BYTES * 8 if (m < 0 or m > MAX_BYTES * 8) else int(m)
    bits = max(bits, MIN_BYTES * 8)
    if bits & (bits - 1):
        bits = 1 << bits.bit_length()
    return min(bits, MAX_BYTES * 8) // 8


def _check_num_bytes(num_bytes: Any) -> int:
    if isinstance(num_bytes, bool) or not isinstance(num_bytes, (int, np.integer)):
        raise InvalidArgument(f"sbbf: num_bytes must be a positive multiple of 32, got {num_bytes!r}")
    nb = int(num_bytes)
    if nb <= 0 or nb % BYTES_PER_BLOCK or nb // BYTES_PER_BLOCK > _MAX_BLOCKS:
        raise InvalidArgument(f"sbbf: num_bytes must be a positive multiple of 32 below 64 GiB, got {num_bytes!r}")
    return nb


@register
class SplitBlockBloom(Filter):
    """Parquet split-block Bloom filter (SBBF): 8 salted bits in one 256-bit block, XXH64 of the plain encoding."""

    family = "sbbf"
    family_version = 1
    intersectable = True
    has_probe_kernel = True
    example_spec = "sbbf:10"

    def __init__(
        self,
        capacity: int,
        bits_per_key: float | None = None,
        fpr: float | None = None,
        num_bytes: int | None = None,
    ):
        """A zeroed filter for ``capacity`` values: ``num_bytes``, ``fpr`` (Parquet sizing) or
        ``bits_per_key`` (default 10, whole blocks) — one of them. Raises InvalidArgument."""
        capacity, nbytes = self._plan(capacity, bits_per_key, fpr, num_bytes)
        self._init(capacity, fmt.aligned_zeros(nbytes), 0)

    @classmethod
    def _plan(cls, capacity: int, bits_per_key: float | None = None, fpr: float | None = None,
              num_bytes: int | None = None) -> tuple[int, int]:
        """The checked ``(capacity, num_bytes)`` of a new filter (raises InvalidArgument)."""
        capacity = check_capacity(capacity, cls.family)
        if sum(x is not None for x in (bits_per_key, fpr, num_bytes)) > 1:
            raise InvalidArgument("sbbf: give one of bits_per_key, fpr, num_bytes")
        if num_bytes is not None:
            nbytes = _check_num_bytes(num_bytes)
        elif fpr is not None:
            if optimal_num_bits(capacity, fpr) > MAX_BYTES * 8:
                raise InvalidArgument(
                    f"sbbf: fpr={fpr!r} for {capacity} values needs more than Parquet's cap of "
                    f"{MAX_BYTES >> 20} MiB; give a larger fpr, fewer values or num_bytes="
                )
            nbytes = optimal_num_bytes(capacity, fpr)
        else:
            bpk = check_bits_per_key(10.0 if bits_per_key is None else bits_per_key, family=cls.family)
            nbytes = BYTES_PER_BLOCK * max(1, math.ceil(capacity * bpk / (8 * BYTES_PER_BLOCK)))
            if nbytes // BYTES_PER_BLOCK > _MAX_BLOCKS:
                raise InvalidArgument(f"sbbf: {nbytes} bytes exceeds 2^31 blocks")
        return capacity, nbytes

    @classmethod
    def planned_size(cls, capacity: int, **kwargs: Any) -> tuple[int, int]:
        """As :meth:`Filter.planned_size`, by arithmetic (no allocation)."""
        return cls._plan(capacity, **kwargs)[1] * 8, 8

    def _init(self, capacity: int, buf: np.ndarray, count: int) -> None:
        self._capacity = capacity
        self._buf = buf
        self._words = buf.view(np.uint32)
        self._count = count
        self._readonly = not buf.flags.writeable

    # ---- Parquet bitset -----------------------------------------------------------------

    @classmethod
    def from_parquet_bitset(cls, bitset: bytes | bytearray | memoryview | np.ndarray, count: int = 0) -> "SplitBlockBloom":
        """A filter over a copy of a Parquet bitset (the bytes after the BloomFilterHeader).

        Its length must be a positive multiple of 32 (InvalidArgument otherwise).
        """
        arr = np.frombuffer(memoryview(bitset).cast("B"), dtype=np.uint8)
        _check_num_bytes(arr.nbytes)
        buf = fmt.aligned_empty(arr.nbytes)
        buf[:] = arr
        self = cls.__new__(cls)
        self._init(max(1, int(count)), buf, int(count))
        return self

    def to_parquet_bitset(self) -> bytes:
        """The bitset as Parquet stores it after the header (words little-endian)."""
        return self._snapshot()[0].tobytes()

    # ---- envelope -----------------------------------------------------------------------

    def _params(self) -> bytes:
        return _PARAMS.pack(self._capacity, self._buf.nbytes)

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int) -> "SplitBlockBloom":
        capacity, nbytes = _PARAMS.unpack(params)
        if nbytes != payload.nbytes or nbytes % BYTES_PER_BLOCK or nbytes == 0 or capacity == 0:
            raise ValueError(f"inconsistent sbbf filter: num_bytes={nbytes} payload={payload.nbytes}")
        self = cls.__new__(cls)
        self._init(capacity, payload, count)
        return self

    def _payload(self) -> np.ndarray:
        return self._buf

    # ---- kernels ------------------------------------------------------------------------

    def _add_batch(self, batch: KeyBatch, atomic: bool) -> None:
        if batch.is_int:
            K.add(self._words, batch.ints, False, atomic)
        else:
            K.add(self._words, _xxh64(batch), True, atomic)

    def _query_batch(self, batch: KeyBatch, out: np.ndarray) -> None:
        if batch.is_int:
            K.query(self._words, batch.ints, False, out)
        else:
            K.query(self._words, _xxh64(batch), True, out)

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Insert values given as their XXH64 (seed 0) hashes of the plain encoding."""
        self._check_mutable()
        h = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1)
        n = int(h.shape[0])
        with self._admitted(n) as held:
            with self._writing(True) as atomic:
                K.add(self._words, h, True, atomic)
            self._counted(n, held[0])
            held[0] = 0

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        """Values given as their XXH64 (seed 0) hashes (``might_contain_hashes``)."""
        K.query(self._words, hashes, True, out)

    @property
    def kernel_args(self) -> tuple[np.ndarray, np.uint64]:
        """``(words32, num_blocks)`` for :func:`_sbbf_kernels.check_hash` in engine kernels."""
        return self._words, np.uint64(self.num_blocks)

    # ---- facts --------------------------------------------------------------------------

    @property
    def num_blocks(self) -> int:
        return self._buf.nbytes // BYTES_PER_BLOCK

    @property
    def num_bits(self) -> int:
        return self._buf.nbytes * 8

    @property
    def num_probes(self) -> int:
        return 8

    def estimated_fpr(self) -> float:
        """Poisson values-per-block FP at the values added so far (or from the fill when unknown)."""
        if self._count == 0:
            return self.fill_ratio() ** 8
        return super().estimated_fpr()

    def _fill_shape(self) -> tuple[int, int, int]:
        """A value sets one bit in every 32-bit word of its block: each word, like its block,
        sees every value of the block, 1 of 32 positions each."""
        return self.num_blocks, 32, 1

    def fpr_at(self, n: int) -> float:
        """Poisson values-per-block FP once ``n`` values are in."""
        return fm.split_block_fpr(self.num_bits / n)

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """``sum_j Pois(j; 256 / b) (1 - (31/32)^j)^8`` (the spec's and Apple's formula)."""
        return fm.split_block_fpr(bits_per_key) if bits_per_key > 0 else 1.0


def _xxh64(batch: KeyBatch) -> np.ndarray:
    from ..hashing import hash_batch_xxh64

    return hash_batch_xxh64(batch, 0)
