"""numba kernels of the Parquet page reader: raw Snappy blocks, decompressed or read in place.

Snappy is decoded here, inside the nogil kernels, so a page goes from the memory-mapped file to
decoded values without a Python round trip (``pyarrow.decompress`` is the reference in the tests).
Incompressible data -- random floats, wide integers, bit-packed codes -- is stored by Snappy as
literals only; such a block is read in place (:func:`snappy_literals`) instead of copied.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import load_u64, store_u64
from ._header_kernels import ST_CORRUPT, ST_OK, varint

NOT_LITERALS = -4  # snappy_literals: the block has copies (or too many literals)


@njit(cache=True, nogil=True, inline="always")
def put_bytes(dst, d, src, s, width):
    """Copy ``width`` bytes ``src[s:]`` to ``dst[d:]`` (fixed-length loops for 4 and 8 bytes)."""
    if width == 8:
        store_u64(dst, d, load_u64(src, s))
    elif width == 4:
        for b in range(4):
            dst[d + b] = src[s + b]
    else:
        for b in range(width):
            dst[d + b] = src[s + b]


@njit(cache=True, nogil=True, inline="always")
def _literal_length(src, pos, s1, tag):
    """``(length, position of the literal's bytes)`` of the Snappy literal whose tag byte was
    ``tag``, its 1-4 extra length bytes at ``pos`` read; position -1 when they are cut off."""
    ln = (tag >> 2) + 1
    if ln <= 60:
        return ln, pos
    nb = ln - 60
    if pos + nb > s1:
        return np.int64(0), np.int64(-1)
    ln = np.int64(0)
    for i in range(nb):
        ln |= np.int64(src[pos + i]) << (8 * i)
    return ln + 1, pos + nb


@njit(cache=True, nogil=True)
def snappy_decompress(src, s0, s1, dst):
    """Decompress the raw Snappy block ``src[s0:s1]`` into ``dst`` (exactly ``dst.shape[0]`` bytes).

    Returns ``ST_OK`` or ``ST_CORRUPT`` (wrong length, a copy reaching before the output's start,
    truncated tags). Cost: one pass. Elements move in unaligned 8-byte words: short literals as
    16 bytes at once and copies 8 at a time, overshooting into output not yet written (never past
    ``dst``'s end, never reading past ``s1``); overlapping copies (offset < 8) byte by byte.
    """
    n, pos = varint(src, s0, s1)
    if pos < 0 or n != dst.shape[0]:
        return ST_CORRUPT
    out = np.int64(0)
    while pos < s1:
        tag = np.int64(src[pos])
        pos += 1
        kind = tag & 3
        if kind == 0:
            ln = (tag >> 2) + 1
            if ln <= 16 and out + 16 <= n and pos + 16 <= s1:
                store_u64(dst, out, load_u64(src, pos))
                store_u64(dst, out + 8, load_u64(src, pos + 8))
                pos += ln
                out += ln
                continue
            ln, pos = _literal_length(src, pos, s1, tag)
            if pos < 0 or pos + ln > s1 or out + ln > n:
                return ST_CORRUPT
            i = np.int64(0)
            while i + 8 <= ln:
                store_u64(dst, out + i, load_u64(src, pos + i))
                i += 8
            while i < ln:
                dst[out + i] = src[pos + i]
                i += 1
            pos += ln
            out += ln
            continue
        if kind == 1:
            if pos >= s1:
                return ST_CORRUPT
            ln = 4 + ((tag >> 2) & 7)
            off = ((tag >> 5) << 8) | np.int64(src[pos])
            pos += 1
        elif kind == 2:
            if pos + 2 > s1:
                return ST_CORRUPT
            ln = (tag >> 2) + 1
            off = np.int64(src[pos]) | (np.int64(src[pos + 1]) << 8)
            pos += 2
        else:
            if pos + 4 > s1:
                return ST_CORRUPT
            ln = (tag >> 2) + 1
            off = np.int64(src[pos]) | (np.int64(src[pos + 1]) << 8) | (np.int64(src[pos + 2]) << 16) \
                | (np.int64(src[pos + 3]) << 24)
            pos += 4
        if off == 0 or off > out or out + ln > n:
            return ST_CORRUPT
        if off >= 8 and out + ln + 8 <= n:
            i = np.int64(0)
            while i < ln:  # each word's source lies wholly before its destination (off >= 8)
                store_u64(dst, out + i, load_u64(dst, out - off + i))
                i += 8
        else:  # overlapping (a repeated pattern) or at the very end: byte by byte
            for i in range(ln):
                dst[out + i] = dst[out - off + i]
        out += ln
    return ST_OK if out == n else ST_CORRUPT


@njit(cache=True, nogil=True)
def snappy_literals(src, s0, s1, n, ostart, spos):
    """If the Snappy block ``src[s0:s1]`` (``n`` bytes decoded) is made of literals only -- as
    a compressor writes incompressible data: random floats, wide integers, bit-packed codes --
    fill ``ostart[e]`` / ``spos[e]`` (where literal ``e``'s bytes go in the output / lie in
    ``src``; ``ostart[count] = n``) and return the count: the decoded bytes can then be read in
    place, nothing copied. Returns ``NOT_LITERALS`` at the first copy element or when more than
    ``len(ostart) - 1`` literals; ``ST_CORRUPT`` for bytes that are no Snappy block.
    Cost: one step per element (a 64 KiB literal is one step)."""
    m, pos = varint(src, s0, s1)
    if pos < 0 or m != n:
        return ST_CORRUPT
    out = np.int64(0)
    cnt = 0
    while pos < s1:
        tag = np.int64(src[pos])
        pos += 1
        if tag & 3 != 0:
            return NOT_LITERALS
        ln, pos = _literal_length(src, pos, s1, tag)
        if pos < 0 or pos + ln > s1 or out + ln > n:
            return ST_CORRUPT
        if cnt + 1 >= ostart.shape[0]:
            return NOT_LITERALS
        ostart[cnt] = out
        spos[cnt] = pos
        cnt += 1
        pos += ln
        out += ln
    if out != n:
        return ST_CORRUPT
    ostart[cnt] = n
    return cnt


@njit(cache=True, nogil=True)
def snappy_bytes(src, s0, s1, dst):
    """The decoded bytes of the Snappy block ``src[s0:s1]`` as ``(array, start)``: in place in
    ``src`` when the block is one literal, else decompressed into ``dst`` (start 0). Start -1:
    damaged."""
    ostart = np.empty(2, np.int64)
    spos = np.empty(2, np.int64)
    cnt = snappy_literals(src, s0, s1, dst.shape[0], ostart, spos)
    if cnt == 1:
        return src, spos[0]
    if cnt == ST_CORRUPT:
        return src, np.int64(-1)
    if snappy_decompress(src, s0, s1, dst) != ST_OK:
        return src, np.int64(-1)
    return dst, np.int64(0)


@njit(cache=True, nogil=True)
def gather_literals(out, src, ostart, spos, nlit, codes, sel, width):
    """``out`` rows ``sel[t]`` = dictionary entry ``codes[t]`` read in place from a Snappy
    dictionary page made of ``nlit`` literals (see :func:`snappy_literals`)."""
    for t in range(sel.shape[0]):
        a = codes[t] * width
        lo = 0
        hi = nlit - 1
        while lo < hi:  # the literal holding byte a: last e with ostart[e] <= a
            mid = (lo + hi + 1) >> 1
            if ostart[mid] <= a:
                lo = mid
            else:
                hi = mid - 1
        o = sel[t] * width
        if a + width <= ostart[lo + 1]:
            put_bytes(out, o, src, spos[lo] + a - ostart[lo], width)
        else:  # the entry straddles two literals
            e = lo
            for b in range(width):
                while a + b >= ostart[e + 1]:
                    e += 1
                out[o + b] = src[spos[e] + a + b - ostart[e]]
