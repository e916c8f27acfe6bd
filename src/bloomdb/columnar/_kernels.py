"""Kernels of the columnar format: bit-packing with random access.

A packed stream holds ``n`` values of ``width`` bits (0..64): value ``i`` occupies bits
``[i * width, (i + 1) * width)`` of a little-endian bit stream stored as ``uint64`` words (bit
``b`` is bit ``b & 63`` of word ``b >> 6``), followed by one padding word so a value straddling
two words is read with two loads and no bounds test. Frame of reference: the stored value is
``v - reference`` (mod 2^64); decoding adds the reference back.

Every kernel works on ``uint64`` and takes arrays only (no Python objects); the public decoders in
:mod:`bloomdb.columnar.encoding` convert to the column's dtype.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def packed_words(n, width):
    """Number of ``uint64`` words a stream of ``n`` values of ``width`` bits occupies (with padding)."""
    return (n * width + 63) // 64 + 1


@njit(cache=True, nogil=True)
def pack(deltas, width, out):
    """Pack ``deltas`` (uint64, each < 2^width) into ``out`` (zeroed uint64, ``packed_words`` long)."""
    if width == 0:
        return
    w = np.uint64(width)
    for i in range(deltas.shape[0]):
        v = deltas[i]
        bit = np.uint64(i) * w
        word = bit >> np.uint64(6)
        off = bit & np.uint64(63)
        out[word] |= v << off
        if off + w > np.uint64(64):
            out[word + np.uint64(1)] |= v >> (np.uint64(64) - off)


@njit(cache=True, nogil=True)
def _get(words, w, mask, i):
    """Value ``i``: two loads (the padding word keeps the second in bounds), no branch.

    ``(hi << (63 - off)) << 1`` is ``hi << (64 - off)`` without the undefined shift by 64.
    """
    bit = np.uint64(i) * w
    word = bit >> np.uint64(6)
    off = bit & np.uint64(63)
    lo = words[word] >> off
    hi = (words[word + np.uint64(1)] << (np.uint64(63) - off)) << np.uint64(1)
    return (lo | hi) & mask


@njit(cache=True, nogil=True)
def _mask(width):
    if width >= 64:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return (np.uint64(1) << np.uint64(width)) - np.uint64(1)


@njit(cache=True, nogil=True)
def unpack_all(words, width, reference, out):
    """Decode every value: ``out[i] = reference + value i`` (mod 2^64). Cost: ~1 ns per value."""
    n = out.shape[0]
    if width == 0:
        for i in range(n):
            out[i] = reference
        return
    w = np.uint64(width)
    mask = _mask(width)
    for i in range(n):
        out[i] = reference + _get(words, w, mask, i)


@njit(cache=True, nogil=True)
def unpack_at(words, width, reference, positions, out):
    """Decode only the values at ``positions`` (int64, any order, repeats allowed) into ``out``.

    Cost: one or two word loads per position; neighbours are never touched.
    """
    if width == 0:
        for j in range(positions.shape[0]):
            out[j] = reference
        return
    w = np.uint64(width)
    mask = _mask(width)
    for j in range(positions.shape[0]):
        out[j] = reference + _get(words, w, mask, positions[j])
