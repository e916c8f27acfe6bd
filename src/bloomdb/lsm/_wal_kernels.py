"""numba kernel of the write-ahead log: a batch of puts laid out as one WAL record (:mod:`.wal`'s
format) from packed keys and values, so a 1000-put batch costs no Python work per operation.
Pure: arrays in, array out."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import copy_bytes


@njit(cache=True, nogil=True)
def _u32(out, p, v):
    for j in range(4):
        out[p + j] = np.uint8((v >> (8 * j)) & 0xFF)


@njit(cache=True, nogil=True)
def put_batch_record(kdata, koff, vdata, voff, first_seq):
    """The record ``u32 crc (left 0) | u32 L | u64 first_seq | u32 count | count x (u8 1, u32
    klen, key, u32 vlen, value)`` of the puts ``kdata[koff[i]:koff[i+1]]`` ->
    ``vdata[voff[i]:voff[i+1]]``; the caller writes the CRC32C of bytes ``4:`` at ``0``."""
    n = koff.shape[0] - 1
    L = 12 + 9 * n + (koff[n] - koff[0]) + (voff[n] - voff[0])
    out = np.empty(8 + L, np.uint8)
    out[0:4] = 0
    _u32(out, 4, L)
    s = np.uint64(first_seq)
    for j in range(8):
        out[8 + j] = np.uint8((s >> np.uint64(8 * j)) & np.uint64(0xFF))
    _u32(out, 16, n)
    p = 20
    for i in range(n):
        a = koff[i]
        kl = koff[i + 1] - a
        out[p] = 1
        _u32(out, p + 1, kl)
        p += 5
        copy_bytes(out, p, kdata, a, kl)  # one memmove (a slice copies byte by byte)
        p += kl
        b = voff[i]
        vl = voff[i + 1] - b
        _u32(out, p, vl)
        p += 4
        copy_bytes(out, p, vdata, b, vl)
        p += vl
    return out
