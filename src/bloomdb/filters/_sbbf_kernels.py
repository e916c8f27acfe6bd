"""Kernels of the ``sbbf`` filter: the Parquet split-block Bloom filter (parquet-format BloomFilter.md).

The filter is ``z`` blocks of 256 bits = eight little-endian uint32 words. For a value with
64-bit hash ``h`` (XXH64, seed 0, of the value's Parquet plain encoding): the block is
``((h >> 32) * z) >> 32``; with ``x = lower32(h)``, word ``i`` of the block gets bit
``((x * SALT[i]) mod 2^32) >> 27`` — exactly one bit per word, eight per value.

Batch kernels work in groups of ``GROUP`` values: a fixed-length loop computes the block and the
eight bit positions of each value (vectorisable, no branches), a second loop does the loads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

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
def add(w32, keys, hashed):
    """Parquet ``insert`` of every key: XXH64 hashes when ``hashed``, else uint64 values (8-byte LE)."""
    z = np.uint64(w32.shape[0] // 8)
    seed = np.uint64(0)
    for i in range(keys.shape[0]):
        h = keys[i] if hashed else xxh64_u64(keys[i], seed)
        base = block_word(h, z)
        for j in range(8):
            w32[base + np.uint64(j)] |= np.uint32(1) << word_bit(h, j)


@njit(cache=True, nogil=True)
def query(w32, keys, hashed, out):
    """``out[i] = check(keys[i])`` (XXH64 hashes when ``hashed``, else uint64 values)."""
    z = np.uint64(w32.shape[0] // 8)
    seed = np.uint64(0)
    n = keys.shape[0]
    full = n - n % GROUP
    base = np.empty(GROUP, np.uint64)
    bits = np.empty((GROUP, 8), np.uint32)
    for start in range(0, full, GROUP):
        for j in range(GROUP):
            h = keys[start + j] if hashed else xxh64_u64(keys[start + j], seed)
            base[j] = block_word(h, z)
            for i in range(8):
                bits[j, i] = np.uint32(1) << word_bit(h, i)
        for j in range(GROUP):
            b = base[j]
            ok = True
            for i in range(8):
                ok &= (w32[b + np.uint64(i)] & bits[j, i]) != 0
            out[start + j] = ok
    for j in range(full, n):
        out[j] = check_hash(w32, z, keys[j] if hashed else xxh64_u64(keys[j], seed))


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
