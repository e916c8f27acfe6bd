"""LevelDB's 32-bit hash (util/hash.cc ``Hash(data, n, seed)``) as numba kernels.

A Murmur1-like hash: ``h = seed ^ (n * 0xc6a4a793)``; every full 4-byte little-endian chunk ``w``:
``h += w; h *= m; h ^= h >> 16``; then the 1..3 tail bytes, read as UNSIGNED bytes (LevelDB since
1.18; RocksDB sign-extends them): ``h += b2 << 16; h += b1 << 8; h += b0; h *= m; h ^= h >> 24``.
All arithmetic wraps modulo 2^32. ``BloomHash`` is this hash with seed ``0xbc9f1d34``.
Cost: about one multiply per 4 bytes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M = np.uint64(0xC6A4A793)
_MASK = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def leveldb_hash_bytes(data, start, n, seed):
    """LevelDB ``Hash(data[start:start + n], n, seed)`` as a uint64 holding a 32-bit value."""
    m = np.uint64(0xC6A4A793)
    mask = np.uint64(0xFFFFFFFF)
    h = (np.uint64(seed) ^ (np.uint64(n) * m)) & mask
    i = np.int64(start)
    end4 = i + (np.int64(n) & ~np.int64(3))
    while i < end4:
        w = (np.uint64(data[i]) | (np.uint64(data[i + 1]) << np.uint64(8))
             | (np.uint64(data[i + 2]) << np.uint64(16)) | (np.uint64(data[i + 3]) << np.uint64(24)))
        h = ((h + w) * m) & mask
        h ^= h >> np.uint64(16)
        i += 4
    rem = np.int64(n) & np.int64(3)
    if rem == 3:
        h = (h + (np.uint64(data[i + 2]) << np.uint64(16))) & mask
    if rem >= 2:
        h = (h + (np.uint64(data[i + 1]) << np.uint64(8))) & mask
    if rem >= 1:
        h = ((h + np.uint64(data[i])) * m) & mask
        h ^= h >> np.uint64(24)
    return h


@njit(cache=True, nogil=True)
def leveldb_hash_u64(x, seed):
    """LevelDB ``Hash`` of the 8-byte little-endian encoding of ``x`` (two full chunks)."""
    m = np.uint64(0xC6A4A793)
    mask = np.uint64(0xFFFFFFFF)
    h = (np.uint64(seed) ^ (np.uint64(8) * m)) & mask
    x = np.uint64(x)
    h = ((h + (x & mask)) * m) & mask
    h ^= h >> np.uint64(16)
    h = ((h + (x >> np.uint64(32))) * m) & mask
    h ^= h >> np.uint64(16)
    return h


@njit(cache=True, nogil=True)
def leveldb_hash_batch_bytes(data, offsets, seed, out):
    """``out[i] = Hash(data[offsets[i]:offsets[i + 1]], seed)`` (Arrow layout)."""
    for i in range(offsets.shape[0] - 1):
        s = np.int64(offsets[i])
        out[i] = leveldb_hash_bytes(data, s, np.int64(offsets[i + 1]) - s, seed)


@njit(cache=True, nogil=True)
def leveldb_hash_batch_ints(ints, seed, out):
    """``out[i] = Hash(le64(ints[i]), seed)``."""
    for i in range(ints.shape[0]):
        out[i] = leveldb_hash_u64(ints[i], seed)
