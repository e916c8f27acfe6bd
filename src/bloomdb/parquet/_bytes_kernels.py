"""numba kernels of the Parquet page reader: BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY values at chosen rows.

:func:`read_bytes_at` walks the page table :func:`walk_pages` made like
:func:`._page_kernels.read_at` does, and writes the wanted values as Arrow's (large) binary
layout: ``offsets`` (int64, one more than the rows) and ``data``. Encodings: PLAIN, dictionary
(RLE_DICTIONARY / PLAIN_DICTIONARY), DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, and for fixed-size
values BYTE_STREAM_SPLIT.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._delta_kernels import delta_lengths
from ._header_kernels import (
    P_BODY, P_CSIZE, P_ENCODING, P_FIRST_ROW, P_NROWS, P_NVALUES, P_TYPE, ST_CORRUPT, ST_OK,
    ST_UNSUPPORTED,
)
from ._hybrid_kernels import hybrid_at
from ._page_kernels import (
    CODEC_SNAPPY, ENC_BYTE_STREAM_SPLIT, ENC_DELTA_BYTE_ARRAY, ENC_DELTA_LENGTH_BYTE_ARRAY, ENC_PLAIN,
    ENC_PLAIN_DICTIONARY, ENC_RLE_DICTIONARY, levels_at, page_sections, split_work, wanted_rows,
)
from ._snappy_kernels import snappy_decompress


@njit(cache=True, nogil=True)
def _u32(buf, pos):
    return np.int64(buf[pos]) | (np.int64(buf[pos + 1]) << 8) | (np.int64(buf[pos + 2]) << 16) \
        | (np.int64(buf[pos + 3]) << 24)


@njit(cache=True, nogil=True)
def _plain_offsets(buf, pos, end, n, fixed, starts):
    """``starts[i]`` = where value ``i`` of ``n`` PLAIN values at ``buf[pos:end]`` lies, ``starts[n]``
    past the last one's end (``fixed`` > 0: values of that many bytes, no length prefixes; else a
    4-byte length, then the bytes -- ``starts`` then points at the bytes and the length is
    ``starts[i + 1] - starts[i] - 4``). Returns ``ST_OK`` or ``ST_CORRUPT``."""
    if fixed > 0:
        if n * fixed > end - pos:
            return ST_CORRUPT
        for i in range(n + 1):
            starts[i] = pos + i * fixed
        return ST_OK
    for i in range(n):
        if pos + 4 > end:
            return ST_CORRUPT
        ln = _u32(buf, pos)
        starts[i] = pos + 4
        pos += 4 + ln
        if pos > end:
            return ST_CORRUPT
    starts[n] = pos + 4
    return ST_OK


@njit(cache=True, nogil=True)
def _grow(data, at, need):
    """A copy of ``data[:at]`` in a buffer of at least ``need`` bytes (doubling: amortised, one
    extra copy of the output in all)."""
    grown = np.empty(max(need, 2 * data.shape[0]), np.uint8)
    grown[:at] = data[:at]
    return grown


@njit(cache=True, nogil=True)
def _put(data, at, src, s, ln):
    """Copy ``src[s:s+ln]`` to ``data[at:]``; returns ``data``, or a larger copy when it was too short."""
    if at + ln > data.shape[0]:
        data = _grow(data, at, at + ln)
    if ln <= 16:
        for b in range(ln):
            data[at + b] = src[s + b]
    else:
        data[at:at + ln] = src[s:s + ln]
    return data


@njit(cache=True, nogil=True)
def _page_values(enc, vbuf, v0, v1, nvals, fixed, dbytes, doff, dict_n, vidx, sel, valid, k0, j,
                 offsets, data, scratch):
    """Write rows ``k0 .. j`` of one page (``vidx``: each row's index among the page's ``nvals``
    encoded values; ``sel``: the valid rows, ascending) to ``offsets`` / ``data`` (nulls are
    empty). Returns ``(status, data)``: ``data`` grown when it was too small."""
    k = sel.shape[0]
    starts = np.empty(0, np.int64)  # where each value's bytes start (PLAIN, DELTA_LENGTH)
    lens = np.empty(0, np.int64)
    src = vbuf
    if enc == ENC_RLE_DICTIONARY or enc == ENC_PLAIN_DICTIONARY:
        if dict_n < 0:
            return ST_CORRUPT, data
        codes = scratch[k:2 * k]
        if k > 0:
            if v0 >= v1:
                return ST_CORRUPT, data
            bw = np.int64(vbuf[v0])
            if bw > 32:
                return ST_CORRUPT, data
            want = scratch[:k]
            for t in range(k):
                want[t] = vidx[sel[t]]
            if want[k - 1] >= nvals:
                return ST_CORRUPT, data
            if bw == 0:
                codes[:] = 0
            elif hybrid_at(vbuf, v0 + 1, v1, bw, want, codes) != ST_OK:
                return ST_CORRUPT, data
    elif enc == ENC_PLAIN or enc == ENC_DELTA_LENGTH_BYTE_ARRAY or enc == ENC_DELTA_BYTE_ARRAY \
            or (enc == ENC_BYTE_STREAM_SPLIT and fixed > 0):
        top = vidx[sel[k - 1]] + 1 if k > 0 else 0  # values read up to the last wanted one
        if top > nvals:
            return ST_CORRUPT, data
        if enc == ENC_PLAIN:
            starts = np.empty(top + 1, np.int64)
            if _plain_offsets(vbuf, v0, v1, top, fixed, starts) != ST_OK:
                return ST_CORRUPT, data
        elif enc == ENC_DELTA_LENGTH_BYTE_ARRAY:
            lens, pos = delta_lengths(vbuf, v0, v1, top)
            if pos < 0:
                return ST_CORRUPT, data
            starts = np.empty(top + 1, np.int64)
            starts[0] = pos
            for i in range(top):
                starts[i + 1] = starts[i] + lens[i]
            if starts[top] > v1:
                return ST_CORRUPT, data
        elif enc == ENC_DELTA_BYTE_ARRAY:
            st, src, starts = _prefixed(vbuf, v0, v1, top, vidx, sel)
            if st != ST_OK:
                return st, data
    else:
        return ST_UNSUPPORTED, data
    c = 0
    for t in range(k0, j):
        at = offsets[t]
        if not valid[t]:
            offsets[t + 1] = at
            continue
        if enc == ENC_RLE_DICTIONARY or enc == ENC_PLAIN_DICTIONARY:
            code = scratch[k + c]
            if code < 0 or code >= dict_n:
                return ST_CORRUPT, data
            s = doff[code]
            ln = doff[code + 1] - s - (0 if fixed > 0 else 4)
            data = _put(data, at, dbytes, s, ln)
        elif enc == ENC_BYTE_STREAM_SPLIT:
            i = vidx[t]
            ln = fixed
            if nvals * fixed > v1 - v0:
                return ST_CORRUPT, data
            if at + ln > data.shape[0]:
                data = _grow(data, at, at + ln)
            for b in range(fixed):
                data[at + b] = vbuf[v0 + b * nvals + i]
        elif enc == ENC_DELTA_BYTE_ARRAY:
            s = starts[2 * c]
            ln = starts[2 * c + 1]
            data = _put(data, at, src, s, ln)
        else:
            i = vidx[t]
            s = starts[i]
            ln = starts[i + 1] - s - (4 if enc == ENC_PLAIN and fixed == 0 else 0)
            data = _put(data, at, vbuf, s, ln)
        if fixed > 0 and ln != fixed:
            return ST_CORRUPT, data
        offsets[t + 1] = at + ln
        c += 1
    return ST_OK, data


@njit(cache=True, nogil=True)
def _prefixed(vbuf, v0, v1, top, vidx, sel):
    """DELTA_BYTE_ARRAY: rebuild values ``0 .. top`` (each = a prefix of the one before + its
    suffix) and keep the wanted ones (``vidx[sel]``, ascending, repeats allowed) in a new buffer.
    Returns ``(status, buffer, spans)``: wanted value ``c`` is ``buffer[spans[2c]:]`` of length
    ``spans[2c + 1]``. Cost: two passes over the page's first ``top`` values."""
    k = sel.shape[0]
    spans = np.empty(2 * k, np.int64)
    plens, pos = delta_lengths(vbuf, v0, v1, top)  # the prefix lengths, then the suffix lengths
    if pos < 0:
        return ST_CORRUPT, np.empty(0, np.uint8), spans
    slens, dpos = delta_lengths(vbuf, pos, v1, top)
    if dpos < 0:
        return ST_CORRUPT, np.empty(0, np.uint8), spans
    prev = np.empty(max(v1 - dpos, 1), np.uint8)  # no value is longer than all suffix bytes so far
    keep = np.empty(0, np.uint8)
    for rnd in range(2):  # sizes of the kept values first, then their bytes
        plen = np.int64(0)
        s = dpos
        c = 0
        out_at = np.int64(0)
        for i in range(top):
            p = plens[i]
            ln = slens[i]
            if p > plen or ln > v1 - s:
                return ST_CORRUPT, np.empty(0, np.uint8), spans
            prev[p:p + ln] = vbuf[s:s + ln]
            s += ln
            plen = p + ln
            while c < k and vidx[sel[c]] == i:
                if rnd == 1:
                    keep[out_at:out_at + plen] = prev[:plen]
                spans[2 * c] = out_at
                spans[2 * c + 1] = plen
                out_at += plen
                c += 1
        if rnd == 0:
            keep = np.empty(max(out_at, 1), np.uint8)
    return ST_OK, keep, spans


