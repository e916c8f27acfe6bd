"""numba kernels of the Parquet page reader: the DELTA_BINARY_PACKED encoding.

A DELTA_BINARY_PACKED stream is a header (block size, miniblocks per block, value count, first
value), then blocks: a zigzag min delta, one bit width per miniblock, and the miniblocks' deltas
(minus the min delta) bit-packed little-endian. Integer pages (INT32 / INT64) use it for their
values, DELTA_LENGTH_BYTE_ARRAY for its lengths, DELTA_BYTE_ARRAY for its prefix and suffix
lengths. Arithmetic wraps modulo 2**64 (INT32 values are the low 32 bits, as the format says).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._header_kernels import varint
from ._hybrid_kernels import _read_bits

MAX_VALUES = 1 << 40  # no page holds more; larger counts are damage (and would overflow below)


@njit(cache=True, nogil=True, inline="always")
def _bits(buf, byte0, bit, width, end):
    """``width`` (0..64) bits little-endian ``bit`` bits after ``buf[byte0]`` as uint64; ``ok``
    False when they reach past ``end``."""
    if width == 0:
        return np.uint64(0), True
    if width <= 32:
        v = _read_bits(buf, byte0, bit, width, end)
        return np.uint64(v), v >= 0
    lo = _read_bits(buf, byte0, bit, 32, end)
    hi = _read_bits(buf, byte0, bit + 32, width - 32, end)
    return np.uint64(lo) | (np.uint64(hi) << np.uint64(32)), lo >= 0 and hi >= 0


@njit(cache=True, nogil=True, inline="always")
def _unzigzag(z):
    """A zigzag varint's value (read as int64) as uint64 two's complement (a logical shift: the
    varint of -2**63 has its top bit set)."""
    u = np.uint64(z)
    return (u >> np.uint64(1)) ^ (np.uint64(0) - (u & np.uint64(1)))


@njit(cache=True, nogil=True)
def delta_decode(buf, pos, end, out):
    """Decode the DELTA_BINARY_PACKED stream at ``buf[pos:end]``: its first ``len(out)`` values
    (fewer when the stream holds fewer) go to ``out`` (uint64, two's complement).

    Returns ``(count, stream end)``: the stream's value count and the position after its last
    miniblock (where the next section of the page starts); stream end -1 when the bytes are
    damaged (bad header, a bit width over 64, a miniblock reaching past ``end``). Cost: the
    headers of every block, and the miniblocks holding the first ``len(out)`` values.
    """
    block, pos = varint(buf, pos, end)
    if pos < 0:
        return np.int64(0), np.int64(-1)
    nmini, pos = varint(buf, pos, end)
    if pos < 0:
        return np.int64(0), np.int64(-1)
    total, pos = varint(buf, pos, end)
    if pos < 0:
        return np.int64(0), np.int64(-1)
    z, pos = varint(buf, pos, end)
    if pos < 0 or block <= 0 or block % 128 != 0 or nmini <= 0 or block % nmini != 0 \
            or (block // nmini) % 32 != 0 or total < 0 or total > MAX_VALUES:
        return np.int64(0), np.int64(-1)
    per = block // nmini
    want = min(out.shape[0], total)
    value = _unzigzag(z)
    if want > 0:
        out[0] = value
    i = np.int64(1)  # index of the next value
    while i < total:
        zmin, pos = varint(buf, pos, end)
        if pos < 0 or pos + nmini > end:
            return np.int64(0), np.int64(-1)
        mind = _unzigzag(zmin)
        widths = pos
        pos += nmini
        for b in range(nmini):
            if i >= total:
                break  # unneeded miniblocks of the last block are not stored (their widths are)
            w = np.int64(buf[widths + b])
            if w > 64:
                return np.int64(0), np.int64(-1)
            nbytes = per * w // 8
            if nbytes > end - pos:
                return np.int64(0), np.int64(-1)
            take = min(per, want - i)
            for t in range(take):
                d, ok = _bits(buf, pos, t * w, w, pos + nbytes)
                if not ok:
                    return np.int64(0), np.int64(-1)
                value = value + mind + d
                out[i + t] = value
            i += per
            pos += nbytes
    return total, pos


@njit(cache=True, nogil=True)
def delta_lengths(buf, pos, end, n):
    """The first ``n`` values of the DELTA_BINARY_PACKED lengths stream at ``buf[pos:end]`` as
    int64, and the stream end; end -1 when damaged, fewer than ``n`` values or a negative length."""
    lens = np.empty(max(n, 1), np.uint64)
    total, stop = delta_decode(buf, pos, end, lens[:n])
    if stop < 0 or total < n:
        return np.zeros(0, np.int64), np.int64(-1)
    out = np.empty(n, np.int64)
    for t in range(n):
        out[t] = np.int64(lens[t])
        if out[t] < 0:
            return np.zeros(0, np.int64), np.int64(-1)
    return out, stop
