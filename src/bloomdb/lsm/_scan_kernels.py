"""numba kernels of range scans (:mod:`bloomdb.lsm.scan`): cutting sorted chunks at a key, and
merging sorted runs while picking the visible version of every key. Packed entries: user key ``i`` is
``kdata[koff[i]:koff[i+1]]``, trailer ``seq << 8 | type`` (1 value, 0 deletion)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .sstable._table_kernels import _prefix_words, cmp_tail


@njit(cache=True, nogil=True)
def count_below(kdata, koff, key, inclusive):
    """How many of the sorted keys are ``< key`` (``<= key`` with ``inclusive``): binary search."""
    lo = 0
    hi = koff.shape[0] - 1
    klen = key.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        a = koff[mid]
        la = koff[mid + 1] - a
        c = 0
        for t in range(min(la, klen)):
            x = kdata[a + t]
            y = key[t]
            if x != y:
                c = -1 if x < y else 1
                break
        if c == 0 and la != klen:
            c = -1 if la < klen else 1
        if c < 0 or (inclusive and c == 0):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def merge_visible(kdata, koff, trailers, run_starts, snap, reverse):
    """k-way merge of sorted runs (entries ``run_starts[r]..run_starts[r+1]``, each ascending by
    key) picking, per key, the version visible at ``snap`` (largest sequence ``<= snap``; a
    deletion hides the key). Returns the chosen entry indexes in scan order (descending keys
    with ``reverse``). Keys are compared by 16-byte big-endian prefix words first (the full
    bytes only on ties), written out in the loop: a helper taking arrays costs more than the
    comparison. Cost: O(n * runs) word comparisons."""
    n = trailers.shape[0]
    nruns = run_starts.shape[0] - 1
    p0 = _prefix_words(kdata, koff, 0)
    p1 = _prefix_words(kdata, koff, 8)
    heads = np.empty(nruns, np.int64)
    for r in range(nruns):
        heads[r] = run_starts[r + 1] - 1 if reverse else run_starts[r]
    out = np.empty(n, np.int64)
    m = 0
    s = np.uint64(snap)
    while True:
        best = -1
        for r in range(nruns):
            h = heads[r]
            if (h < run_starts[r]) if reverse else (h >= run_starts[r + 1]):
                continue
            if best < 0:
                best = h
                continue
            if p0[h] != p0[best]:
                c = -1 if p0[h] < p0[best] else 1
            elif p1[h] != p1[best]:
                c = -1 if p1[h] < p1[best] else 1
            else:
                c = cmp_tail(kdata, koff, h, best)
            if (c > 0) if reverse else (c < 0):
                best = h
        if best < 0:
            break
        # every run's versions of this key (adjacent in each run): keep the visible one
        vis = -1
        vis_seq = np.uint64(0)
        for r in range(nruns):
            while True:
                h = heads[r]
                if (h < run_starts[r]) if reverse else (h >= run_starts[r + 1]):
                    break
                if h != best and (p0[h] != p0[best] or p1[h] != p1[best] or cmp_tail(kdata, koff, h, best) != 0):
                    break
                q = trailers[h] >> np.uint64(8)
                if q <= s and (vis < 0 or q > vis_seq):
                    vis = h
                    vis_seq = q
                heads[r] = h - 1 if reverse else h + 1
        if vis >= 0 and (trailers[vis] & np.uint64(0xFF)) == np.uint64(1):
            out[m] = vis
            m += 1
    return out[:m]
