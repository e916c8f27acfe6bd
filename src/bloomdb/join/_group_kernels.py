"""Kernels of the dense group-by path (:mod:`.groupby`): fold values into per-group accumulators.

Each kernel walks result rows ``j``: the row's group is ``codes[j]``, its value
``values[index[j]]`` (``index`` used when ``use_index``, else ``values[j]``); an index of ``-1``
(no build row) or a cleared ``valid`` bit (indexed like ``values``) is a null and is skipped.
Accumulators are updated in place, so the caller can fold several chunks into one set.
"""

from __future__ import annotations

import numpy as np
from numba import njit


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
