"""Kernels of the ``fuse8`` / ``fuse16`` filters: 3-wise binary fuse filters (Graf & Lemire 2022).

Per key, from its XXH3-64 hash ``h`` and the filter's 64-bit ``seed``: ``x`` = XXH3-64 of the
8-byte integer ``h + seed`` (a bijection per seed).
The fingerprint array (``uint8`` or ``uint16``) of ``(segment_count + 2) * segment_length`` cells
is cut into segments of ``segment_length`` (a power of two) cells; a key's three cells lie in
three consecutive segments::

    h0 = (x * segment_count * segment_length) >> 64          (segment s, any cell)
    h1 = (h0 + segment_length)     ^ ((x >> 18) & (segment_length - 1))   (segment s + 1)
    h2 = (h0 + 2 * segment_length) ^ (x & (segment_length - 1))           (segment s + 2)

and its fingerprint is the low 8/16 bits of ``x ^ (x >> 32)``. A key is reported present when
``F[h0] ^ F[h1] ^ F[h2]`` equals its fingerprint: an absent key passes with probability
``2^-bits``.

Build (:func:`populate`), one attempt per seed: the keys' ``x`` are bucketed by their top bits
(a counting sort; ``h0`` grows with ``x``, so the cells touched next are near the ones touched
last). Each cell keeps how many keys hit it (bits 2..7 of a byte), the XOR of those keys' ``x``
and the XOR of the *position* (0, 1, 2) each key has in it (bits 0..1). Peeling: a cell hit by
one key names that key (the XOR is the key) and which of its positions the cell is (the XOR of
positions), so the key is pushed on a stack and removed from its two other cells, which may
become singletons in turn. All keys peeled: the fingerprints are assigned in reverse peeling
order, each key's free cell set so that its three cells XOR to its fingerprint. Two copies of
a key cancel out in a cell that holds nothing else (XOR 0, two keys, positions XOR 0): they are
removed at once and counted as duplicates; copies that escape this check make the attempt
fail, and the caller then deduplicates and retries. A cell hit by 64 keys or more (count
overflow) fails the attempt too.

The peel pops cells from a stack (last in, first out: the cells touched next are near the ones
touched last) but lets each wait ``PEEL_AHEAD`` steps in a small ring with its key's three cells
prefetched, so the cache misses of several keys overlap instead of forming one chain; the count
prefetches the cells of the key ``COUNT_AHEAD`` places on. The temporaries are the caller's
(:func:`populate`), so it can put them on huge pages and reuse them for a retry.

Cost: build O(n) with ~13 bytes of temporaries per cell and 9 per key; a query reads three
cells (pipelined: the cells of the keys ``AHEAD`` groups ahead are prefetched).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import prefetch
from ..hashing._kernels import xxh3_64_u64

#: Query pipeline: keys per group, groups prefetched ahead, ring slots (a power of two > AHEAD).
#: 48 keys (144 cells) in flight: at 10M keys (array beyond L2) this took fuse8 from 1.8x
#: blocked:10's query time to about 1x (AMD EPYC, loaded machine; docs/benchmarks.md).
GROUP = 2
AHEAD = 24
SLOTS = 32
#: Build pipeline: keys counted ahead of their prefetched cells, cells staged ahead of their peel
#: (a power of two). At 10M keys they took the count from ~10 to ~7 and the peel from ~33 to
#: ~26 ns/key (AMD EPYC, loaded machine; docs/benchmarks.md).
COUNT_AHEAD = 32
PEEL_AHEAD = 8


@njit(cache=True, nogil=True)
def mix(h, seed):
    """The per-seed hash ``x`` of a key hash: XXH3-64 of the 8 bytes of ``h + seed`` (a
    bijection for a fixed seed; rrmxmx mixes every bit of ``h`` into every bit of ``x``)."""
    return xxh3_64_u64(np.uint64(h) + np.uint64(seed))


@njit(cache=True, nogil=True)
def splitmix64(state):
    """``(next state, output)`` of SplitMix64: the seeds tried by successive build attempts."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _mulhi(x, n):
    """``(x * n) >> 64`` for ``n < 2^32`` (exact, no 128-bit type)."""
    lo = (x & np.uint64(0xFFFFFFFF)) * n
    return ((x >> np.uint64(32)) * n + (lo >> np.uint64(32))) >> np.uint64(32)


