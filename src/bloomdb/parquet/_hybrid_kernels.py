"""numba kernels of the Parquet page reader: the RLE / bit-packed hybrid encoding.

Dictionary codes and definition levels are stored as runs: an RLE run (one value, a count) or a
bit-packed run (groups of 8 values of ``width`` bits). These kernels decode them at chosen value
indices (:func:`hybrid_at`, :func:`defined_at`) or all in order straight through the dictionary into the
output (:func:`unpack_gather`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import load_u64
from ._header_kernels import ST_CORRUPT, ST_OK, varint


@njit(cache=True, nogil=True, inline="always")
def _read_bits(buf, byte0, bit, width, end):
    """``width`` (<= 32) bits little-endian starting ``bit`` bits after ``buf[byte0]``; -1 if past ``end``."""
    first = byte0 + (bit >> 3)
    shift = bit & 7
    if first + 8 <= end:  # the common case: one unaligned 8-byte load
        v = load_u64(buf, first)
    else:
        nbytes = (shift + width + 7) >> 3
        if first + nbytes > end:
            return np.int64(-1)
        v = np.uint64(0)
        for i in range(nbytes):
            v |= np.uint64(buf[first + i]) << np.uint64(8 * i)
    return np.int64((v >> np.uint64(shift)) & np.uint64((1 << width) - 1))


@njit(cache=True, nogil=True, inline="always")
def _rle_value(buf, pos, end, vbytes):
    """``(value, position after it)`` of an RLE run's ``vbytes``-byte little-endian value; -1: cut off."""
    if pos + vbytes > end:
        return np.int64(0), np.int64(-1)
    v = np.int64(0)
    for i in range(vbytes):
        v |= np.int64(buf[pos + i]) << (8 * i)
    return v, pos + vbytes


@njit(cache=True, nogil=True, inline="always")
def _run_header(buf, pos, end):
    """A run's header varint and the position after it; -1 when cut off or when it claims more
    than 2^40 values (no page holds that many, and the counts below must not overflow)."""
    h, pos = varint(buf, pos, end)
    if pos < 0 or (h >> 1) > (1 << 40):
        return np.int64(0), np.int64(-1)
    return h, pos


@njit(cache=True, nogil=True, inline="always")
def _packed_value(buf, pos, i, width, stop):
    """Value ``i`` of the bit-packed run whose bytes are ``buf[pos:stop]``; -1 past ``stop``."""
    return _read_bits(buf, pos, i * width, width, stop)


@njit(cache=True, nogil=True)
def hybrid_at(buf, pos, end, width, wanted, out):
    """Decode the RLE / bit-packed hybrid run sequence at ``buf[pos:end]`` (values of ``width``
    bits) at the ascending value indices ``wanted`` into ``out``. Runs without a wanted index are
    stepped over, not decoded. Returns ``ST_OK`` or ``ST_CORRUPT`` (runs end before the last
    wanted index, or reach past ``end``)."""
    m = wanted.shape[0]
    j = 0
    base = np.int64(0)
    vbytes = (width + 7) >> 3
    while j < m:
        h, pos = _run_header(buf, pos, end)
        if pos < 0:
            return ST_CORRUPT
        if h & 1:
            count = (h >> 1) * 8
            nb = (h >> 1) * width
            if nb > end - pos:
                # the last bit-packed run may be cut to the bytes its real values need
                nb = end - pos
            while j < m and wanted[j] < base + count:  # each read where it lies (one unaligned load)
                v = _packed_value(buf, pos, wanted[j] - base, width, pos + nb)
                if v < 0:
                    return ST_CORRUPT
                out[j] = v
                j += 1
            pos += nb
        else:
            count = h >> 1
            v, pos = _rle_value(buf, pos, end, vbytes)
            if pos < 0:
                return ST_CORRUPT
            while j < m and wanted[j] < base + count:
                out[j] = v
                j += 1
        base += count
    return ST_OK


@njit(cache=True, nogil=True)
def all_defined(buf, pos, end, nrows):
    """Whether the definition levels at ``buf[pos:end]`` are one RLE run of level 1 covering
    ``nrows`` rows (how writers store a page without nulls)."""
    h, pos = varint(buf, pos, end)
    return pos >= 0 and pos < end and (h & 1) == 0 and (h >> 1) >= nrows and buf[pos] == 1


