"""``blocked``: the cache-line blocked Bloom filter of RocksDB (FastLocalBloom, format_version=5).

Every key touches exactly one 64-byte cache line: the lower 32 bits of its XXH3-64 hash pick the
line by multiply-shift, the upper 32 bits give k bit positions inside it. Sizing and k follow
RocksDB exactly: millibits/key = round(bits/key · 1000), bytes = roundup64(n · mb / 8000),
k from RocksDB's ``ChooseNumProbes`` table (k ≈ bits/key / 2 at high bits/key, which is best for
a cache-local filter). The same bits as RocksDB's for the same hash; RocksDB itself hashes with a
preview of XXH3 (XXPH3), so a RocksDB filter file is not interchangeable with this one.

Cost: one cache miss per key at most (none when the filter fits in cache); batch operations
prefetch lines a group of keys ahead.

Concurrency: any number of threads may add and query at once and no key is lost. A writer alone
sets bits with plain stores; writers that overlap set them with an atomic OR, skipped when the bit
is already set (:mod:`.writers`); queries read plain words. ``add_many(keys, threads=N)`` gives
every thread a slice of the keys (:mod:`.parallel`); the bytes equal a serial build.
"""

from __future__ import annotations

import numpy as np

from . import _blocked_kernels as K
from . import format as fmt
from . import math as fm
from .registry import register
from ._cache_lines import CacheLineState
from .base import HashedFilter, check_bits_per_key, check_fpr



#: RocksDB caps bits/key at 100 (``rocksdb_millibits_per_key``); more is refused, not capped.
MAX_BITS_PER_KEY = 100


def _fpr_at_millibits(mb: int) -> float:
    return fm.line_blocked_fpr(mb / 1000.0, fm.rocksdb_num_probes(mb))


def millibits_for_fpr(fpr: float) -> int:
    """Millibits/key (0.01 steps) whose expected FP (the Poisson model of ``expected_fpr`` and
    ``estimated_fpr``) is at most ``fpr`` while the step below misses it.

    Bisection (~14 model evaluations, a few ms). Raises InvalidArgument when even 100 bits/key
    misses ``fpr``.
    """
    mb = fm.smallest_step_meeting(_fpr_at_millibits, fpr, 1000, MAX_BITS_PER_KEY * 1000, 10)
    if mb is None:
        check_fpr(fpr, best=_fpr_at_millibits(MAX_BITS_PER_KEY * 1000), family="blocked",
                  why=f"RocksDB's cap of {MAX_BITS_PER_KEY} bits/key")
    return mb


@register
class BlockedBloom(CacheLineState, HashedFilter):
    """Cache-line blocked Bloom (RocksDB FastLocalBloom): one 512-bit line per key, prefetching batches."""

    family = "blocked"
    family_version = 1
    intersectable = True
    example_spec = "blocked:10"
    has_probe_kernel = True

    def __init__(self, capacity: int, bits_per_key: float | None = None, fpr: float | None = None):
        capacity, num_lines, k, millibits = self._plan(capacity, bits_per_key, fpr)
        self._init(capacity, num_lines, k, millibits, fmt.aligned_zeros(num_lines * 64), 0)

    @classmethod
    def _millibits(cls, bits_per_key: float | None, fpr: float | None) -> int:
        if fpr is not None:
            return millibits_for_fpr(check_fpr(fpr))
        bpk = check_bits_per_key(10.0 if bits_per_key is None else bits_per_key, high=MAX_BITS_PER_KEY,
                                 family=cls.family, why="RocksDB's cap")
        return max(1000, fm.rocksdb_millibits_per_key(bpk))

    @staticmethod
    def _probes_for(millibits: int) -> int:
        return fm.rocksdb_num_probes(millibits)

    def _bind(self, buf: np.ndarray) -> None:
        self._words = buf.view(np.uint32)

    # kernels
    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None:
        K.add_hashes(self._words, np.uint64(self._lines), self._k, hashes, atomic)

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        K.query_hashes(self._words, np.uint64(self._lines), self._k, hashes, out)

    def _add_ints(self, ints: np.ndarray, atomic: bool) -> None:
        K.add_ints(self._words, np.uint64(self._lines), self._k, ints, atomic)

    def _query_ints(self, ints: np.ndarray, out: np.ndarray) -> None:
        K.query_ints(self._words, np.uint64(self._lines), self._k, ints, out)

    # facts
    @property
    def num_bits(self) -> int:
        return self._lines * 512

    @property
    def kernel_args(self) -> tuple[np.ndarray, np.uint64, int]:
        """``(words32, num_lines, k)`` for :func:`_blocked_kernels.check_hash` in engine kernels."""
        return self._words, np.uint64(self._lines), self._k

    def _fill_shape(self) -> tuple[int, int, int]:
        return self._lines, 512, self._k

    def fpr_at(self, n: int) -> float:
        """Poisson keys-per-line FP at ``n`` keys, combined with 64-bit hash collisions
        (``estimated_fpr`` at the keys added so far)."""
        return fm.independent_fpr(fm.line_blocked_fpr(self.num_bits / n, self._k), fm.fingerprint_fpr(n, 64))

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """FP of a filter at ``bits_per_key`` (RocksDB's k unless given; Poisson keys-per-line model)."""
        if num_probes is None:
            num_probes = fm.rocksdb_num_probes(max(1000, fm.rocksdb_millibits_per_key(bits_per_key)))
        return fm.line_blocked_fpr(bits_per_key, num_probes)
