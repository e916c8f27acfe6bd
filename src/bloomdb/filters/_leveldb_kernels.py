"""Kernels of the ``leveldb`` filter: LevelDB's ``leveldb.BuiltinBloomFilter2`` bit layout.

``filt`` is exactly what LevelDB stores: ``bits / 8`` bytes of bit array, then one byte ``k``.
For a key with 32-bit hash ``h``: ``delta = rotr32(h, 17)``; ``k`` times, bit ``h % bits`` (bit
``pos & 7`` of byte ``pos >> 3``) is set or checked and ``h += delta`` (mod 2^32).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def add_hashes(filt, k, hashes):
    """Set the k probe bits of every 32-bit hash; ``filt`` is the bit array plus the k byte."""
    mask = np.uint64(0xFFFFFFFF)
    bits = np.uint64(filt.shape[0] - 1) * np.uint64(8)
    for i in range(hashes.shape[0]):
        h = np.uint64(hashes[i]) & mask
        delta = ((h >> np.uint64(17)) | (h << np.uint64(15))) & mask
        for _ in range(k):
            pos = h % bits
            filt[pos >> np.uint64(3)] |= np.uint8(1) << np.uint8(pos & np.uint64(7))
            h = (h + delta) & mask


@njit(cache=True, nogil=True)
def key_may_match(filt, h):
    """LevelDB ``KeyMayMatch`` for a key with BloomHash ``h``, on the raw filter bytes.

    Fewer than 2 bytes: False (contains nothing). Stored k > 30: True (reserved encodings).
    Engines (an SSTable reader) call this from their own kernels.
    """
    n = filt.shape[0]
    if n < 2:
        return False
    k = filt[n - 1]
    if k > 30:
        return True
    mask = np.uint64(0xFFFFFFFF)
    bits = np.uint64(n - 1) * np.uint64(8)
    h = np.uint64(h) & mask
    delta = ((h >> np.uint64(17)) | (h << np.uint64(15))) & mask
    for _ in range(k):
        pos = h % bits
        if (filt[pos >> np.uint64(3)] >> np.uint8(pos & np.uint64(7))) & np.uint8(1) == 0:
            return False
        h = (h + delta) & mask
    return True


@njit(cache=True, nogil=True)
def check_hash(filt, h):
    """The probe contract's name for :func:`key_may_match` (``h``: the key's LevelDB BloomHash)."""
    return key_may_match(filt, h)


@njit(cache=True, nogil=True)
def query_hashes(filt, hashes, out):
    """``out[i] = key_may_match(filt, hashes[i])``."""
    for i in range(hashes.shape[0]):
        out[i] = key_may_match(filt, hashes[i])
