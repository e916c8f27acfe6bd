"""``counting``: a cache-line blocked counting Bloom filter with 4-bit counters — it can forget.

Layout: ``num_lines`` lines of 64 bytes, each 128 four-bit counters (two per byte, the even
counter in the low nibble). A key touches one line, chosen and probed exactly like ``blocked``
(see :mod:`._counting_kernels`); ``add`` increments its k counters, ``remove`` decrements them.
A counter saturates at 15 and is then frozen (never decremented), so no present key can lose a
counter; :meth:`CountingBloom.stats` reports how many are saturated (at the optimal load a
counter holds Poisson(~0.6) keys, so saturation needs pathological duplicate counts).

Spec number: **bits of counter memory per key** (``counting:40`` = 10 counters of 4 bits per
key, the memory of ``blocked:40``). A counter answers like one bit, so the FP rate is that of a
line-blocked Bloom filter at bits/4 bits per key with 128-position lines — ``counting:40`` is
about 1.3% (``blocked:10``: 0.96%). :meth:`CountingBloom.to_bloom` turns it into the
equivalent read-only ``blocked`` filter (same lines, same k, same answers, same bytes).

Cost: one cache miss per key at most; batch kernels prefetch lines ahead.

Concurrency: writes (add, remove, union) run one at a time (:mod:`.writers`), so a counter update
is never lost; queries take no lock and re-check with writers held off only when a remove
overlapped them (see :mod:`.deletable`). ``add_many(keys, threads=N)`` has every thread count its
slice of the keys into a private copy and adds the copies up, saturating at 15: a counter ends at
min(15, its adds) either way, so the bytes equal a serial build (a filter too big for N copies is
hashed on N threads and filled by one). Cost: one uncontended lock round trip per call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _counting_kernels as K
from . import format as fmt
from . import math as fm
from . import parallel
from .registry import register
from ._cache_lines import CacheLineState
from .base import check_bits_per_key, check_fpr
from .deletable import DeletableFilter

# capacity, num_lines, k, millibits (of counter memory) per key: the layout of blocked's params,
# so to_bloom() hands its parameter block over unchanged.


#: Largest counter memory per key ``fpr=`` sizing goes to (100 counters of 4 bits).
MAX_FPR_MILLIBITS = 400_000


def _fpr_at_millibits(mb: int) -> float:
    b = mb / 1000.0
    return fm.counting_fpr(b, fm.counting_num_probes(b))


def millibits_for_fpr(fpr: float) -> int:
    """Smallest counter-memory millibits/key (0.04-bit steps) whose expected FP is at most ``fpr``.

    Bisection over the steps (the FP at the best k only falls as memory grows): ~14 model
    evaluations, a few ms. Raises InvalidArgument when 400 bits/key still misses ``fpr``.
    """
    mb = fm.smallest_step_meeting(_fpr_at_millibits, fpr, 4000, MAX_FPR_MILLIBITS, 40)
    if mb is None:
        check_fpr(fpr, best=_fpr_at_millibits(MAX_FPR_MILLIBITS), family="counting",
                  why=f"{MAX_FPR_MILLIBITS // 1000} bits of counters per key")
    return mb


@register
class CountingBloom(CacheLineState, DeletableFilter):
    """Counting Bloom: 4-bit saturating counters, one cache line per key, remove() and to_bloom()."""

    family = "counting"
    family_version = 1
    example_spec = "counting:40"
    max_probes = 24
    #: bits of counter memory per key (4 per counter) = bits per key of the equivalent to_bloom()
    spec_meaning = "bits per key"

    def __init__(self, capacity: int, bits_per_key: float | None = None, fpr: float | None = None):
        capacity, num_lines, k, millibits = self._plan(capacity, bits_per_key, fpr)
        self._init(capacity, num_lines, k, millibits, fmt.aligned_zeros(num_lines * 64), 0)

    @classmethod
    def _millibits(cls, bits_per_key: float | None, fpr: float | None) -> int:
        if fpr is not None:
            return millibits_for_fpr(check_fpr(fpr))
        bpk = check_bits_per_key(40.0 if bits_per_key is None else bits_per_key, high=4000.0, family=cls.family)
        return max(4000, int(bpk * 1000.0 + 0.5))

    @staticmethod
    def _probes_for(millibits: int) -> int:
        return fm.counting_num_probes(millibits / 1000.0)

    # kernels
    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None:
        K.add_hashes(self._buf, np.uint64(self._lines), self._k, hashes)

    def _add_parallel(self, batch, threads: int, atomic: bool) -> None:
        """Private copies merged by saturating addition (see the module docstring); a filter too
        big for ``threads`` copies is hashed on ``threads`` threads and filled by one."""
        if threads * self.size_bytes <= parallel.PRIVATE_COPY_LIMIT:
            super()._add_parallel(batch, threads, False)
        else:
            self._add_hashes(parallel.hash_parallel(batch, threads), False)

    def _probe(self, hashes: np.ndarray, out: np.ndarray) -> bool:
        return bool(K.query_hashes(self._buf, np.uint64(self._lines), self._k, hashes, out, self._seq))

    def _remove_hashes(self, hashes: np.ndarray) -> int:
        return int(K.remove_hashes(self._buf, np.uint64(self._lines), self._k, hashes, self._seq))

    has_probe_kernel = True

    @property
    def kernel_args(self) -> tuple:
        """``(counters, num_lines, k)`` for :func:`_counting_kernels.check_hash` in engine kernels
        (a filter no ``remove`` changes meanwhile)."""
        return self._buf, np.uint64(self._lines), self._k

    def _union_into(self, payload: np.ndarray, atomic: bool) -> None:
        """Add another filter's counters into ours, saturating at 15 (counters only rise)."""
        K.add_counters(self._buf, payload)

    # facts
    @property
    def num_counters(self) -> int:
        return self._lines * 128

    @property
    def num_bits(self) -> int:
        """Bits of counter memory (4 per counter)."""
        return self._lines * 512

    def fill_ratio(self) -> float:
        """Fraction of counters that are non-zero (= the fill ratio of :meth:`to_bloom`)."""
        return int(self._counter_stats()[0]) / self.num_counters

    def saturated_counters(self) -> int:
        """Counters stuck at 15 (never decremented again). Cost: one pass over the counters."""
        return int(self._counter_stats()[1])

    def _counter_stats(self) -> tuple[int, int]:
        self._check_source()
        return K.counter_stats(self._buf)

    def stats(self) -> dict[str, Any]:
        nonzero, saturated = self._counter_stats()
        s = super().stats()
        s.update(num_counters=self.num_counters, nonzero_counters=int(nonzero),
                 saturated_counters=int(saturated))
        return s

    def _fill_shape(self) -> tuple[int, int, int]:
        """Counters: a line of 128, k incremented per key (fill = share of non-zero counters)."""
        return self._lines, 128, self._k

    def fpr_at(self, n: int) -> float:
        """Line-blocked FP at ``n`` keys' counters per key, combined with 64-bit hash collisions
        (``estimated_fpr`` at the keys held)."""
        return fm.independent_fpr(fm.counting_fpr(self.num_bits / n, self._k), fm.fingerprint_fpr(n, 64))

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """FP at ``bits_per_key`` bits of counter memory per key: blocked at bits/4, 128-counter lines."""
        if num_probes is None:
            num_probes = fm.counting_num_probes(bits_per_key)
        return fm.counting_fpr(bits_per_key, num_probes)

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """``counting:4b`` for each b: the counters per key of ``blocked:b`` (4x its memory)."""
        return [f"{cls.family}:{4 * b:g}" for b in bits_per_key_values]

    def to_bloom(self):
        """The equivalent read-only ``blocked`` filter: same lines and k, bit set where counter > 0.

        Answers exactly like this filter (bit ``b`` of a line <-> counter ``b >> 2``), is the same
        size, and compresses well (each nibble is 0 or 0xF). Cost: one pass over the counters.
        """
        from .blocked import BlockedBloom

        counters, count = self._snapshot()
        bits = fmt.aligned_empty(counters.nbytes)
        K.to_blocked_bits(counters, bits)
        f = BlockedBloom._from_parts(self._params(), bits, count)
        f._readonly = True  # (a read-only numpy array would cost the kernels a second compilation)
        return f
