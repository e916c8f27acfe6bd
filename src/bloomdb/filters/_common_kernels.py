"""Kernels shared by several families: popcount and bitwise OR of payloads."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import atomic_or


@njit(cache=True, nogil=True)
def _popcount64(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True, nogil=True)
def _popcount_kernel(buf):
    n = buf.shape[0]
    total = np.uint64(0)
    full = n // 8
    words = buf[: full * 8].view(np.uint64)
    for i in range(full):
        total += _popcount64(words[i])
    for i in range(full * 8, n):
        total += _popcount64(np.uint64(buf[i]))
    return total


@njit(cache=True, nogil=True)
def _or_kernel(dst, src, atomic):
    """``dst |= src``; with ``atomic``, one atomic OR per 64-bit word that gains bits."""
    if not atomic:
        for i in range(dst.shape[0]):
            dst[i] |= src[i]
        return
    full = dst.shape[0] // 8
    d = dst[: full * 8].view(np.uint64)
    s = src[: full * 8].view(np.uint64)
    for i in range(full):
        if (s[i] & ~d[i]) != np.uint64(0):
            atomic_or(d, i, s[i])
    for i in range(full * 8, dst.shape[0]):
        if (src[i] & ~dst[i]) != np.uint8(0):
            atomic_or(dst, i, src[i])


def popcount_bytes(buf: np.ndarray) -> int:
    """Number of set bits in a uint8 array. Cost: one pass, ~0.1 ns/byte."""
    b = np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
    return int(_popcount_kernel(b)) if b.size else 0


def or_into(dst: np.ndarray, src: np.ndarray, atomic: bool = False) -> None:
    """``dst |= src`` for two uint8 arrays of the same length (in place). With ``atomic`` it is
    safe while other threads set bits in ``dst``: each 64-bit word that gains bits gets one atomic OR."""
    _or_kernel(dst.reshape(-1), np.ascontiguousarray(src).reshape(-1), bool(atomic))
