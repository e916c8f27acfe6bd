"""``paired``: Speedb's paired blocked Bloom filter (static; built from all keys at once).

A cache-line blocked Bloom whose blocks are balanced in pairs: the builder counts the keys that
land in each 512-bit block, and inside every batch of ``batch_blocks`` blocks pairs the lightest
block with the heaviest, the second lightest with the second heaviest, and so on. Each key sets
k/2 bits in its own block and k/2 in its partner, so the load every probe sees is the sum of a
light and a heavy block — much closer to the mean than the Poisson spread that limits a plain
blocked Bloom at high bits/key (Speedb: ~4x fewer false positives at 23.4 bits/key).

Layout and rules follow Speedb (``plugin/speedb/paired_filter``, current version: batches of 32
blocks, a 5-bit partner index at the start of each block, 507 Bloom bits; ``batch_blocks=128``
gives the original 7-bit / 505-bit layout): sizing ``bytes = n * millibits / 8000`` rounded up to
whole batches (at least one), ``k`` even from Speedb's rule. Exact bit layout in the kernels
module and ``docs/formats.md``. Hash: bloomdb's XXH3-64, so the bits are Speedb's layout, not
Speedb's files (Speedb hashes with RocksDB's XXPH3).

Cost: build one pass to histogram + one pass setting bits (two cache lines per key); a query
touches two cache lines, the second found through the first (pipelined over batches).
"""

from __future__ import annotations

import functools
import math
import struct
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from . import _paired_kernels as K
from . import format as fmt
from . import math as fm
from .registry import register
from .base import check_bits_per_key
from .static import StaticHashedFilter

_PARAMS = struct.Struct("<QQHBBI")  # keys, num_blocks, batch_blocks, k, idx_bits, millibits
_MAX_BLOCKS = (1 << 32) - 1


def speedb_num_probes(millibits_per_key: int, bloom_bits: int = 507) -> int:
    """Speedb's k: ``adj = mb * bloom_bits // 512 // 1000``; ``k = min(30, 2 * ceil(ln2 * adj / 2))``.

    Always even (k/2 probes in each block of a pair); at least 2.
    """
    adj = millibits_per_key * bloom_bits // 512 // 1000
    return max(2, min(30, 2 * math.ceil(fm.LN2 * adj / 2)))


def _check_batch(batch_blocks) -> int:
    if isinstance(batch_blocks, bool) or not isinstance(batch_blocks, (int, np.integer)) or not (
        2 <= batch_blocks <= 256 and batch_blocks & (batch_blocks - 1) == 0
    ):
        raise InvalidArgument(f"batch_blocks must be a power of two in [2, 256], got {batch_blocks!r}")
    return int(batch_blocks)


