"""numba kernels of range scans (:mod:`bloomdb.lsm.scan`): cutting sorted chunks at a key, and
merging sorted runs while picking the visible version of every key. Packed entries: user key ``i`` is
``kdata[koff[i]:koff[i+1]]``, trailer ``seq << 8 | type`` (1 value, 0 deletion)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import copy_bytes, load_be64
from .sstable._block_kernels import key_words
from .sstable._table_kernels import cmp_tail


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
def prefix_words(kdata, koff):
    """Per entry, key bytes 0..8 and 8..16 as big-endian uint64 words (zero-padded): ordering by
    these words, then by the bytes past 16 (:func:`.sstable._table_kernels.cmp_tail`), is
    bytewise order. Cost: two loads per key of 16 bytes or more, a byte loop for shorter ones."""
    n = koff.shape[0] - 1
    p0 = np.empty(n, np.uint64)
    p1 = np.empty(n, np.uint64)
    for i in range(n):
        a = koff[i]
        ln = koff[i + 1] - a
        if ln >= 16:
            p0[i] = load_be64(kdata, a)
            p1[i] = load_be64(kdata, a + 8)
        else:
            w0, w1 = key_words(kdata, a, ln)
            p0[i] = w0
            p1[i] = w1
    return p0, p1


@njit(cache=True, nogil=True)
def _first_not_below(kdata, koff, p0, p1, lo, hi, y):
    """The first entry of ``lo..hi`` (ascending) whose key is ``>= key(y)`` (``hi``: none):
    galloping from ``lo`` (1, 2, 4, ... entries), then a binary search. Cost: ``O(log d)``
    comparisons for an answer ``d`` entries past ``lo``."""
    step = 1
    w0 = p0[y]
    w1 = p1[y]
    while lo < hi:
        p = min(lo + step - 1, hi - 1)
        if p0[p] < w0 or (p0[p] == w0 and (p1[p] < w1 or (p1[p] == w1 and cmp_tail(kdata, koff, p, y) < 0))):
            lo = p + 1
            step *= 2
        else:
            hi = p
            break
    while lo < hi:
        mid = (lo + hi) >> 1
        if p0[mid] < w0 or (p0[mid] == w0 and (p1[mid] < w1 or (p1[mid] == w1 and cmp_tail(kdata, koff, mid, y) < 0))):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def merge_visible(kdata, koff, trailers, run_starts, snap, reverse):
    """k-way merge of sorted runs (entries ``run_starts[r]..run_starts[r+1]``, each ascending by
    key) picking, per key, the version visible at ``snap`` (largest sequence ``<= snap``; a
    deletion hides the key). Returns the chosen entry indexes in scan order (descending keys
    with ``reverse``: the ascending answer reversed -- which version is visible does not depend
    on the direction).

    The merge goes by *stretches*: the run with the smallest head key keeps the lead up to the
    first of its keys ``>=`` the second-smallest head (the next entry compared first, then
    galloping), and inside a stretch an entry costs a trailer test and a comparison with its
    neighbour (its key's other versions in that run are adjacent); only a key present in
    several runs is resolved across runs. Keys are compared by 16-byte big-endian prefix words
    (:func:`prefix_words`), the full bytes only on ties, written out in the loops: a helper
    taking arrays costs an atomic incref/decref pair per array, more than the comparison.
    Cost: O(n) for a round where one run leads for long stretches (a level and a sparse
    memtable); O(n * runs) word comparisons when the runs interleave entry by entry."""
    n = trailers.shape[0]
    nruns = run_starts.shape[0] - 1
    p0, p1 = prefix_words(kdata, koff)
    heads = np.empty(nruns, np.int64)
    for r in range(nruns):
        heads[r] = run_starts[r]
    out = np.empty(n, np.int64)
    m = 0
    s = np.uint64(snap)
    while True:
        best = -1  # the smallest head, its run, and the second-smallest head
        br = -1
        second = -1
        for r in range(nruns):
            h = heads[r]
            if h >= run_starts[r + 1]:
                continue
            if best < 0:
                best = h
                br = r
                continue
            if p0[h] != p0[best]:
                c = -1 if p0[h] < p0[best] else 1
            elif p1[h] != p1[best]:
                c = -1 if p1[h] < p1[best] else 1
            else:
                c = cmp_tail(kdata, koff, h, best)
            if c < 0:
                second = best
                best = h
                br = r
            elif second < 0:
                second = h
            elif p0[h] < p0[second] or (p0[h] == p0[second] and (p1[h] < p1[second] or (
                    p1[h] == p1[second] and cmp_tail(kdata, koff, h, second) < 0))):
                second = h
        if best < 0:
            break
        if second >= 0 and p0[best] == p0[second] and p1[best] == p1[second] and cmp_tail(kdata, koff, best, second) == 0:
            # a key in several runs: every run's versions of it (adjacent in each run)
            vis = -1
            vis_seq = np.uint64(0)
            for r in range(nruns):
                while True:
                    h = heads[r]
                    if h >= run_starts[r + 1]:
                        break
                    if h != best and (p0[h] != p0[best] or p1[h] != p1[best] or cmp_tail(kdata, koff, h, best) != 0):
                        break
                    q = trailers[h] >> np.uint64(8)
                    if q <= s and (vis < 0 or q > vis_seq):
                        vis = h
                        vis_seq = q
                    heads[r] = h + 1
            if vis >= 0 and (trailers[vis] & np.uint64(0xFF)) == np.uint64(1):
                out[m] = vis
                m += 1
            continue
        # a stretch of run br: its keys below every other run's head
        end = run_starts[br + 1]
        if second < 0:
            stop = end
        else:
            stop = best + 1  # runs that interleave closely end the stretch here: no search
            w0 = p0[second]
            w1 = p1[second]
            if stop < end and (p0[stop] < w0 or (p0[stop] == w0 and (p1[stop] < w1 or (
                    p1[stop] == w1 and cmp_tail(kdata, koff, stop, second) < 0)))):
                stop = _first_not_below(kdata, koff, p0, p1, stop + 1, end, second)
        e = best
        while e < stop:
            vis = -1
            vis_seq = np.uint64(0)
            g = e
            while True:  # the versions of key(e): adjacent, all before stop
                q = trailers[g] >> np.uint64(8)
                if q <= s and (vis < 0 or q > vis_seq):
                    vis = g
                    vis_seq = q
                g += 1
                if g >= stop or p0[g] != p0[e] or p1[g] != p1[e] or cmp_tail(kdata, koff, g, e) != 0:
                    break
            if vis >= 0 and (trailers[vis] & np.uint64(0xFF)) == np.uint64(1):
                out[m] = vis
                m += 1
            e = g
        heads[br] = stop
    if reverse:
        return out[:m][::-1].copy()
    return out[:m]


@njit(cache=True, nogil=True)
def merge_gather(kds, kos, trs, vds, vos, snap, reverse, values):
    """:func:`merge_visible` over runs given as tuples of packed arrays (run ``r``: keys
    ``kds[r]``/``kos[r]``, trailers ``trs[r]``, values ``vds[r]``/``vos[r]``; each ascending by
    key, offsets from 0), writing the visible entries' keys (and values, with ``values``) in scan
    order straight into new packed arrays: ``(kdata, koff, vdata, voff, m)`` -- ``m`` entries, the
    offset arrays hold ``m + 1`` valid words. The runs' keys and trailers are laid side by side
    first (small; the merge then reads flat arrays), values are copied once, from their run to
    the output: no concatenation of values, no index list for Python to pick by. Forward, the
    picked entries that follow each other in one run are copied as one stretch (one ``memmove``
    of their keys and one of their values).
    Cost: :func:`merge_visible`'s plus one copy of each key and visible value."""
    # the non-empty runs only (the caller pads the tuples with empty runs; the merge's cost
    # grows with the number of runs)
    ids = np.empty(len(kds), np.int64)
    nr = 0
    for r in range(len(kds)):
        if trs[r].shape[0]:
            ids[nr] = r
            nr += 1
    run_starts = np.zeros(nr + 1, np.int64)
    kb = 0
    vb = 0
    for r in range(nr):
        run_starts[r + 1] = run_starts[r] + trs[ids[r]].shape[0]
        kb += kds[ids[r]].shape[0]
        vb += vds[ids[r]].shape[0]
    n = run_starts[nr]
    kdata = np.empty(kb, np.uint8)
    koff = np.empty(n + 1, np.int64)
    trailers = np.empty(n, np.uint64)
    koff[0] = 0
    for r in range(nr):
        kd = kds[ids[r]]
        ko = kos[ids[r]]
        tr = trs[ids[r]]
        a = run_starts[r]
        base = koff[a]
        copy_bytes(kdata, base, kd, 0, kd.shape[0])
        for i in range(tr.shape[0]):
            koff[a + i + 1] = base + ko[i + 1]
            trailers[a + i] = tr[i]
    sel = merge_visible(kdata, koff, trailers, run_starts, snap, reverse)
    m = sel.shape[0]
    okd = np.empty(kb, np.uint8)
    oko = np.empty(m + 1, np.int64)
    ovd = np.empty(vb if values else 0, np.uint8)
    ovo = np.zeros(m + 1 if values else 1, np.int64)
    oko[0] = 0
    kp = 0
    vp = 0
    r = 0
    j = 0
    while j < m:
        e = sel[j]
        while e < run_starts[r]:  # the entry's run (runs are searched from the last one used)
            r -= 1
        while e >= run_starts[r + 1]:
            r += 1
        k = j + 1  # forward: entries j..k-1 are consecutive entries e.. of run r: one copy each
        if not reverse:
            while k < m and sel[k] == sel[k - 1] + 1 and sel[k] < run_starts[r + 1]:
                k += 1
        a = koff[e]
        ln = koff[e + k - j] - a
        copy_bytes(okd, kp, kdata, a, ln)
        for t in range(1, k - j + 1):
            oko[j + t] = kp + koff[e + t] - a
        kp += ln
        if values:
            vo = vos[ids[r]]
            i = e - run_starts[r]
            a = vo[i]
            ln = vo[i + k - j] - a
            copy_bytes(ovd, vp, vds[ids[r]], a, ln)
            for t in range(1, k - j + 1):
                ovo[j + t] = vp + vo[i + t] - a
            vp += ln
        j = k
    return okd, oko, ovd, ovo, m


@njit(cache=True, nogil=True)
def all_visible(kdata, koff, trailers, snap):
    """True when one ascending run is its own scan output at ``snap``: every entry a value (type
    1) with sequence ``<= snap`` and no key twice (no older version to drop). Then the merge and
    the gather have nothing to do (a round with one source: a store of one level). Cost: one
    trailer test and one key comparison with the previous key per entry."""
    s = np.uint64(snap)
    for i in range(trailers.shape[0]):
        t = trailers[i]
        if (t & np.uint64(0xFF)) != np.uint64(1) or (t >> np.uint64(8)) > s:
            return False
        if i > 0:
            a = koff[i - 1]
            b = koff[i]
            ln = b - a
            if koff[i + 1] - b == ln:
                same = True
                for t2 in range(ln - 1, -1, -1):  # keys in order differ last, mostly
                    if kdata[a + t2] != kdata[b + t2]:
                        same = False
                        break
                if same:
                    return False
    return True