@njit(cache=True, nogil=True)
def _dictionary(buf, pages, p, codec, fixed, dbytes):
    """Decode dictionary page ``p`` into ``dbytes`` and index its entries: ``(status, offsets)``
    with entry ``e`` at ``dbytes[offsets[e]:]`` (see :func:`_plain_offsets`)."""
    body = pages[p, P_BODY]
    csize = pages[p, P_CSIZE]
    n = pages[p, P_NVALUES]
    none = np.zeros(1, np.int64)
    if pages[p, P_ENCODING] != ENC_PLAIN and pages[p, P_ENCODING] != ENC_PLAIN_DICTIONARY:
        return ST_UNSUPPORTED, none
    if codec == CODEC_SNAPPY:
        if dbytes.shape[0] > 0 and snappy_decompress(buf, body, body + csize, dbytes) != ST_OK:
            return ST_CORRUPT, none
    else:
        dbytes[:] = buf[body:body + csize]
    if n < 0 or n * (fixed if fixed > 0 else 4) > dbytes.shape[0]:
        return ST_CORRUPT, none
    doff = np.empty(n + 1, np.int64)
    if _plain_offsets(dbytes, 0, dbytes.shape[0], n, fixed, doff) != ST_OK:
        return ST_CORRUPT, none
    return ST_OK, doff


