"""Unweighted sums of the aggregate sink, written so the compiler can vectorise them.

:func:`int_sum` adds 64-bit integers exactly without floats or Python integers: the low and
high 32-bit halves of every value are summed apart in wrapping 64-bit words, which cannot
overflow for fewer than 2^32 rows (the caller recovers ``hi * 2^32 + lo``). :func:`float_sum`
adds float64 values in four interleaved running sums (one per lane), combined at the end.
Both have a plain loop for the common case (every row, no nulls) and a general one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_LOW = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def int_sum(bits, signed, positions, use_pos, valid, use_valid):
    """``(lo, hi, count)`` of the 64-bit integers whose bits are ``bits`` (at ``positions`` when
    ``use_pos``; rows with ``valid`` False left out when ``use_valid``): ``lo`` = Σ low 32 bits,
    ``hi`` = Σ high 32 bits (arithmetic, when ``signed``: two's complement of the sum), both
    modulo 2^64 -- exact for fewer than 2^32 rows."""
    n = positions.shape[0] if use_pos else bits.shape[0]
    lo = np.uint64(0)
    hi = np.uint64(0)
    if not use_pos and not use_valid:
        if signed:
            for i in range(n):
                b = bits[i]
                lo += b & _LOW
                hi += np.uint64(np.int64(b) >> 32)
        else:
            for i in range(n):
                b = bits[i]
                lo += b & _LOW
                hi += b >> np.uint64(32)
        return lo, hi, n
    cnt = 0
    for j in range(n):
        i = positions[j] if use_pos else j
        if use_valid and not valid[i]:
            continue
        b = bits[i]
        lo += b & _LOW
        hi += np.uint64(np.int64(b) >> 32) if signed else b >> np.uint64(32)
        cnt += 1
    return lo, hi, cnt


@njit(cache=True, nogil=True)
def float_sum(values, positions, use_pos, valid, use_valid):
    """``(sum, count)`` of float64 ``values`` (rows as in :func:`int_sum`), in four running sums."""
    n = positions.shape[0] if use_pos else values.shape[0]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    if not use_pos and not use_valid:
        top = n - n % 4
        for i in range(0, top, 4):
            a0 += values[i]
            a1 += values[i + 1]
            a2 += values[i + 2]
            a3 += values[i + 3]
        for i in range(top, n):
            a0 += values[i]
        return (a0 + a1) + (a2 + a3), n
    cnt = 0
    for j in range(n):
        i = positions[j] if use_pos else j
        if use_valid and not valid[i]:
            continue
        if cnt & 3 == 0:
            a0 += values[i]
        elif cnt & 3 == 1:
            a1 += values[i]
        elif cnt & 3 == 2:
            a2 += values[i]
        else:
            a3 += values[i]
        cnt += 1
    return (a0 + a1) + (a2 + a3), cnt
