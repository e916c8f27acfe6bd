"""Kernels of the ``register`` filter: k bits inside one 32-bit word per key.

For a key with 64-bit hash ``h`` (XXH3-64, seed 0): the word is ``(lower32(h) * num_words) >> 32``
(multiply-shift, any number of words); probe ``j`` (``0 <= j < k <= 4``) is bit
``(h >> (32 + 5 j)) & 31`` of that word. A word is stored little-endian, so bit ``b`` of word
``w`` is bit ``b & 7`` of byte ``4 w + (b >> 3)``. Two probes may pick the same bit (the
positions are independent uniform draws), as the FP model ``filters.math.word_blocked_fpr_exact``
assumes.

Batch kernels work in groups of ``GROUP`` keys: one fixed-length loop turns the group's keys into
(word, mask) pairs — hashing included, with no data-dependent branches, so the compiler
vectorises it — and a second loop does the loads. The loops are written out in each kernel (a
helper taking the arrays costs ~25% in call overhead). A 256 KiB filter fits L2, so no prefetching.
With ``atomic`` (other writers may run, see :mod:`bloomdb.filters.writers`) a word is updated
with one atomic OR, skipped when its bits are already set, so concurrent writers never lose a bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import atomic_or
from ..hashing._kernels import xxh3_64_u64

#: Keys per group in the batch kernels.
GROUP = 64


@njit(cache=True, nogil=True)
def word_index(h, num_words):
    """The word of hash ``h``: multiply-shift of its lower 32 bits onto ``[0, num_words)``."""
    return ((h & np.uint64(0xFFFFFFFF)) * num_words) >> np.uint64(32)


@njit(cache=True, nogil=True)
def probe_mask(h, k):
    """The k-bit (or fewer, when probes coincide) mask of hash ``h``: 5 bits per probe from bit 32 up."""
    m = np.uint32(0)
    for j in range(4):  # branch-free: probes j >= k shift a zero
        m |= np.uint32(j < k) << np.uint32((h >> np.uint64(32 + 5 * j)) & np.uint64(31))
    return m


@njit(cache=True, nogil=True)
def check_hash(w32, num_words, k, h):
    """``might_contain`` for one hash: engines call this from their own kernels (see ``kernel_args``)."""
    m = probe_mask(h, k)
    return (w32[word_index(h, num_words)] & m) == m


@njit(cache=True, nogil=True)
def add(w32, k, keys, hashed, atomic):
    """Set the bits of every key (hashes when ``hashed``, else uint64 integer keys)."""
    num_words = np.uint64(w32.shape[0])
    n = keys.shape[0]
    full = n - n % GROUP
    idx = np.empty(GROUP, np.uint64)
    msk = np.empty(GROUP, np.uint32)
    for start in range(0, full, GROUP):
        if hashed:
            for j in range(GROUP):
                h = keys[start + j]
                idx[j] = word_index(h, num_words)
                msk[j] = probe_mask(h, k)
        else:
            for j in range(GROUP):
                h = xxh3_64_u64(keys[start + j])
                idx[j] = word_index(h, num_words)
                msk[j] = probe_mask(h, k)
        for j in range(GROUP):
            w = idx[j]
            if not atomic:
                w32[w] |= msk[j]
            elif (w32[w] & msk[j]) != msk[j]:
                atomic_or(w32, w, msk[j])
    for i in range(full, n):
        h = keys[i] if hashed else xxh3_64_u64(keys[i])
        w = word_index(h, num_words)
        m = probe_mask(h, k)
        if not atomic:
            w32[w] |= m
        elif (w32[w] & m) != m:
            atomic_or(w32, w, m)


@njit(cache=True, nogil=True)
def query(w32, k, keys, hashed, out):
    """``out[i] = might_contain(keys[i])`` (hashes when ``hashed``, else uint64 integer keys)."""
    num_words = np.uint64(w32.shape[0])
    n = keys.shape[0]
    full = n - n % GROUP
    idx = np.empty(GROUP, np.uint64)
    msk = np.empty(GROUP, np.uint32)
    # written out here rather than calling _masks: the inlined constant-length loops are ~25% faster
    for start in range(0, full, GROUP):
        if hashed:
            for j in range(GROUP):
                h = keys[start + j]
                idx[j] = word_index(h, num_words)
                msk[j] = probe_mask(h, k)
        else:
            for j in range(GROUP):
                h = xxh3_64_u64(keys[start + j])
                idx[j] = word_index(h, num_words)
                msk[j] = probe_mask(h, k)
        for j in range(GROUP):
            out[start + j] = (w32[idx[j]] & msk[j]) == msk[j]
    for i in range(full, n):
        h = keys[i] if hashed else xxh3_64_u64(keys[i])
        m = probe_mask(h, k)
        out[i] = (w32[word_index(h, num_words)] & m) == m
