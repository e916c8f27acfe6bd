"""numba kernels of range scans (:mod:`bloomdb.lsm.scan`): cutting sorted chunks at a key, and
merging sorted runs while picking the visible version of every key. Packed entries: user key ``i`` is
``kdata[koff[i]:koff[i+1]]``, trailer ``seq << 8 | type`` (1 value, 0 deletion)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import copy_bytes
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


@njit(cache=True, nogil=True)
def merge_gather(kds, kos, trs, vds, vos, snap, reverse, values):
    """:func:`merge_visible` over runs given as tuples of packed arrays (run ``r``: keys
    ``kds[r]``/``kos[r]``, trailers ``trs[r]``, values ``vds[r]``/``vos[r]``; each ascending by
    key, offsets from 0), writing the visible entries' keys (and values, with ``values``) in scan
    order straight into new packed arrays: ``(kdata, koff, vdata, voff, m)`` -- ``m`` entries, the
    offset arrays hold ``m + 1`` valid words. The runs' keys and trailers are laid side by side
    first (small; the merge then reads flat arrays), values are copied once, from their run to
    the output: no concatenation of values, no index list for Python to pick by.
    Cost: O(entries * runs) word comparisons plus one copy of each key and visible value."""
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
    for j in range(m):
        e = sel[j]
        a = koff[e]
        ln = koff[e + 1] - a
        copy_bytes(okd, kp, kdata, a, ln)
        kp += ln
        oko[j + 1] = kp
        if values:
            while e < run_starts[r]:  # the entry's run (runs are searched from the last one used)
                r -= 1
            while e >= run_starts[r + 1]:
                r += 1
            vo = vos[ids[r]]
            i = e - run_starts[r]
            a = vo[i]
            ln = vo[i + 1] - a
            copy_bytes(ovd, vp, vds[ids[r]], a, ln)
            vp += ln
            ovo[j + 1] = vp
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