@njit(cache=True, nogil=True)
def read_bytes_at(buf, pages, npages, codec, fixed, max_def, positions, offsets, data, valid, iwork, bwork):
    """Byte-string values of a column chunk at ascending row ``positions`` (see the module doc).

    ``fixed``: the width of a FIXED_LEN_BYTE_ARRAY column, 0 for BYTE_ARRAY. ``offsets`` (int64,
    ``len(positions) + 1``) and ``data`` (uint8) receive the values in Arrow's large-binary
    layout (nulls empty), ``valid`` whether each row is not null. ``iwork`` (int64, at least ``4 *
    len(positions)``) and ``bwork`` (uint8, at least :func:`._page_kernels.work_bytes`) are scratch.

    Returns ``(status, data)``: ``ST_OK``, ``ST_CORRUPT`` or ``ST_UNSUPPORTED``, and ``data`` or
    the larger buffer it grew into (the values are ``data[:offsets[-1]]``).
    Cost: the dictionary page and the data pages holding a wanted row are decompressed; PLAIN and
    DELTA pages are read up to their last wanted value, dictionary codes only where wanted.
    """
    m = positions.shape[0]
    ok, dbytes, page_buf, vidx, scratch, selw = split_work(pages, npages, codec, positions, iwork, bwork)
    if not ok or offsets.shape[0] != m + 1:
        return ST_CORRUPT, data
    doff = np.zeros(1, np.int64)
    dict_n = np.int64(-1)
    offsets[0] = 0
    j = 0
    for p in range(npages):
        kind = pages[p, P_TYPE]
        if kind == 2:
            if dict_n >= 0:
                return ST_CORRUPT, data  # a second dictionary page
            st, doff = _dictionary(buf, pages, p, codec, fixed, dbytes)
            if st != ST_OK:
                return st, data
            dict_n = doff.shape[0] - 1
            continue
        k0 = j
        j = wanted_rows(pages, p, positions, k0)
        if j < 0:
            return ST_CORRUPT, data
        if j == k0:
            continue  # no wanted row here (or an index page): the page is not even decompressed
        first = pages[p, P_FIRST_ROW]
        nrows = pages[p, P_NROWS]
        st, lbuf, l0, l1, vbuf, v0, v1 = page_sections(buf, pages, p, codec, max_def, page_buf)
        if st != ST_OK:
            return st, data
        ndef, c = levels_at(lbuf, l0, l1, max_def, first, nrows, positions, k0, j, valid, vidx, selw)
        if ndef < 0:
            return ST_CORRUPT, data
        st, data = _page_values(pages[p, P_ENCODING], vbuf, v0, v1, ndef, fixed, dbytes, doff, dict_n, vidx,
                                selw[:c], valid, k0, j, offsets, data, scratch)
        if st != ST_OK:
            return st, data
    if j < m:
        return ST_CORRUPT, data
    return ST_OK, data
