"""numba kernels of compaction: the k-way merge of sorted runs (dropping versions no snapshot
sees) and the split of the merged run into output tables. Pure: arrays in, arrays out.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..sstable._block_kernels import _cmp


@njit(cache=True, nogil=True)
def _before(kdata, koff, trailers, i, j):
    """Entry ``i`` sorts before entry ``j``: smaller user key, or same key and newer sequence."""
    c = _cmp(kdata, koff[i], koff[i + 1] - koff[i], kdata, koff[j], koff[j + 1] - koff[j])
    if c != 0:
        return c < 0
    return (trailers[i] >> np.uint64(8)) > (trailers[j] >> np.uint64(8))


@njit(cache=True, nogil=True)
def merge_runs(kdata, koff, trailers, run_starts, smallest_snapshot, bottom):
    """k-way merge of sorted runs (entries ``run_starts[r]..run_starts[r+1]``) with the
    compaction drop rules; returns the indexes of the kept entries in merged order.

    A version is dropped when a newer version of its key has sequence ``<= smallest_snapshot``;
    a deletion with sequence ``<= smallest_snapshot`` is dropped when ``bottom``.
    Cost: O(n * runs) key comparisons (runs are few).
    """
    nruns = run_starts.shape[0] - 1
    heads = run_starts[:-1].copy()
    n = run_starts[nruns]
    out = np.empty(n, np.int64)
    m = 0
    last = -1
    last_seq = np.uint64(0)
    have_last = False
    snap = np.uint64(smallest_snapshot)
    while True:
        best = -1
        for r in range(nruns):
            if heads[r] < run_starts[r + 1]:
                if best < 0 or _before(kdata, koff, trailers, heads[r], heads[best]):
                    best = r
        if best < 0:
            break
        i = heads[best]
        heads[best] += 1
        same = have_last and _cmp(kdata, koff[i], koff[i + 1] - koff[i], kdata, koff[last], koff[last + 1] - koff[last]) == 0
        if not same:
            have_last = False
        seq = trailers[i] >> np.uint64(8)
        drop = have_last and last_seq <= snap
        if not drop and bottom and (trailers[i] & np.uint64(0xFF)) == np.uint64(0) and seq <= snap:
            drop = True
        have_last = True
        last_seq = seq
        last = i
        if not drop:
            out[m] = i
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def split_points(kdata, koff, voff, table_bytes):
    """End indexes of output tables of about ``table_bytes``, never between versions of a key."""
    n = koff.shape[0] - 1
    ends = np.empty(n + 1, np.int64)
    m = 0
    size = 0
    for i in range(n):
        size += (koff[i + 1] - koff[i]) + (voff[i + 1] - voff[i]) + 12
        if size >= table_bytes and i + 1 < n:
            if _cmp(kdata, koff[i], koff[i + 1] - koff[i], kdata, koff[i + 1], koff[i + 2] - koff[i + 1]) != 0:
                ends[m] = i + 1
                m += 1
                size = 0
    if n > 0:
        ends[m] = n
        m += 1
    return ends[:m]


@njit(cache=True, nogil=True)
def not_covered(kdata, koff, trailers, idx, bdata, boff, fseq):
    """For the entries ``idx``: False where a range tombstone hides the entry. The tombstones
    come as non-overlapping fragments: sorted bound keys ``0..m`` (packed ``bdata/boff``),
    fragment ``j`` = ``[bound j, bound j + 1)`` hiding entries with a sequence below ``fseq[j]``
    (0: none). Cost: one binary search over the bounds per entry."""
    n = idx.shape[0]
    m = fseq.shape[0]
    keep = np.ones(n, np.bool_)
    for x in range(n):
        i = idx[x]
        a = koff[i]
        la = koff[i + 1] - a
        lo = 0
        hi = m + 1
        while lo < hi:  # bounds <= key
            mid = (lo + hi) >> 1
            if _cmp(bdata, boff[mid], boff[mid + 1] - boff[mid], kdata, a, la) <= 0:
                lo = mid + 1
            else:
                hi = mid
        j = lo - 1
        if 0 <= j < m and (trailers[i] >> np.uint64(8)) < fseq[j]:
            keep[x] = False
    return keep
