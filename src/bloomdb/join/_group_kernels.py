"""Kernels of the dense group-by path (:mod:`.groupby`): fold values into per-group accumulators.

Each kernel walks result rows ``j``: the row's group is ``codes[j]``, its value
``values[index[j]]`` (``index`` used when ``use_index``, else ``values[j]``); an index of ``-1``
(no build row) or a cleared ``valid`` bit (indexed like ``values``) is a null and is skipped.
Accumulators are updated in place, so the caller can fold several chunks into one set.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import prefetch


@njit(cache=True, nogil=True)
def fold(codes, values, index, use_index, valid, use_valid, s, bound, cnt, fin, mn, mx, nan):
    """Per group: sum ``s`` (int64 wraps: exact while ``bound`` = Σ|v| stays below 2^62), count,
    count of non-NaN values ``fin``, min and max over the non-NaN values (``mn``/``mx`` start at
    the extremes of the type) and whether a NaN was seen. Compiled once for int64, once for float64."""
    for j in range(codes.shape[0]):
        i = index[j] if use_index else j
        if i < 0 or (use_valid and not valid[i]):
            continue
        g = codes[j]
        v = values[i]
        s[g] += v
        bound[g] += abs(np.float64(v))
        cnt[g] += 1
        if v != v:
            nan[g] = True
            continue
        fin[g] += 1
        if v < mn[g]:
            mn[g] = v
        if v > mx[g]:
            mx[g] = v


@njit(cache=True, nogil=True)
def result_codes(groups, code_count, null_code, codes, weights, rows):
    """Per result probe row ``j`` of key group ``g = groups[j]``: its group-by code and weight
    from ``code_count[g]`` = ``count << 32 | code`` (the key's build rows, which all share that
    code; one random read per row, prefetched ahead), or ``null_code`` and 1 where ``g < 0`` (no
    build row); ``rows[code] += weight``. Returns the result rows (Σ weights)."""
    total = 0
    n = groups.shape[0]
    for j in range(n):
        if j + 16 < n and groups[j + 16] >= 0:
            prefetch(code_count, groups[j + 16])
        g = groups[j]
        if g < 0:
            c = np.int64(null_code)
            w = np.int64(1)
        else:
            cc = code_count[g]
            c = cc & 0xFFFFFFFF
            w = cc >> 32
        codes[j] = c
        weights[j] = w
        rows[c] += w
        total += w
    return total


@njit(cache=True, nogil=True)
def fold_weighted(codes, weights, values, index, use_index, valid, use_valid, s, bound, cnt, fin, mn, mx, nan):
    """:func:`fold` where result row ``j`` stands for ``weights[j]`` equal rows (a probe row and
    the build rows of its key): sums, bounds and counts grow by the weight, min/max as once."""
    for j in range(codes.shape[0]):
        i = index[j] if use_index else j
        if use_valid and not valid[i]:
            continue
        g = codes[j]
        w = weights[j]
        v = values[i]
        s[g] += v * w
        bound[g] += abs(np.float64(v)) * np.float64(w)
        cnt[g] += w
        if v != v:
            nan[g] = True
            continue
        fin[g] += w
        if v < mn[g]:
            mn[g] = v
        if v > mx[g]:
            mx[g] = v
