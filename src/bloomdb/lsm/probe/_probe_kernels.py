"""numba kernels of the probe layer: every table's key range and filter checked for one key in
one call, over the directory array laid out by :mod:`.layout` (see there) and built by
:mod:`.directory`. A ``blocked`` v1 filter is checked by that family's own kernel
(:mod:`bloomdb.filters._blocked_kernels`); the store never re-implements a filter's layout.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...filters._blocked_kernels import check_bits, line_word
from ...hashing._kernels import xxh3_64_bytes
from ..sstable._block_kernels import _first_not_below, _tail_cmp, _wcmp, key_words
from .layout import (
    C_CHECKS, C_POSITIVE, C_USEFUL, LAZY, LEVEL_COUNT, LEVEL_FIRST, N_L0, NONE, NUM_LEVELS, OTHER,
    P_DAMAGED, P_K, P_LINES, P_LOADED, P_STATE, P_WOFF, PARTITIONED, PSTRIDE, S_K, S_KIND, S_LINES, S_MAX_LEN,
    S_MAX_OFF, S_MAX_W, S_MIN_LEN, S_MIN_OFF, S_MIN_W, S_WOFF, SLOTS, STRIDE,
)


@njit(cache=True, nogil=True)
def _probe(meta, u64, words, bounds, h, key, kstart, klen, start):
    """The probe loop. A ``blocked`` v1 filter is checked by that family's own kernel
    (:func:`bloomdb.filters._blocked_kernels.check_bits` on its words inside this array, numba
    inlines it); the bound searches share :func:`_first_not_below` (measured: no slower than
    inline at 1M keys).

    Key comparisons go by the two big-endian prefix words first (``k0``, ``k1`` of the key
    against the words stored per bound): one or two integer compares instead of a byte loop."""
    n0 = meta[N_L0]
    nlev = meta[NUM_LEVELS]
    g0 = h >> np.uint64(32)
    k0, k1 = key_words(key, kstart, klen)
    # slot order: L0 slots newest first, then for each level the one table whose range may hold key
    j = -1  # -1: L0, else level index
    s = start
    while True:
        if j < 0:
            if s >= n0:
                j = 0
                continue
            cand = s
            s += 1
        else:
            if j >= nlev:
                return -1
            s0 = meta[LEVEL_FIRST + 2 * j]
            c = meta[LEVEL_COUNT + 2 * j]
            j += 1
            if c == 0 or s0 + c <= start:
                continue
            # first table whose max key >= key
            cand = s0 + _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, SLOTS + s0 * STRIDE + S_MAX_W, STRIDE, c)
            if cand < start or cand >= s0 + c:
                continue
        base = SLOTS + cand * STRIDE
        # key >= min key ?
        r = -_wcmp(u64[base + S_MIN_W], u64[base + S_MIN_W + 1], k0, k1)
        if r == -2:
            r = _tail_cmp(key, kstart, klen, bounds, meta[base + S_MIN_OFF], meta[base + S_MIN_LEN])
        if r < 0:
            continue
        # key <= max key ?
        r = -_wcmp(u64[base + S_MAX_W], u64[base + S_MAX_W + 1], k0, k1)
        if r == -2:
            r = _tail_cmp(key, kstart, klen, bounds, meta[base + S_MAX_OFF], meta[base + S_MAX_LEN])
        if r > 0:
            continue
        kind = meta[base + S_KIND]
        if kind == NONE:
            return cand  # no usable filter (none, or damaged: fail open)
        if kind == OTHER or kind == LAZY:
            return -cand - 2  # Python asks (another family) or loads the filter first
        if kind == PARTITIONED:
            pt = meta[base + S_WOFF]
            # first partition whose last key >= key
            lo = _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, pt, PSTRIDE, meta[base + S_LINES])
            if lo == meta[base + S_LINES]:  # beyond the last partition: not here
                meta[C_CHECKS] += 1
                meta[C_USEFUL] += 1
                continue
            e = pt + lo * PSTRIDE
            st = meta[e + P_STATE]
            if st == P_DAMAGED:
                return cand
            if st != P_LOADED:
                return -cand - 2
            woff = meta[e + P_WOFF]
            nlines = meta[e + P_LINES]
            k = meta[e + P_K]
        else:
            woff = meta[base + S_WOFF]
            nlines = meta[base + S_LINES]
            k = meta[base + S_K]
        meta[C_CHECKS] += 1
        # the blocked family's own kernel, on its words at 32-bit index woff of this array
        if check_bits(words, line_word(h, np.uint64(nlines)) + np.uint64(woff), g0, k):
            meta[C_POSITIVE] += 1
            return cand
        meta[C_USEFUL] += 1


@njit(cache=True, nogil=True)
def probe(directory, key, start):
    """First slot ``>= start`` that may hold ``key`` (range and filter), ``-1`` when none, or
    ``-slot - 2`` when Python must decide for ``slot`` (a filter to load, or of another family:
    :meth:`directory.Directory.check`). One hash per call.

    ``directory`` is the whole probe structure in one int64 array (fewer arguments: numba's
    dispatch costs ~0.1 us per array argument): the ``meta`` words, then the filters' 32-bit
    words from 32-bit index ``directory[W32_BASE]``, then the key bounds from byte
    ``directory[BYTE_BASE]``; the offsets stored in ``meta`` are already absolute.
    """
    n = len(key)
    return _probe(directory, directory.view(np.uint64), directory.view(np.uint32), directory.view(np.uint8),
                  xxh3_64_bytes(key, 0, n), key, 0, n, start)


@njit(cache=True, nogil=True)
def probe_many(directory, data, offsets, out):
    """``out[i]`` = :func:`probe` of key ``i`` (Arrow layout) from slot 0."""
    u64 = directory.view(np.uint64)
    words = directory.view(np.uint32)
    bounds = directory.view(np.uint8)
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        n = offsets[i + 1] - s
        out[i] = _probe(directory, u64, words, bounds, xxh3_64_bytes(data, s, n), data, s, n, 0)