@functools.lru_cache(maxsize=512)
def paired_fpr(bits_per_key: float, k: int, batch_blocks: int = 32) -> float:
    """Model FP of the paired filter at ``bits_per_key`` (all bits, pair index included).

    Keys per block are Poisson(512 / bits_per_key); inside each batch the loads are sorted and
    paired lightest-with-heaviest; a pair holding ``m`` keys has every one of its two blocks hit
    by ``m * k/2`` uniform bit-sets over the Bloom bits, so a query passes with probability
    ``(1 - q^(m k/2))^k``, ``q = 1 - 1/bloom_bits``. The pair loads come from a fixed-seed draw
    of 65,536 blocks (deterministic, ~0.3% sampling error, ~5 ms, cached): the order statistics
    have no simple closed form.
    """
    if bits_per_key <= 0:
        return 1.0
    idx_bits = batch_blocks.bit_length() - 1
    q = 1.0 - 1.0 / (512 - idx_bits)
    rng = np.random.default_rng(20221214)
    counts = np.sort(rng.poisson(512.0 / bits_per_key, size=(65536 // batch_blocks, batch_blocks)), axis=1)
    half = batch_blocks // 2
    m = counts[:, :half] + counts[:, ::-1][:, :half]
    values, freq = np.unique(m, return_counts=True)
    p = (1.0 - q ** (values * (k // 2))) ** k
    return float((p * freq).sum() / freq.sum())


@register
class PairedBloom(StaticHashedFilter):
    """Speedb paired blocked Bloom (static): block pairs balanced by load, k/2 bits in each."""

    family = "paired"
    family_version = 1
    _kernels = K
    example_spec = "paired:10"

    @classmethod
    def build_hashes(cls, hashes: np.ndarray, bits_per_key: float = 10.0, batch_blocks: int = 32) -> "PairedBloom":
        """Build over XXH3-64 ``hashes`` (one per key) at ``bits_per_key`` (Speedb's sizing and k).

        ``batch_blocks`` is 32 (current Speedb) or any power of two up to 256 (128 = Speedb's
        first version). Raises InvalidArgument for bad parameters or more than 2^32 - 1 blocks.
        """
        bpk = check_bits_per_key(bits_per_key, high=100.0, family="paired", why="RocksDB's cap")
        batch = _check_batch(batch_blocks)
        millibits = max(1000, fm.rocksdb_millibits_per_key(bpk))
        h = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1)
        n = int(h.shape[0])
        idx_bits = batch.bit_length() - 1
        bloom_bits = 512 - idx_bits
        nbytes = n * millibits // 8000
        batch_bytes = batch * 64
        num_blocks = max(1, -(-nbytes // batch_bytes)) * batch
        if num_blocks > _MAX_BLOCKS:
            raise InvalidArgument(f"paired filter of {num_blocks} blocks exceeds 2^32 - 1 blocks")
        k = speedb_num_probes(millibits, bloom_bits)
        buf = fmt.aligned_zeros(num_blocks * 64)
        self = cls._assemble(buf, _count=n, _blocks=num_blocks, _batch=batch, _k=k, _idx_bits=idx_bits,
                             _millibits=millibits)
        K.build(self._words, np.uint64(num_blocks), np.uint64(batch), k // 2,
                np.uint64(idx_bits), np.uint64(bloom_bits), h)
        return self

    # envelope
    _params_struct = _PARAMS
    _param_names = ("_count", "_blocks", "_batch", "_k", "_idx_bits", "_millibits")

    def _views(self) -> None:
        self._words = self._buf.view(np.uint32)

    @classmethod
    def _inconsistency(cls, fields: dict[str, Any], payload: np.ndarray) -> str:
        blocks, batch, k, idx_bits = (fields[n] for n in ("_blocks", "_batch", "_k", "_idx_bits"))
        if (
            batch < 2 or batch > 256 or batch & (batch - 1)
            or idx_bits != batch.bit_length() - 1
            or blocks == 0 or blocks % batch or blocks > _MAX_BLOCKS
            or payload.nbytes != blocks * 64
            or k % 2 or not 2 <= k <= 30
        ):
            return f"blocks={blocks} batch={batch} k={k} payload={payload.nbytes}"
        return ""

    # facts
    @property
    def kernel_args(self) -> tuple:
        """``(w32, num_blocks, batch_blocks, k/2, idx_bits, bloom_bits)`` for
        :func:`_paired_kernels.check_hash` inside an engine's kernel."""
        return (self._words, np.uint64(self._blocks), np.uint64(self._batch), self._k // 2,
                np.uint64(self._idx_bits), np.uint64(512 - self._idx_bits))

    @property
    def num_blocks(self) -> int:
        return self._blocks

    @property
    def batch_blocks(self) -> int:
        return self._batch

    @property
    def num_bits(self) -> int:
        """All bits of the filter, pair-index bits included."""
        return self._blocks * 512

    @property
    def num_probes(self) -> int:
        return self._k

    def _layout_fpr(self) -> float:
        """The pair-load model (:func:`paired_fpr`) at the filter's bits/key."""
        return paired_fpr(round(self.num_bits / self._count, 4), self._k, self._batch)

    def stats(self) -> dict:
        s = super().stats()
        s.update(batch_blocks=self._batch, pair_index_bits=self._idx_bits, bloom_bits_per_block=512 - self._idx_bits)
        return s

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """Model FP at ``bits_per_key`` (Speedb's k unless given), 32-block batches."""
        if num_probes is None:
            num_probes = speedb_num_probes(max(1000, fm.rocksdb_millibits_per_key(bits_per_key)))
        return paired_fpr(round(float(bits_per_key), 4), int(num_probes), 32)