@njit(cache=True, nogil=True)
def cells(x, seg_len, seg_count_len):
    """The three cells ``(h0, h1, h2)`` of per-seed hash ``x`` (see the module docstring)."""
    mask = seg_len - np.uint64(1)
    h0 = _mulhi(x, seg_count_len)
    h1 = (h0 + seg_len) ^ ((x >> np.uint64(18)) & mask)
    h2 = (h0 + seg_len + seg_len) ^ (x & mask)
    return h0, h1, h2


@njit(cache=True, nogil=True)
def fingerprint(x, fp_mask):
    return (x ^ (x >> np.uint64(32))) & fp_mask


@njit(cache=True, nogil=True)
def _by_top_bits(hashes, seed, seg_count, out, xs):
    """Every key's ``x`` into ``out``, bucketed by its top bits (at least ``seg_count`` buckets):
    one pass hashes into ``xs`` (scratch of at least ``len(hashes)``, left zeroed) and counts the
    buckets, a second scatters. Hashing once and re-zeroing ``xs`` beat hashing twice by ~1.5
    ns/key at 10M keys."""
    n = hashes.shape[0]
    bits = 1
    while (1 << bits) < seg_count:
        bits += 1
    shift = np.uint64(64 - bits)
    first = np.zeros((1 << bits) + 1, np.int64)
    for i in range(n):
        x = mix(hashes[i], seed)
        xs[i] = x
        first[np.int64(x >> shift) + 1] += 1
    for b in range(1 << bits):
        first[b + 1] += first[b]
    for i in range(n):
        x = xs[i]
        xs[i] = 0
        b = np.int64(x >> shift)
        out[first[b]] = x
        first[b] += 1


@njit(cache=True, nogil=True)
def _enter(t2count, t2hash, h, x, pos):
    """Add key ``x`` at position ``pos`` of cell ``h``."""
    t2count[h] = (t2count[h] + np.uint8(4)) ^ np.uint8(pos)
    t2hash[h] ^= x


@njit(cache=True, nogil=True)
def _leave(t2count, t2hash, h, x, pos):
    """Remove key ``x`` at position ``pos`` from cell ``h``."""
    t2count[h] = (t2count[h] - np.uint8(4)) ^ np.uint8(pos)
    t2hash[h] ^= x


@njit(cache=True, nogil=True)
def _prefetch_cell(t2count, t2hash, h):
    prefetch(t2count, h)
    prefetch(t2hash, h)


@njit(cache=True, nogil=True)
def _count(order, sl, scl, t2count, t2hash):
    """Enter every key of ``order`` in its three cells (the cells of the key ``COUNT_AHEAD``
    places on are prefetched). Returns ``(duplicates dropped, count overflow)``."""
    n = order.shape[0]
    dups = 0
    overflow = False
    for i in range(n):
        if i + COUNT_AHEAD < n:
            g0, g1, g2 = cells(order[i + COUNT_AHEAD], sl, scl)
            _prefetch_cell(t2count, t2hash, g1)
            _prefetch_cell(t2count, t2hash, g2)
        x = order[i]
        h0, h1, h2 = cells(x, sl, scl)
        _enter(t2count, t2hash, h0, x, 0)
        _enter(t2count, t2hash, h1, x, 1)
        _enter(t2count, t2hash, h2, x, 2)
        if (t2hash[h0] & t2hash[h1] & t2hash[h2]) == np.uint64(0):
            if ((t2hash[h0] == np.uint64(0) and t2count[h0] == np.uint8(8))
                    or (t2hash[h1] == np.uint64(0) and t2count[h1] == np.uint8(8))
                    or (t2hash[h2] == np.uint64(0) and t2count[h2] == np.uint8(8))):
                # a second copy of a key met the first alone in a cell: drop this copy
                dups += 1
                _leave(t2count, t2hash, h0, x, 0)
                _leave(t2count, t2hash, h1, x, 1)
                _leave(t2count, t2hash, h2, x, 2)
        if t2count[h0] < np.uint8(4) or t2count[h1] < np.uint8(4) or t2count[h2] < np.uint8(4):
            overflow = True  # 64 keys in one cell wrapped the count
    return dups, overflow


