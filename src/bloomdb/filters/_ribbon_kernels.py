"""Kernels of the ``ribbon`` filter: Standard128 Ribbon (Dillinger & Walzer; RocksDB's design).

Per key, from its XXH3-64 hash ``h`` and the filter's ``seed``: ``x = fmix64(h ^ seed_mix)``
(a bijection), start slot ``s = (x * num_starts) >> 64`` (FastRange64), a 128-bit coefficient
row ``c = (fmix64(x + G) | 1, fmix64(x + 2G))`` (bit 0 always one) and a 32-bit result row
``r = lower32(fmix64(x + 3G))``. 128-bit rows are pairs of uint64 (lo, hi).

Build: *banding* by on-the-fly Gaussian elimination — a key's row is inserted at slot ``s``; if
the slot is taken, XOR the stored row and result in, shift the row right to its lowest set bit
and move on that many slots; an empty slot takes the row. A row that cancels to zero with a
non-zero result is a failure (the build retries with the next seed); with a zero result it was
redundant (e.g. a duplicate key). Then *back-substitution* from the last slot down solves the
system into an interleaved, column-major solution: for each block of 128 slots and each result
column ``j`` one 128-bit *segment*. Blocks ``< upper_start_block`` have ``upper_cols - 1``
columns, the rest ``upper_cols`` (fractional bits per key). Block ``b`` starts at segment
``b * upper_cols - min(b, upper_start_block)``.

Query: the key passes when, for every column ``j`` of its start block, the parity of
(solution bits of slots ``s .. s+127``) AND ``c`` equals bit ``j`` of ``r`` — about
``2^-columns`` for an absent key.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .._intrinsics import popcount64, prefetch
from ..hashing._kernels import xxh3_64_u64

#: Ring size of the query pipeline and its lookahead (keys).
_RING = 16
_D = 8


@njit(cache=True, nogil=True)
def _fmix(x):
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


@njit(cache=True, nogil=True)
def rehash(h, seed):
    """The per-seed hash ``x`` of a key hash ``h`` (bijective for a fixed seed)."""
    return _fmix(h ^ (np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x2545F4914F6CDD1D)))


@njit(cache=True, nogil=True)
def start_slot(x, num_starts):
    """FastRange64: ``(x * num_starts) >> 64`` for ``num_starts < 2^32`` (exact, no 128-bit type)."""
    lo = (x & np.uint64(0xFFFFFFFF)) * num_starts
    return ((x >> np.uint64(32)) * num_starts + (lo >> np.uint64(32))) >> np.uint64(32)


@njit(cache=True, nogil=True)
def row(x):
    """``(coeff_lo, coeff_hi, result)`` of the per-seed hash ``x``: ``y = fmix64(x + G)``,
    ``(y | 1, y * C2, (y * C3) >> 32)``."""
    y = _fmix(x + np.uint64(0x9E3779B97F4A7C15))
    return (y | np.uint64(1), y * np.uint64(0xC28F82822B650BED),
            (y * np.uint64(0xD6E8FEB86659FD93)) >> np.uint64(32))


@njit(cache=True, nogil=True)
def _parity(x):
    return popcount64(x) & np.uint64(1)


@njit(cache=True, nogil=True)
def _by_start(hashes, seed, num_starts):
    """Per-seed hashes of all keys, bucketed by start slot (counting sort on ``start >> 10``).

    Inserting keys in start order keeps banding inside a few KiB of the band at a time (about 4x
    faster than random order, which misses the cache on every key); the order does not change
    whether banding succeeds.
    """
    n = hashes.shape[0]
    shift = np.uint64(10)
    nb = np.int64(num_starts >> shift) + 1
    first = np.zeros(nb + 1, np.int64)
    xs = np.empty(n, np.uint64)
    for i in range(n):
        x = rehash(hashes[i], seed)
        xs[i] = x
        first[np.int64(start_slot(x, num_starts) >> shift) + 1] += 1
    for b in range(nb):
        first[b + 1] += first[b]
    out = np.empty(n, np.uint64)
    for i in range(n):
        x = xs[i]
        b = np.int64(start_slot(x, num_starts) >> shift)
        out[first[b]] = x
        first[b] += 1
    return out


@njit(cache=True, nogil=True)
def band(hashes, seed, num_starts, bands):
    """Insert every key's row into ``bands`` (uint64, 3 per slot: coeff lo, coeff hi, result;
    starts zeroed). Returns -1 on success, else a failing key's position in start order (>= 0)."""
    xs = _by_start(hashes, seed, num_starts)
    three = np.uint64(3)
    for t in range(xs.shape[0]):
        x = xs[t]
        i = start_slot(x, num_starts) * three
        lo, hi, r = row(x)
        while True:
            o = bands[i]
            if o == np.uint64(0):
                bands[i] = lo
                bands[i + np.uint64(1)] = hi
                bands[i + np.uint64(2)] = r
                break
            lo ^= o
            hi ^= bands[i + np.uint64(1)]
            r ^= bands[i + np.uint64(2)]
            if lo == np.uint64(0):
                if hi == np.uint64(0):
                    if r != np.uint64(0):
                        return t
                    break  # redundant (duplicate key)
                tz = np.uint64(trailing_zeros(hi))
                lo = hi >> tz
                hi = np.uint64(0)
                i += (np.uint64(64) + tz) * three
            else:
                tz = np.uint64(trailing_zeros(lo))
                lo = (lo >> tz) | (hi << (np.uint64(64) - tz))
                hi >>= tz
                i += tz * three
    return -1


