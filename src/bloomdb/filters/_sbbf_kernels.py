"""Kernels of the ``sbbf`` filter: the Parquet split-block Bloom filter (parquet-format BloomFilter.md).

The filter is ``z`` blocks of 256 bits = eight little-endian uint32 words. For a value with
64-bit hash ``h`` (XXH64, seed 0, of the value's Parquet plain encoding): the block is
``((h >> 32) * z) >> 32``; with ``x = lower32(h)``, word ``i`` of the block gets bit
``((x * SALT[i]) mod 2^32) >> 27`` — exactly one bit per word, eight per value.

Batch kernels work in groups of ``GROUP`` values: fixed-length loops hash the group, compute the
block and eight bit masks of each value (vectorisable, no branches), then do the loads.
With ``atomic`` (other writers may run, see :mod:`bloomdb.filters.writers`) inserts set each
word's bit with an atomic OR, skipped when the bit is already set, so no bit is lost.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import atomic_or
from ..hashing._kernels import xxh64_u64

GROUP = 32


@njit(cache=True, nogil=True)
def _salt(i):
    s = (np.uint64(0x47B6137B), np.uint64(0x44974D91), np.uint64(0x8824AD5B), np.uint64(0xA2B7289D),
         np.uint64(0x705495C7), np.uint64(0x2DF1424B), np.uint64(0x9EFC4947), np.uint64(0x5C6BFB31))  # fmt: skip
    return s[i]


@njit(cache=True, nogil=True)
def block_word(h, z):
    """Index of the first 32-bit word of the block of hash ``h`` (multiply-shift of its upper half)."""
    return ((h >> np.uint64(32)) * z >> np.uint64(32)) * np.uint64(8)


@njit(cache=True, nogil=True)
def word_bit(h, i):
    """The bit (0..31) that hash ``h`` sets in word ``i`` of its block."""
    return np.uint32((((h & np.uint64(0xFFFFFFFF)) * _salt(i)) & np.uint64(0xFFFFFFFF)) >> np.uint64(27))


@njit(cache=True, nogil=True)
def check_hash(w32, z, h):
    """Parquet ``check``: all eight bits of ``h`` set in its block (engines call this per value)."""
    base = block_word(h, z)
    ok = True
    for i in range(8):
        ok &= ((w32[base + np.uint64(i)] >> word_bit(h, i)) & np.uint32(1)) != 0
    return ok


@njit(cache=True, nogil=True)
def _run(w32, keys, hashed, out, query, atomic):
    """Insert (``query`` False) or check (``query`` True, into ``out``) every key.

    Full groups of GROUP keys in three constant-length loops written out here — hash, then block
    and eight bit masks, then the block loads — which the compiler unrolls and vectorises; moving
    them into a helper, or a variable trip count, measured 1.6-2.7x slower.
    """
    z = np.uint64(w32.shape[0] // 8)
    seed = np.uint64(0)
    mask = np.uint64(0xFFFFFFFF)
    s27 = np.uint64(27)
    n = keys.shape[0]
    full = n - n % GROUP
    hs = np.empty(GROUP, np.uint64)
    base = np.empty(GROUP, np.uint64)
    bits = np.empty((GROUP, 8), np.uint32)
    for start in range(0, full, GROUP):
        if hashed:
            for j in range(GROUP):
                hs[j] = keys[start + j]
        else:
            for j in range(GROUP):
                hs[j] = xxh64_u64(keys[start + j], seed)
        for j in range(GROUP):
            h = hs[j]
            base[j] = block_word(h, z)
            x = h & mask
            bits[j, 0] = np.uint32(1) << np.uint32(((x * np.uint64(0x47B6137B)) & mask) >> s27)
            bits[j, 1] = np.uint32(1) << np.uint32(((x * np.uint64(0x44974D91)) & mask) >> s27)
            bits[j, 2] = np.uint32(1) << np.uint32(((x * np.uint64(0x8824AD5B)) & mask) >> s27)
            bits[j, 3] = np.uint32(1) << np.uint32(((x * np.uint64(0xA2B7289D)) & mask) >> s27)
            bits[j, 4] = np.uint32(1) << np.uint32(((x * np.uint64(0x705495C7)) & mask) >> s27)
            bits[j, 5] = np.uint32(1) << np.uint32(((x * np.uint64(0x2DF1424B)) & mask) >> s27)
            bits[j, 6] = np.uint32(1) << np.uint32(((x * np.uint64(0x9EFC4947)) & mask) >> s27)
            bits[j, 7] = np.uint32(1) << np.uint32(((x * np.uint64(0x5C6BFB31)) & mask) >> s27)
        if query:
            for j in range(GROUP):
                b = base[j]
                miss = np.uint32(0)
                for i in range(8):
                    miss |= bits[j, i] & ~w32[b + np.uint64(i)]
                out[start + j] = miss == 0
        else:
            for j in range(GROUP):
                b = base[j]
                for i in range(8):
                    if not atomic:
                        w32[b + np.uint64(i)] |= bits[j, i]
                    elif (w32[b + np.uint64(i)] & bits[j, i]) == np.uint32(0):
                        atomic_or(w32, b + np.uint64(i), bits[j, i])
    for j in range(full, n):
        h = keys[j] if hashed else xxh64_u64(keys[j], seed)
        if query:
            out[j] = check_hash(w32, z, h)
        else:
            b = block_word(h, z)
            for i in range(8):
                bit = np.uint32(1) << word_bit(h, i)
                if not atomic:
                    w32[b + np.uint64(i)] |= bit
                elif (w32[b + np.uint64(i)] & bit) == np.uint32(0):
                    atomic_or(w32, b + np.uint64(i), bit)


@njit(cache=True, nogil=True)
def add(w32, keys, hashed, atomic):
    """Parquet ``insert`` of every key: XXH64 hashes when ``hashed``, else uint64 values (8-byte LE).
    ``atomic``: other writers may run (atomic OR)."""
    _run(w32, keys, hashed, np.empty(0, np.bool_), False, atomic)


@njit(cache=True, nogil=True)
def query(w32, keys, hashed, out):
    """``out[i] = check(keys[i])`` (XXH64 hashes when ``hashed``, else uint64 values)."""
    _run(w32, keys, hashed, out, True, False)


@njit(cache=True, nogil=True)
def row_groups_query(bitsets, starts, hashes, out):
    """``out[v, g]`` = value ``v`` may be in row group ``g``.

    ``bitsets`` holds every row group's filter words back to back; filter ``g`` is
    ``bitsets[starts[g]:starts[g + 1]]``, and an empty one (no filter) answers True.
    """
    for g in range(starts.shape[0] - 1):
        lo = starts[g]
        hi = starts[g + 1]
        if hi == lo:
            for v in range(hashes.shape[0]):
                out[v, g] = True
            continue
        w = bitsets[lo:hi]
        z = np.uint64((hi - lo) // 8)
        for v in range(hashes.shape[0]):
            out[v, g] = check_hash(w, z, hashes[v])
