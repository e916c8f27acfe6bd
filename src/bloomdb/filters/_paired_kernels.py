"""Kernels of the ``paired`` filter: Speedb's paired blocked Bloom bit layout.

The filter is ``num_blocks`` 512-bit blocks (16 little-endian uint32 words each) in batches of
``B`` blocks (``B`` = 32 in current Speedb, 128 in its first version). The low ``idx_bits =
log2(B)`` bits of each block's word 0 hold the in-batch index of its partner block; bits
``idx_bits..511`` are Bloom bits (``bloom_bits = 512 - idx_bits``).

For a key with 64-bit hash ``h``: the primary block is ``(lower32(h) * num_blocks) >> 32``; its
partner is the block of the same batch whose index is stored in the primary. The key sets k/2
bits in each of the two: probe set 0 in whichever has the smaller in-batch index, set 1 in the
other. Probe ``j`` uses ``g_j = upper32(h) * 0x9e3779b9^j mod 2^32``; set 0 takes bit
``g_j >> 23``, set 1 bit ``(g_j >> 14) & 511``; a bit below ``idx_bits`` (it would hit the pair
index) is remapped into ``[idx_bits, 512)`` by ``idx_bits + (bloom_bits * x) >> 23`` with ``x``
the low 23 bits of ``g_j`` (set 0) or its high 23 bits (set 1).

The builder histograms keys per block, sorts each batch's blocks by load (stable) and pairs the
lightest with the heaviest, the second lightest with the second heaviest and so on, so that every
pair carries close to twice the mean load. Queries read the partner index from the primary block
(a dependent load), so batch kernels run a three-stage pipeline over groups of keys: hash and
prefetch the primaries two groups ahead, read the partner indexes and prefetch the partners one
group ahead, check the current group probe-major.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import prefetch
from ..hashing._kernels import xxh3_64_u64

#: Keys per pipeline group (probed together, probe-major).
GROUP = 8
_M32 = 0xFFFFFFFF


@njit(cache=True, nogil=True)
def primary_block(h, num_blocks):
    """Block of hash ``h``: FastRange32 of its low half over ``num_blocks``."""
    return ((h & np.uint64(_M32)) * num_blocks) >> np.uint64(32)


@njit(cache=True, nogil=True)
def _pos0(g, idx_bits, bloom_bits):
    p = g >> np.uint64(23)
    if p < idx_bits:
        p = idx_bits + (((bloom_bits * (g & np.uint64(0x7FFFFF))) & np.uint64(_M32)) >> np.uint64(23))
    return p


@njit(cache=True, nogil=True)
def _pos1(g, idx_bits, bloom_bits):
    p = (g & np.uint64(0x007FC000)) >> np.uint64(14)
    if p < idx_bits:
        p = idx_bits + (((bloom_bits * (g >> np.uint64(9))) & np.uint64(_M32)) >> np.uint64(23))
    return p


@njit(cache=True, nogil=True)
def check_pair(w32, b0, b1, g, half_k, idx_bits, bloom_bits):
    """True when probe set 0 of ``g`` is all set in ``b0`` and set 1 in ``b1`` (branch-free)."""
    base0 = b0 * np.uint64(16)
    base1 = b1 * np.uint64(16)
    ok = True
    for _ in range(half_k):
        p = _pos0(g, idx_bits, bloom_bits)
        ok &= ((w32[base0 + (p >> np.uint64(5))] >> np.uint32(p & np.uint64(31))) & np.uint32(1)) != 0
        p = _pos1(g, idx_bits, bloom_bits)
        ok &= ((w32[base1 + (p >> np.uint64(5))] >> np.uint32(p & np.uint64(31))) & np.uint32(1)) != 0
        g = (g * np.uint64(0x9E3779B9)) & np.uint64(_M32)
    return ok


@njit(cache=True, nogil=True)
def partner_of(w32, block, batch_blocks):
    """The partner of ``block`` as stored in its pair-index bits."""
    start = (block // batch_blocks) * batch_blocks
    return start + (np.uint64(w32[block * np.uint64(16)]) & (batch_blocks - np.uint64(1)))


@njit(cache=True, nogil=True)
def check_hash(w32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits, h):
    """``might_contain`` for one hash (engines that probe many filters with one key call this)."""
    a = primary_block(h, num_blocks)
    b = partner_of(w32, a, batch_blocks)
    g = h >> np.uint64(32)
    if (a % batch_blocks) < (b % batch_blocks):
        return check_pair(w32, a, b, g, half_k, idx_bits, bloom_bits)
    return check_pair(w32, b, a, g, half_k, idx_bits, bloom_bits)


@njit(cache=True, nogil=True)
def _group(w32, base0, base1, g, acc, m, half_k, idx_bits, bloom_bits, query):
    """Set (or check into ``acc``) the probes of ``m`` keys probe-major: probe j of every key, then
    probe j + 1 — ``m`` independent dependency chains for the CPU to overlap. 32-bit arithmetic;
    the remap of positions below ``idx_bits`` is a branch-free select."""
    idx = np.uint32(idx_bits)
    bb = np.uint32(bloom_bits)
    for _ in range(half_k):
        for j in range(m):
            x = g[j]
            p0 = x >> np.uint32(23)
            r0 = idx + ((bb * (x & np.uint32(0x7FFFFF))) >> np.uint32(23))
            p0 = r0 if p0 < idx else p0
            p1 = (x >> np.uint32(14)) & np.uint32(511)
            r1 = idx + ((bb * (x >> np.uint32(9))) >> np.uint32(23))
            p1 = r1 if p1 < idx else p1
            i0 = base0[j] + np.uint64(p0 >> np.uint32(5))
            i1 = base1[j] + np.uint64(p1 >> np.uint32(5))
            if query:
                acc[j] &= (w32[i0] >> (p0 & np.uint32(31))) & (w32[i1] >> (p1 & np.uint32(31)))
            else:
                w32[i0] |= np.uint32(1) << (p0 & np.uint32(31))
                w32[i1] |= np.uint32(1) << (p1 & np.uint32(31))
            g[j] = x * np.uint32(0x9E3779B9)


@njit(cache=True, nogil=True)
def _order(a, b, batch_blocks, base0, base1, j):
    """Word offsets of the set-0 and set-1 blocks of a key with primary ``a`` and partner ``b``."""
    if (a % batch_blocks) < (b % batch_blocks):
        base0[j] = a * np.uint64(16)
        base1[j] = b * np.uint64(16)
    else:
        base0[j] = b * np.uint64(16)
        base1[j] = a * np.uint64(16)


@njit(cache=True, nogil=True)
def build(w32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits, hashes):
    """Pair the blocks of every batch by load and set every key's bits (``w32`` starts zeroed)."""
    n = hashes.shape[0]
    nb = np.int64(num_blocks)
    B = np.int64(batch_blocks)
    counts = np.zeros(nb, np.int64)
    prim = np.empty(n, np.uint32)
    for i in range(n):
        a = primary_block(hashes[i], num_blocks)
        prim[i] = np.uint32(a)
        counts[a] += 1
    # pair lightest with heaviest inside each batch (stable insertion sort by load)
    partner = np.empty(nb, np.uint64)
    order = np.empty(B, np.int64)
    for start in range(0, nb, B):
        for j in range(B):
            c = counts[start + j]
            t = j
            while t > 0 and counts[start + order[t - 1]] > c:
                order[t] = order[t - 1]
                t -= 1
            order[t] = j
        for j in range(B // 2):
            lo = order[j]
            hi = order[B - 1 - j]
            partner[start + lo] = start + hi
            partner[start + hi] = start + lo
            w32[(start + lo) * 16] |= np.uint32(hi)
            w32[(start + hi) * 16] |= np.uint32(lo)
    # set bits GROUP keys at a time, both lines of the group after next prefetched
    base0 = np.empty(GROUP, np.uint64)
    base1 = np.empty(GROUP, np.uint64)
    g = np.empty(GROUP, np.uint32)
    acc = np.empty(0, np.uint32)
    for first in range(0, n, GROUP):
        m = min(GROUP, n - first)
        for i in range(first + 2 * GROUP, min(first + 3 * GROUP, n)):
            a = np.uint64(prim[i])
            prefetch(w32, a * np.uint64(16))
            prefetch(w32, partner[a] * np.uint64(16))
        for j in range(m):
            a = np.uint64(prim[first + j])
            _order(a, partner[a], batch_blocks, base0, base1, j)
            g[j] = np.uint32(hashes[first + j] >> np.uint64(32))
        _group(w32, base0, base1, g, acc, m, half_k, idx_bits, bloom_bits, False)


@njit(cache=True, nogil=True)
def _query(w32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits, keys, out, hashed):
    """Three-stage pipeline over groups of ``GROUP`` keys (hashes, or integer keys hashed here):
    group i+2 is hashed and its primary blocks prefetched, group i+1 reads its partners from
    them and prefetches those, group i is checked probe-major."""
    n = keys.shape[0]
    ng = (n + GROUP - 1) // GROUP
    ring_a = np.empty(GROUP * 4, np.uint64)
    ring_b = np.empty(GROUP * 4, np.uint64)
    ring_g = np.empty(GROUP * 4, np.uint32)
    base0 = np.empty(GROUP, np.uint64)
    base1 = np.empty(GROUP, np.uint64)
    g = np.empty(GROUP, np.uint32)
    acc = np.empty(GROUP, np.uint32)
    for gi in range(-2, ng):
        s1 = gi + 2
        if s1 < ng:
            o = (s1 & 3) * GROUP
            for j in range(min(GROUP, n - s1 * GROUP)):
                h = keys[s1 * GROUP + j] if hashed else xxh3_64_u64(keys[s1 * GROUP + j])
                a = primary_block(h, num_blocks)
                ring_a[o + j] = a
                ring_g[o + j] = np.uint32(h >> np.uint64(32))
                prefetch(w32, a * np.uint64(16))
        s2 = gi + 1
        if s2 >= 0 and s2 < ng:
            o = (s2 & 3) * GROUP
            for j in range(min(GROUP, n - s2 * GROUP)):
                b = partner_of(w32, ring_a[o + j], batch_blocks)
                ring_b[o + j] = b
                prefetch(w32, b * np.uint64(16))
        if gi >= 0:
            o = (gi & 3) * GROUP
            m = min(GROUP, n - gi * GROUP)
            for j in range(m):
                _order(ring_a[o + j], ring_b[o + j], batch_blocks, base0, base1, j)
                g[j] = ring_g[o + j]
                acc[j] = np.uint32(1)
            _group(w32, base0, base1, g, acc, m, half_k, idx_bits, bloom_bits, True)
            for j in range(m):
                out[gi * GROUP + j] = (acc[j] & np.uint32(1)) != np.uint32(0)


@njit(cache=True, nogil=True)
def query_hashes(w32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits, hashes, out):
    _query(w32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits, hashes, out, True)


@njit(cache=True, nogil=True)
def query_ints(w32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits, ints, out):
    _query(w32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits, ints, out, False)