@njit(cache=True, nogil=True)
def _peel(sl, scl, t2count, t2hash, alone, order, which):
    """Peel every cell that holds one key; the peeled keys go to ``order`` (their ``x``) and
    ``which`` (the position of the cell that freed them), in peeling order. Returns how many.

    ``alone`` is a stack of cells that may hold one key. A popped cell waits ``PEEL_AHEAD``
    steps in a small ring, its key's cells prefetched, before it is peeled: the pop order stays
    nearly last-in-first-out (the cells touched stay near each other) while the cache misses of
    several keys overlap."""
    m = t2count.shape[0]
    q = 0
    for i in range(m):
        alone[q] = i
        if (t2count[i] >> np.uint8(2)) == np.uint8(1):
            q += 1
    ring = np.empty(PEEL_AHEAD, np.uint32)
    head = 0
    staged = 0
    stored = 0
    while True:
        if staged < PEEL_AHEAD and q > 0:
            q -= 1
            c = alone[q]
            h0, h1, h2 = cells(t2hash[c], sl, scl)
            _prefetch_cell(t2count, t2hash, h0)
            _prefetch_cell(t2count, t2hash, h1)
            _prefetch_cell(t2count, t2hash, h2)
            ring[(head + staged) & (PEEL_AHEAD - 1)] = c
            staged += 1
            continue
        if staged == 0:
            break
        c = ring[head]
        head = (head + 1) & (PEEL_AHEAD - 1)
        staged -= 1
        if (t2count[c] >> np.uint8(2)) != np.uint8(1):
            continue  # its one key was peeled through another cell meanwhile
        x = t2hash[c]
        found = t2count[c] & np.uint8(3)
        which[stored] = found
        order[stored] = x
        stored += 1
        h0, h1, h2 = cells(x, sl, scl)
        for p in range(3):
            if p == found:
                continue
            o = h0 if p == 0 else (h1 if p == 1 else h2)
            if (t2count[o] >> np.uint8(2)) == np.uint8(2):
                alone[q] = o
                q += 1
            _leave(t2count, t2hash, o, x, p)
    return stored


@njit(cache=True, nogil=True)
def _assign(sl, scl, order, which, stored, fps, fp_mask):
    """Set each peeled key's free cell, in reverse peeling order, so its cells XOR to its
    fingerprint."""
    for i in range(stored - 1, -1, -1):
        x = order[i]
        h0, h1, h2 = cells(x, sl, scl)
        f = fingerprint(x, fp_mask)
        found = which[i]
        if found == 0:
            fps[h0] = f ^ np.uint64(fps[h1]) ^ np.uint64(fps[h2])
        elif found == 1:
            fps[h1] = f ^ np.uint64(fps[h0]) ^ np.uint64(fps[h2])
        else:
            fps[h2] = f ^ np.uint64(fps[h0]) ^ np.uint64(fps[h1])


@njit(cache=True, nogil=True)
def populate(hashes, seed, seg_len, seg_count, fps, fp_mask, order, which, t2count, t2hash, alone):
    """One build attempt with ``seed``: fill ``fps`` (zeroed, ``(seg_count + 2) * seg_len``
    cells) so every key of ``hashes`` passes. Returns ``(keys stored, duplicates removed)`` on
    success, ``(-1, duplicates seen)`` when this seed fails (``fps`` is then left as it was).

    Scratch arrays (the caller's, so it can place them on huge pages and keep them for a retry):
    ``order`` (uint64) and ``which`` (uint8) of ``len(hashes)``; ``t2count`` (uint8, zeroed) and
    ``alone`` (uint32) of ``len(fps)``; ``t2hash`` (uint64, zeroed) of ``max(len(fps),
    len(hashes))``. ``t2count``/``t2hash`` are left dirty. Scratch too short: ``(-2, 0)``."""
    n = hashes.shape[0]
    m = fps.shape[0]
    if (order.shape[0] < n or which.shape[0] < n or t2hash.shape[0] < max(n, m)
            or t2count.shape[0] != m or alone.shape[0] < m):
        return -2, 0
    sl = np.uint64(seg_len)
    scl = np.uint64(seg_count) * sl
    _by_top_bits(hashes, seed, seg_count, order, t2hash)  # t2hash: zeroed again before the count
    dups, overflow = _count(order, sl, scl, t2count, t2hash)
    if overflow:
        return -1, dups
    stored = _peel(sl, scl, t2count, t2hash, alone, order, which)
    if stored + dups != n:
        return -1, dups
    _assign(sl, scl, order, which, stored, fps, fp_mask)
    return stored, dups


