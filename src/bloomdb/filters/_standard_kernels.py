"""Kernels of the ``standard`` Bloom filter: k probes over the whole bit array.

Probe ``i`` of a key with 64-bit hash ``h`` is ``mulhi64(h + i * d, m)`` where
``d = rotl64(h, 32) | 1`` (Kirsch–Mitzenmacher double hashing; multiply-shift range reduction
instead of ``%``). Bit ``p`` lives in 64-bit word ``p >> 6`` at bit ``p & 63`` (little-endian, so
byte ``p >> 3`` bit ``p & 7`` of the payload).

Concurrency: add kernels take ``atomic``: True when other writers may run at the same time
(see :mod:`bloomdb.filters.writers`); then a bit is set with an atomic OR
(:func:`bloomdb._intrinsics.atomic_or`), skipped when it is already set, so no bit is lost. A query
reads plain words (a set bit never clears).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import atomic_or
from ..hashing._kernels import xxh3_64_u64


@njit(cache=True, nogil=True)
def mulhi64(a, b):
    """High 64 bits of the 128-bit product of two uint64 (fast range reduction to [0, b))."""
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a_lo = a & m32
    a_hi = a >> s32
    b_lo = b & m32
    b_hi = b >> s32
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    cross = (lo_lo >> s32) + (hi_lo & m32) + lo_hi
    return a_hi * b_hi + (hi_lo >> s32) + (cross >> s32)


@njit(cache=True, nogil=True)
def _add_one(words, m, k, h):
    d = ((h << np.uint64(32)) | (h >> np.uint64(32))) | np.uint64(1)
    g = h
    for _ in range(k):
        p = mulhi64(g, m)
        words[p >> np.uint64(6)] |= np.uint64(1) << (p & np.uint64(63))
        g += d


@njit(cache=True, nogil=True)
def _add_one_atomic(words, m, k, h):
    """:func:`_add_one` for concurrent writers: an atomic OR per bit that is not set yet."""
    d = ((h << np.uint64(32)) | (h >> np.uint64(32))) | np.uint64(1)
    g = h
    for _ in range(k):
        p = mulhi64(g, m)
        i = p >> np.uint64(6)
        bit = np.uint64(1) << (p & np.uint64(63))
        if words[i] & bit == np.uint64(0):  # set bits stay set: skip the atomic when done
            atomic_or(words, i, bit)
        g += d


@njit(cache=True, nogil=True)
def check_hash(words, m, k, h):
    """``might_contain`` for one hash (engines that probe many filters with one key call this)."""
    return _query_one(words, m, k, h)


@njit(cache=True, nogil=True)
def _query_one(words, m, k, h):
    d = ((h << np.uint64(32)) | (h >> np.uint64(32))) | np.uint64(1)
    g = h
    for _ in range(k):
        p = mulhi64(g, m)
        if (words[p >> np.uint64(6)] >> (p & np.uint64(63))) & np.uint64(1) == np.uint64(0):
            return False
        g += d
    return True


@njit(cache=True, nogil=True)
def add_hashes(words, m, k, hashes, atomic):
    if atomic:  # the branch outside the loop: inside it cost the plain loop ~8%
        for i in range(hashes.shape[0]):
            _add_one_atomic(words, m, k, hashes[i])
    else:
        for i in range(hashes.shape[0]):
            _add_one(words, m, k, hashes[i])


@njit(cache=True, nogil=True)
def query_hashes(words, m, k, hashes, out):
    for i in range(hashes.shape[0]):
        out[i] = _query_one(words, m, k, hashes[i])


@njit(cache=True, nogil=True)
def add_ints(words, m, k, ints, atomic):
    if atomic:
        for i in range(ints.shape[0]):
            _add_one_atomic(words, m, k, xxh3_64_u64(ints[i]))
    else:
        for i in range(ints.shape[0]):
            _add_one(words, m, k, xxh3_64_u64(ints[i]))


@njit(cache=True, nogil=True)
def query_ints(words, m, k, ints, out):
    for i in range(ints.shape[0]):
        out[i] = _query_one(words, m, k, xxh3_64_u64(ints[i]))
