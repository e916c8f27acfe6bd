"""numba kernel of a batch of point lookups (``multi_get``) whose filter loads overlap.

:func:`._get_kernels.lookup_many` runs one key's whole lookup before the next key's: each
candidate table's filter line is a cache miss (filters of a 1M-key store are megabytes), and the
probe loop's dependent branches keep the CPU from reaching the next key's load, so the misses
are paid one after the other. :func:`lookup_batch` splits a chunk of keys into passes instead:

1. per key: its XXH3 hash, its candidate tables (L0 newest first, then the one table per level
   whose key range holds it: the same choice as :func:`._probe_kernels._probe`), and for each
   candidate whose slot holds a loaded ``blocked`` filter the address of the filter line, which
   is prefetched at once (:func:`bloomdb._intrinsics.prefetch`); a key meeting any other kind of
   slot (no filter, lazy, partitioned, another family) is marked for the full lookup;
2. per (key, table) pair: the filter check, by now mostly from cache; a "may contain" marks the
   key for the full lookup;
3. a key every candidate filter rejected is ``MISSING`` (counted as the probe counts it: one
   lookup, its checks, all useful); every other key runs :func:`._get_kernels._lookup` from slot
   0 as ``lookup_many`` does (which counts itself: pass 2's checks of such a key are not counted).

The answers are exactly :func:`._get_kernels.lookup_many`'s: a key is declared missing here only
when every table that could hold it has a filter that says "definitely not". Cost per missing
key: one hash, the level searches over the in-memory bounds, and its filter lines' misses
overlapped with those of the other keys of its chunk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._intrinsics import prefetch, u8_view
from ...filters._blocked_kernels import check_bits, line_word
from ...hashing._kernels import xxh3_64_bytes
from ..sstable._block_kernels import _first_not_below, key_words
from ._get_kernels import MISSING, _lookup
from ._probe_kernels import _in_range
from .layout import (
    C_CHECKS, C_LOOKUPS, C_USEFUL, F_BLOCKED, F_MAPPED, FILTER, LEVEL_COUNT, LEVEL_FIRST, N_L0, NUM_LEVELS, R_FAM,
    R_OFF, R_P0, S_KIND, S_MAX_W, S_REC, SLOTS, STRIDE,
)

CHUNK = 256  #: keys whose filter lines are in flight together (256 keys x ~2 lines: 32 KB)


@njit(cache=True, nogil=True, inline="always")
def _pair(meta, u64, base, h, pairs_w, pairs_g, pairs_k, p):
    """Record the filter line of hash ``h`` in the slot at ``base`` as pair ``p`` (the line's
    address: the directory's records point at each filter in place, :data:`.layout.F_MAPPED`)
    and prefetch it; False when the slot holds no loaded ``blocked`` filter (the key needs the
    full lookup)."""
    rec = base + S_REC
    if meta[base + S_KIND] != FILTER or meta[rec + R_FAM] != F_BLOCKED + F_MAPPED:
        return False
    a = meta[rec + R_OFF] + 4 * np.int64(line_word(h, u64[rec + R_P0]))
    pairs_w[p] = a
    pairs_g[p] = h >> np.uint64(32)
    pairs_k[p] = meta[rec + R_P0 + 1]
    prefetch(u8_view(a, 64), 0)
    return True


@njit(cache=True, nogil=True)
def _stage(meta, u64, bounds, data, offsets, i, h, pairs_w, pairs_g, pairs_k, p):
    """Pass 1 for key ``i``: its candidate tables' filter lines as pairs from ``p`` on (prefetched).
    Returns the next free pair, or -1 when the key needs the full lookup."""
    a = offsets[i]
    n = offsets[i + 1] - a
    k0, k1 = key_words(data, a, n)
    for s in range(meta[N_L0]):
        base = SLOTS + s * STRIDE
        if _in_range(meta, u64, bounds, base, data, a, n, k0, k1):
            if not _pair(meta, u64, base, h, pairs_w, pairs_g, pairs_k, p):
                return -1
            p += 1
    for j in range(meta[NUM_LEVELS]):
        s0 = meta[LEVEL_FIRST + 2 * j]
        c = meta[LEVEL_COUNT + 2 * j]
        if c == 0:
            continue
        cand = _first_not_below(meta, u64, bounds, data, a, n, k0, k1, SLOTS + s0 * STRIDE + S_MAX_W, STRIDE, c)
        if cand >= c:
            continue
        base = SLOTS + (s0 + cand) * STRIDE
        if _in_range(meta, u64, bounds, base, data, a, n, k0, k1):
            if not _pair(meta, u64, base, h, pairs_w, pairs_g, pairs_k, p):
                return -1
            p += 1
    return p


@njit(cache=True, nogil=True)
def lookup_batch(directory, data, offsets, snap, out):
    """:func:`._get_kernels.lookup_many` of the keys ``data[offsets[i]:offsets[i+1]]`` from slot
    0 (no seek charges), filter loads overlapped (see the module docstring). ``out``: int64
    ``(4, n)``, rows status, slot, value offset, value length. Returns the number of keys whose
    status is not ``MISSING``."""
    meta = directory
    u64 = directory.view(np.uint64)
    w32 = directory.view(np.uint32)
    u16 = directory.view(np.uint16)
    bounds = directory.view(np.uint8)
    m = offsets.shape[0] - 1
    per = meta[N_L0] + meta[NUM_LEVELS]
    cap = CHUNK * per
    pairs_w = np.empty(cap, np.int64)
    pairs_g = np.empty(cap, np.uint64)
    pairs_k = np.empty(cap, np.int64)
    first = np.empty(CHUNK + 1, np.int64)
    hashes = np.empty(CHUNK, np.uint64)
    found = 0
    for c0 in range(0, m, CHUNK):
        c1 = min(m, c0 + CHUNK)
        p = 0
        for i in range(c0, c1):
            a = offsets[i]
            h = xxh3_64_bytes(data, a, offsets[i + 1] - a)
            hashes[i - c0] = h
            first[i - c0] = p
            q = _stage(meta, u64, bounds, data, offsets, i, h, pairs_w, pairs_g, pairs_k, p)
            if q < 0:
                first[i - c0] = -1 - p  # full lookup; its pairs are dropped
            else:
                p = q
        first[c1 - c0] = p
        for i in range(c0, c1):
            f = first[i - c0]
            if f < 0:
                continue
            e = first[i - c0 + 1]  # where the next key's pairs start (kept or dropped)
            if e < 0:
                e = -1 - e
            ok = False
            for t in range(f, e):
                ok |= check_bits(u8_view(pairs_w[t], 64).view(np.uint32), 0, pairs_g[t], pairs_k[t])
            if ok:
                first[i - c0] = -1 - f
            else:
                meta[C_LOOKUPS] += 1
                meta[C_CHECKS] += e - f
                meta[C_USEFUL] += e - f
                out[0, i] = MISSING
                out[1, i] = -1
                out[2, i] = 0
                out[3, i] = 0
        for i in range(c0, c1):
            if first[i - c0] >= 0:
                continue
            a = offsets[i]
            n = offsets[i + 1] - a
            st, s, vo, vl = _lookup(directory, u64, w32, u16, bounds, hashes[i - c0], data, a, n,
                                    data[a : a + n], snap, 0, False)
            out[0, i] = st
            out[1, i] = s
            out[2, i] = vo
            out[3, i] = vl
            found += st != MISSING
    return found