@njit(cache=True, nogil=True)
def defined_at(buf, pos, end, first, nrows, rows, valid, vidx):
    """Definition levels (max level 1, bit width 1) of a page's ``nrows`` rows (the chunk's rows
    ``first`` ..) at ``buf[pos:end]``: for each ascending row index in ``rows`` set ``valid``
    (level 1) and ``vidx`` (how many defined rows of the page come before it = its index among
    the page's encoded values). Returns the number of defined rows in the whole page, or
    ``ST_CORRUPT``."""
    m = rows.shape[0]
    j = 0
    base = np.int64(first)
    stop = first + nrows
    before = np.int64(0)  # defined rows before `base`
    while base < stop:
        h, pos = _run_header(buf, pos, end)
        if pos < 0:
            return ST_CORRUPT
        if h & 1:
            count = (h >> 1) * 8
            nb = min(h >> 1, end - pos)
            limit = min(count, stop - base)
            cnt = np.int64(0)  # defined among the run's first `upto` rows
            upto = np.int64(0)
            while j < m and rows[j] < base + count:
                r = rows[j] - base
                while upto < r:
                    if (upto >> 3) >= nb:
                        return ST_CORRUPT
                    cnt += (buf[pos + (upto >> 3)] >> (upto & 7)) & 1
                    upto += 1
                if (r >> 3) >= nb:
                    return ST_CORRUPT
                d = (buf[pos + (r >> 3)] >> (r & 7)) & 1
                valid[j] = d == 1
                vidx[j] = before + cnt
                j += 1
            while upto < limit:
                if (upto >> 3) >= nb:
                    return ST_CORRUPT
                cnt += (buf[pos + (upto >> 3)] >> (upto & 7)) & 1
                upto += 1
            before += cnt
            pos += nb
        else:
            count = h >> 1
            if pos >= end:
                return ST_CORRUPT
            d = buf[pos] & 1
            pos += 1
            while j < m and rows[j] < base + count:
                valid[j] = d == 1
                vidx[j] = before + (rows[j] - base) * d
                j += 1
            before += min(count, stop - base) * d
        base += count
    if j < m:
        return ST_CORRUPT
    return before


@njit(cache=True, nogil=True)
def unpack_gather(buf, pos, end, width, dictionary, dict_n, out, start, n):
    """``out[start + i] = dictionary[code i]`` for the first ``n`` dictionary codes (``width`` <=
    32 bits) of the RLE / bit-packed hybrid run sequence at ``buf[pos:end]``: codes go straight
    into the typed output, never through a codes array. ``dictionary`` and ``out`` are typed views
    of one dtype. Returns ``ST_OK`` or ``ST_CORRUPT`` (runs cut off, or a code ``>= dict_n``).

    Cost: one pass; inside a bit-packed run every value is one unaligned 8-byte load, a shift and
    a mask (no per-value bounds test) up to the run's last 8 bytes, which are read checked."""
    if n > 0 and (dict_n <= 0 or width > 32):
        return ST_CORRUPT
    vbytes = (width + 7) >> 3
    mask = np.uint64((1 << width) - 1)
    last = np.uint64(dict_n - 1) if dict_n > 0 else np.uint64(0)
    i = np.int64(0)
    while i < n:
        h, pos = _run_header(buf, pos, end)
        if pos < 0:
            return ST_CORRUPT
        if h & 1:
            nb = min((h >> 1) * width, end - pos)
            take = min((h >> 1) * 8, n - i)
            if width == 0:
                safe = take
            elif nb >= 8:
                safe = min(take, ((nb - 7) * 8 - 1) // width + 1)
            else:
                safe = np.int64(0)
            bad = False
            o = start + i
            for t in range(safe):  # the 8 bytes at (t * width) >> 3 lie before pos + nb
                b = t * width
                c = (load_u64(buf, pos + (b >> 3)) >> np.uint64(b & 7)) & mask if width else np.uint64(0)
                bad |= c > last
                out[o + t] = dictionary[min(c, last)]
            if bad:
                return ST_CORRUPT
            for t in range(safe, take):
                v = _packed_value(buf, pos, t, width, pos + nb)
                if v < 0 or v >= dict_n:
                    return ST_CORRUPT
                out[o + t] = dictionary[v]
            pos += nb
        else:
            v, pos = _rle_value(buf, pos, end, vbytes)
            if pos < 0 or v >= dict_n:
                return ST_CORRUPT
            take = min(h >> 1, n - i)
            out[start + i:start + i + take] = dictionary[v]
        i += take
    return ST_OK