@njit(cache=True, nogil=True)
def _check(fps, x, h0, h1, h2, fp_mask):
    return (np.uint64(fps[h0]) ^ np.uint64(fps[h1]) ^ np.uint64(fps[h2])) == fingerprint(x, fp_mask)


@njit(cache=True, nogil=True)
def check_hash(fps, seed, seg_len, seg_count_len, fp_mask, h):
    """``might_contain`` for one hash (engines that probe many filters with one key call this)."""
    if seg_count_len == np.uint64(0):
        return False
    x = mix(h, seed)
    h0, h1, h2 = cells(x, seg_len, seg_count_len)
    return _check(fps, x, h0, h1, h2, fp_mask)


@njit(cache=True, nogil=True)
def _stage(keys, hashed, first, seed, seg_len, seg_count_len, ring, slot, fps):
    """Hash the ``GROUP`` keys from ``first`` into ring slot ``slot``; prefetch their cells."""
    o = slot * GROUP * 4
    for j in range(GROUP):
        h = keys[first + j] if hashed else xxh3_64_u64(keys[first + j])
        x = mix(h, seed)
        h0, h1, h2 = cells(x, seg_len, seg_count_len)
        ring[o + 4 * j] = x
        ring[o + 4 * j + 1] = h0
        ring[o + 4 * j + 2] = h1
        ring[o + 4 * j + 3] = h2
    for j in range(GROUP):
        prefetch(fps, ring[o + 4 * j + 1])
        prefetch(fps, ring[o + 4 * j + 2])
        prefetch(fps, ring[o + 4 * j + 3])


@njit(cache=True, nogil=True)
def _query(fps, seed, seg_len, seg_count_len, fp_mask, keys, out, hashed):
    """Groups of ``GROUP`` keys: group ``i + AHEAD`` is hashed and its cells prefetched while
    group ``i`` is checked; the last ``n % GROUP`` keys go one by one."""
    n = keys.shape[0]
    if seg_count_len == np.uint64(0):
        for i in range(n):
            out[i] = False
        return
    ring = np.empty(SLOTS * GROUP * 4, np.uint64)
    ngroups = n // GROUP
    for gi in range(min(AHEAD, ngroups)):
        _stage(keys, hashed, gi * GROUP, seed, seg_len, seg_count_len, ring, gi & (SLOTS - 1), fps)
    for gi in range(ngroups):
        if gi + AHEAD < ngroups:
            ga = gi + AHEAD
            _stage(keys, hashed, ga * GROUP, seed, seg_len, seg_count_len, ring, ga & (SLOTS - 1), fps)
        o = (gi & (SLOTS - 1)) * GROUP * 4
        for j in range(GROUP):
            p = o + 4 * j
            out[gi * GROUP + j] = _check(fps, ring[p], ring[p + 1], ring[p + 2], ring[p + 3], fp_mask)
    for i in range(ngroups * GROUP, n):
        h = keys[i] if hashed else xxh3_64_u64(keys[i])
        out[i] = check_hash(fps, seed, seg_len, seg_count_len, fp_mask, h)


@njit(cache=True, nogil=True)
def query_hashes(fps, seed, seg_len, seg_count_len, fp_mask, hashes, out):
    _query(fps, seed, seg_len, seg_count_len, fp_mask, hashes, out, True)


@njit(cache=True, nogil=True)
def query_ints(fps, seed, seg_len, seg_count_len, fp_mask, ints, out):
    _query(fps, seed, seg_len, seg_count_len, fp_mask, ints, out, False)