@njit(cache=True, nogil=True)
def back_substitute(bands, num_blocks, upper_cols, upper_start_block, out):
    """Solve the banded system into ``out`` (uint64, 2 per segment; see the module docstring)."""
    s_lo = np.zeros(32, np.uint64)
    s_hi = np.zeros(32, np.uint64)
    seg = upper_start_block * (upper_cols - 1) + (num_blocks - upper_start_block) * upper_cols
    one = np.uint64(1)
    for block in range(num_blocks - 1, -1, -1):
        cols = upper_cols - 1 if block < upper_start_block else upper_cols
        for i in range(block * 128 + 127, block * 128 - 1, -1):
            cl = bands[3 * i]
            ch = bands[3 * i + 1]
            r = bands[3 * i + 2]
            for j in range(cols):
                t_hi = (s_hi[j] << one) | (s_lo[j] >> np.uint64(63))
                t_lo = s_lo[j] << one
                bit = _parity((t_lo & cl) ^ (t_hi & ch)) ^ ((r >> np.uint64(j)) & one)
                s_lo[j] = t_lo | bit
                s_hi[j] = t_hi
        seg -= cols
        for j in range(cols):
            out[2 * (seg + j)] = s_lo[j]
            out[2 * (seg + j) + 1] = s_hi[j]


@njit(cache=True, nogil=True)
def _locate(start, upper_cols, upper_start_block):
    """``(first segment, columns)`` of the block holding slot ``start``."""
    block = start >> np.uint64(7)
    if block < upper_start_block:
        return block * (upper_cols - np.uint64(1)), upper_cols - np.uint64(1)
    return block * upper_cols - upper_start_block, upper_cols


@njit(cache=True, nogil=True)
def _check(words, start, lo, hi, r, upper_cols, upper_start_block):
    seg, cols = _locate(start, upper_cols, upper_start_block)
    bit = start & np.uint64(127)
    # the row shifted to the slot's offset: its left part meets this block, its right the next
    if bit == np.uint64(0):
        l0, l1, r0, r1 = lo, hi, np.uint64(0), np.uint64(0)
    elif bit < np.uint64(64):
        l0 = lo << bit
        l1 = (hi << bit) | (lo >> (np.uint64(64) - bit))
        r0 = hi >> (np.uint64(64) - bit)
        r1 = np.uint64(0)
    elif bit == np.uint64(64):
        l0, l1, r0, r1 = np.uint64(0), lo, hi, np.uint64(0)
    else:
        s = bit - np.uint64(64)
        l0 = np.uint64(0)
        l1 = lo << s
        r0 = (lo >> (np.uint64(64) - s)) | (hi << s)
        r1 = hi >> (np.uint64(64) - s)
    for j in range(cols):
        o = np.uint64(2) * (seg + np.uint64(j))
        v = (words[o] & l0) ^ (words[o + np.uint64(1)] & l1)
        if bit != np.uint64(0):
            p = o + np.uint64(2) * cols
            v ^= (words[p] & r0) ^ (words[p + np.uint64(1)] & r1)
        if _parity(v) != ((r >> np.uint64(j)) & np.uint64(1)):
            return False
    return True


@njit(cache=True, nogil=True)
def check_hash(words, num_starts, upper_cols, upper_start_block, seed, h):
    """``might_contain`` for one hash (engines that probe many filters with one key call this)."""
    if num_starts == np.uint64(0):
        return False
    x = rehash(h, seed)
    lo, hi, r = row(x)
    return _check(words, start_slot(x, num_starts), lo, hi, r, upper_cols, upper_start_block)


@njit(cache=True, nogil=True)
def _query(words, num_starts, upper_cols, upper_start_block, seed, keys, out, hashed):
    n = keys.shape[0]
    if num_starts == np.uint64(0):
        for i in range(n):
            out[i] = False
        return
    mask = _RING - 1
    ring_x = np.empty(_RING, np.uint64)
    ring_s = np.empty(_RING, np.uint64)
    for t in range(-_D, n):
        a = t + _D
        if a < n:
            h = keys[a] if hashed else xxh3_64_u64(keys[a])
            x = rehash(h, seed)
            s = start_slot(x, num_starts)
            ring_x[a & mask] = x
            ring_s[a & mask] = s
            seg, cols = _locate(s, upper_cols, upper_start_block)
            prefetch(words, np.uint64(2) * seg)
            prefetch(words, np.uint64(2) * (seg + cols))
        if t >= 0:
            x = ring_x[t & mask]
            lo, hi, r = row(x)
            out[t] = _check(words, ring_s[t & mask], lo, hi, r, upper_cols, upper_start_block)


@njit(cache=True, nogil=True)
def query_hashes(words, num_starts, upper_cols, upper_start_block, seed, hashes, out):
    _query(words, num_starts, upper_cols, upper_start_block, seed, hashes, out, True)


@njit(cache=True, nogil=True)
def query_ints(words, num_starts, upper_cols, upper_start_block, seed, ints, out):
    _query(words, num_starts, upper_cols, upper_start_block, seed, ints, out, False)
