"""numba kernel of a batch of point lookups (``multi_get``): every key's filters in one call, the
work laid out so that the CPU overlaps many keys at once.

:func:`._get_kernels.lookup_many` runs one key's whole lookup before the next key's: its bound
searches and filter checks are chains of dependent loads and branches, so one key's latencies
are paid one after the other. :func:`lookup_batch` takes the keys a chunk (:data:`CHUNK`) at a
time and runs each step for the whole chunk before the next step, so that the iterations of a
step are independent and the CPU runs many of them at once:

1. per key: its XXH3 hash and its two big-endian prefix words (:func:`key_words`);
2. per L0 slot (newest first), per key: the range check, and when it holds, the address of the
   key's line in the slot's filter, prefetched (:func:`bloomdb._intrinsics.prefetch`);
3. per level below L0: the binary search for the one table whose range may hold the key, in
   lockstep over the chunk (each round of the search is one pass over the chunk, branch-free on
   the prefix words; a tie on the prefix words runs the exact search
   :func:`..sstable._block_kernels._first_not_below`), then the table's min-key check and the line, as in 2;
4. per candidate (slot, key), oldest prefetch first: the family's own check of the line
   (:func:`bloomdb.filters._blocked_kernels.check_bits_inline`, inlined: a call per check cost
   more than the check);
5. a key every candidate filter rejected is ``MISSING`` (counted as the probe counts it: one
   lookup, its checks, all useful); every other key -- a filter said "may contain", or a
   candidate slot holds no loaded ``blocked`` filter (none, lazy, partitioned, another family)
   -- runs :func:`._get_kernels._lookup` from slot 0 as ``lookup_many`` does (which counts
   itself: the checks of step 4 of such a key are not counted).

With a store filter in the directory (:mod:`bloomdb.lsm.store_filter`), step 1 also checks
it per key: a key it rejects gets no candidate and is ``MISSING`` (counted as a lookup and a
store-filter negative).

The candidates are :func:`._probe_kernels._probe`'s (L0 slots whose range holds the key, then
per level the first table whose max key is ``>=`` the key if its min key is ``<=`` it), so the
answers are exactly :func:`._get_kernels.lookup_many`'s: a key is declared missing here only
when every table that could hold it has a filter that says "definitely not". Cost per missing
key (1M-key store, 2 L0 tables + 2 levels, loaded machine): ~60 ns of hashing, range checks
and searches, ~10 ns per filter check, plus the data block a false positive reads
(docs/benchmarks.md, "multi_get of missing keys, eleventh session").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._intrinsics import u32_view
from ...filters._blocked_kernels import check_bits_inline
from ...hashing._kernels import xxh3_64_bytes
from ..sstable._block_kernels import _first_not_below, key_words
from ._get_kernels import MISSING, _lookup
from ._probe_kernels import _check, below, blocked_line, max_ok, min_ok, sf_line
from .layout import C_CHECKS, C_LOOKUPS, C_SF_CHECKS, C_SF_NEG, C_USEFUL, R_FAM, SF, LEVEL_COUNT, LEVEL_FIRST, N_L0, NUM_LEVELS, S_MAX_W, SLOTS, STRIDE

CHUNK = 64  #: keys per step: their filter lines (~4 per key) stay in L1 between the prefetch and the check


@njit(cache=True, nogil=True)
def lookup_batch(directory, data, lens, snap, out):
    """:func:`._get_kernels.lookup_many` of the keys laid end to end in ``data``, key ``i``
    ``lens[i]`` bytes long (any integer dtype; ``data`` holds exactly their sum), from slot 0
    (no seek charges), in steps over chunks of keys (see the module docstring). ``out``: int64
    ``(4, n)``, rows status, slot, value offset, value length. Returns the number of keys whose
    status is not ``MISSING``."""
    m = lens.shape[0]
    offsets = np.empty(m + 1, np.int64)
    offsets[0] = 0
    for i in range(m):
        offsets[i + 1] = offsets[i] + np.int64(lens[i])
    meta = directory
    u64 = directory.view(np.uint64)
    w32 = directory.view(np.uint32)
    u16 = directory.view(np.uint16)
    bounds = directory.view(np.uint8)
    n0 = meta[N_L0]
    nlev = meta[NUM_LEVELS]
    lines = np.empty((n0 + nlev, CHUNK), np.int64)  # per step and key: its filter line (0: not a candidate)
    probes = np.empty((n0 + nlev, CHUNK), np.int64)  # and that filter's k
    hs = np.empty(CHUNK, np.uint64)
    kw0 = np.empty(CHUNK, np.uint64)
    kw1 = np.empty(CHUNK, np.uint64)
    lo = np.empty(CHUNK, np.int64)
    full = np.empty(CHUNK, np.bool_)  # the key needs the full lookup
    neg = np.empty(CHUNK, np.bool_)  # the store filter said "definitely not"
    sf = meta[SF + R_FAM] != 0
    sfl = np.zeros(CHUNK, np.int64)  # per key: its store-filter line's address, and k
    sfk = np.zeros(CHUNK, np.int64)
    cands = np.empty(CHUNK, np.int64)  # its candidate filters
    found = 0
    for c0 in range(0, m, CHUNK):
        cn = min(m, c0 + CHUNK) - c0
        for i in range(cn):
            a = offsets[c0 + i]
            n = offsets[c0 + i + 1] - a
            hs[i] = xxh3_64_bytes(data, a, n)
            kw0[i], kw1[i] = key_words(data, a, n)
            full[i] = False
            cands[i] = 0
            if sf:  # the store filter's line, prefetched (0: not a blocked one in place)
                sfl[i], sfk[i] = sf_line(meta, u64, hs[i])
        # the store filter's "definitely not" (:mod:`bloomdb.lsm.store_filter`): no candidate
        # is looked for; a "may contain" is checked (and counted) again by _lookup, in cache
        for i in range(cn):
            if not sf:
                neg[i] = False
            elif sfl[i] != 0:
                neg[i] = not check_bits_inline(u32_view(sfl[i], 16), 0, hs[i] >> np.uint64(32), sfk[i])
            else:
                a = offsets[c0 + i]
                neg[i] = not _check(meta, u64, w32, u16, bounds, SF, hs[i], data, a, offsets[c0 + i + 1] - a)
        t = 0
        for s in range(n0):
            base = SLOTS + s * STRIDE
            for i in range(cn):
                a = offsets[c0 + i]
                n = offsets[c0 + i + 1] - a
                ln = np.int64(0)
                if not neg[i] and min_ok(meta, u64, bounds, base, data, a, n, kw0[i], kw1[i]) and max_ok(
                        meta, u64, bounds, base, data, a, n, kw0[i], kw1[i]):
                    ln, probes[t, i] = blocked_line(meta, u64, base, hs[i])
                    full[i] |= ln == 0  # no loaded blocked filter: the full lookup
                    cands[i] += 1
                lines[t, i] = ln
            t += 1
        for j in range(nlev):
            s0 = meta[LEVEL_FIRST + 2 * j]
            c = meta[LEVEL_COUNT + 2 * j]
            if c == 0:
                continue
            fw = SLOTS + s0 * STRIDE + S_MAX_W  # the level's max keys' prefix words
            for i in range(cn):
                lo[i] = 0
            w = c
            while w > 1:  # lockstep: one round of every key's search per pass
                half = w >> 1
                for i in range(cn):
                    e = fw + (lo[i] + half - 1) * STRIDE
                    lo[i] += half if below(u64[e], u64[e + 1], kw0[i], kw1[i]) else 0
                w -= half
            for i in range(cn):
                k0 = kw0[i]
                k1 = kw1[i]
                e = fw + lo[i] * STRIDE
                cand = lo[i] + 1 if below(u64[e], u64[e + 1], k0, k1) else lo[i]
                ln = np.int64(0)
                if cand < c and not neg[i]:
                    a = offsets[c0 + i]
                    n = offsets[c0 + i + 1] - a
                    e = fw + cand * STRIDE
                    if u64[e] == k0 and u64[e + 1] == k1:  # a tie on the prefix words: the exact search
                        cand = _first_not_below(meta, u64, bounds, data, a, n, k0, k1, fw, STRIDE, c)
                    base = SLOTS + (s0 + cand) * STRIDE
                    if cand < c and min_ok(meta, u64, bounds, base, data, a, n, k0, k1):
                        ln, probes[t, i] = blocked_line(meta, u64, base, hs[i])
                        full[i] |= ln == 0
                        cands[i] += 1
                lines[t, i] = ln
            t += 1
        for u in range(t):  # the checks, in the order the lines were prefetched
            for i in range(cn):
                ln = lines[u, i]
                if ln != 0 and not full[i]:
                    full[i] = check_bits_inline(u32_view(ln, 16), 0, hs[i] >> np.uint64(32), probes[u, i])
        for i in range(cn):
            k = c0 + i
            if neg[i]:  # counted as _lookup counts it
                meta[C_LOOKUPS] += 1
                meta[C_SF_CHECKS] += 1
                meta[C_SF_NEG] += 1
                meta[C_CHECKS] += 1
                meta[C_USEFUL] += 1
            if not full[i]:  # (a key the store filter rejected has no candidate)
                meta[C_LOOKUPS] += 1 - neg[i]
                meta[C_CHECKS] += cands[i]
                meta[C_USEFUL] += cands[i]
                out[0, k] = MISSING
                out[1, k] = -1
                out[2, k] = 0
                out[3, k] = 0
                continue
            a = offsets[k]
            n = offsets[k + 1] - a
            st, s, vo, vl = _lookup(directory, u64, w32, u16, bounds, hs[i], data, a, n, data[a : a + n], snap, 0, False)
            out[0, k] = st
            out[1, k] = s
            out[2, k] = vo
            out[3, k] = vl
            found += st != MISSING
    return found
