"""numba kernels of the Parquet page reader: a column chunk's values at chosen rows.

:func:`read_at` goes through the page table :func:`walk_pages` made: the dictionary page and the
data pages holding a wanted row are decompressed (:mod:`._snappy_kernels`), their levels and codes
decoded at the wanted rows (:mod:`._hybrid_kernels`) and the values copied out.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._header_kernels import (
    P_BODY, P_COMPRESSED, P_CSIZE, P_DEF_ENC, P_DEF_LEN, P_ENCODING, P_FIRST_ROW, P_NROWS, P_NVALUES, P_REP_LEN,
    P_TYPE, P_USIZE, ST_CORRUPT, ST_OK, ST_UNSUPPORTED,
)
from ._delta_kernels import delta_decode
from ._hybrid_kernels import all_defined, defined_at, hybrid_at, unpack_gather
from ._snappy_kernels import NOT_LITERALS, gather_literals, put_bytes, snappy_bytes, snappy_decompress, snappy_literals

ENC_PLAIN = 0
ENC_RLE = 3
ENC_PLAIN_DICTIONARY = 2
ENC_RLE_DICTIONARY = 8
ENC_BYTE_STREAM_SPLIT = 9
ENC_DELTA_BINARY_PACKED = 5
ENC_DELTA_LENGTH_BYTE_ARRAY = 6
ENC_DELTA_BYTE_ARRAY = 7
CODEC_UNCOMPRESSED = 0
CODEC_SNAPPY = 1


@njit(cache=True, nogil=True)
def _gather(out, dictionary, codes, sel):
    """``out[sel[t]] = dictionary[codes[t]]`` (typed views; codes already checked)."""
    for t in range(sel.shape[0]):
        out[sel[t]] = dictionary[codes[t]]


@njit(cache=True, nogil=True)
def _no_repeats(idx, sel):
    """Whether the ascending value indices ``idx[sel]`` hold no repeats (repeated positions)."""
    for t in range(1, sel.shape[0]):
        if idx[sel[t]] == idx[sel[t - 1]]:
            return False
    return True


@njit(cache=True, nogil=True)
def _copy_values(enc, vbuf, v0, v1, nvals, width, dictionary, dict_n, lit, nlit, idx, sel, out, scratch):
    """Copy the encoded values at indices ``idx[sel]`` (ascending) of one page into ``out`` rows ``sel``.

    ``vbuf[v0:v1]`` holds the page's values section (``nvals`` values); ``out`` is uint8 with
    ``width`` bytes per row. The dictionary is ``dictionary`` (``dict_n`` entries), or, when
    ``nlit > 0``, read in place from ``lit = (src, ostart, spos)`` (see :func:`snappy_literals`)."""
    k = sel.shape[0]
    if enc == ENC_PLAIN:
        if nvals * width > v1 - v0:
            return ST_CORRUPT
        if k > 0 and sel[k - 1] - sel[0] == k - 1 and idx[sel[k - 1]] - idx[sel[0]] == k - 1 \
                and idx[sel[k - 1]] < nvals and _no_repeats(idx, sel):  # consecutive rows and values: one copy
            o = sel[0] * width
            i = v0 + idx[sel[0]] * width
            out[o:o + k * width] = vbuf[i:i + k * width]
            return ST_OK
        for t in range(k):
            i = idx[sel[t]]
            if i >= nvals:
                return ST_CORRUPT
            put_bytes(out, sel[t] * width, vbuf, v0 + i * width, width)
        return ST_OK
    if enc == ENC_BYTE_STREAM_SPLIT:
        if nvals * width > v1 - v0:
            return ST_CORRUPT
        for t in range(k):
            i = idx[sel[t]]
            if i >= nvals:
                return ST_CORRUPT
            o = sel[t] * width
            for b in range(width):
                out[o + b] = vbuf[v0 + b * nvals + i]
        return ST_OK
    if enc == ENC_RLE_DICTIONARY or enc == ENC_PLAIN_DICTIONARY:
        if dict_n < 0:
            return ST_CORRUPT  # dictionary-encoded page without a dictionary page
        if v0 >= v1:
            return ST_CORRUPT if k > 0 else ST_OK
        bw = np.int64(vbuf[v0])
        if bw > 32:
            return ST_CORRUPT
        want = scratch[:k]
        for t in range(k):
            want[t] = idx[sel[t]]
        codes = scratch[k:2 * k]
        if bw == 0:
            codes[:] = 0
        else:
            st = hybrid_at(vbuf, v0 + 1, v1, bw, want, codes)
            if st != ST_OK:
                return st
        for t in range(k):
            if codes[t] >= dict_n:
                return ST_CORRUPT
        if nlit > 0:
            gather_literals(out, lit[0], lit[1], lit[2], nlit, codes, sel, width)
        elif width == 8:
            _gather(out.view(np.uint64), dictionary[:dict_n * 8].view(np.uint64), codes, sel)
        elif width == 4:
            _gather(out.view(np.uint32), dictionary[:dict_n * 4].view(np.uint32), codes, sel)
        else:
            for t in range(k):
                put_bytes(out, sel[t] * width, dictionary, codes[t] * width, width)
        return ST_OK
    if enc == ENC_DELTA_BINARY_PACKED and (width == 4 or width == 8):
        if k == 0:
            return ST_OK
        top = idx[sel[k - 1]] + 1  # values decoded up to the last wanted one
        if top > nvals:
            return ST_CORRUPT
        vals = np.empty(top, np.uint64)
        total, stop = delta_decode(vbuf, v0, v1, vals)
        if stop < 0 or total < top:
            return ST_CORRUPT
        for t in range(k):
            v = vals[idx[sel[t]]]
            o = sel[t] * width
            for b in range(width):
                out[o + b] = np.uint8((v >> np.uint64(8 * b)) & np.uint64(255))
        return ST_OK
    return ST_UNSUPPORTED


@njit(cache=True, nogil=True)
def ascending(positions):
    """``(ascending, strictly)``: whether ``positions`` never decreases, and never repeats either.
    One branch-free pass."""
    up = True
    strict = True
    for t in range(1, positions.shape[0]):
        up &= positions[t] >= positions[t - 1]
        strict &= positions[t] > positions[t - 1]
    return up, strict


@njit(cache=True, nogil=True)
def page_sections(buf, pages, p, codec, max_def, page_buf):
    """``(status, lbuf, l0, l1, vbuf, v0, v1)`` of data page ``p``: its definition levels at
    ``lbuf[l0:l1]`` and its values section at ``vbuf[v0:v1]``, Snappy pages decompressed into
    ``page_buf`` (at least the page's uncompressed size). Status ``ST_UNSUPPORTED`` for repetition
    levels or BIT_PACKED definition levels, ``ST_CORRUPT`` for lengths that do not fit."""
    kind = pages[p, P_TYPE]
    body = pages[p, P_BODY]
    csize = pages[p, P_CSIZE]
    usize = pages[p, P_USIZE]
    # the levels section (lbuf[l0:l1]) and the values section (vbuf[v0:v1])
    if kind == 0:
        if codec == CODEC_SNAPPY and usize > 0:  # an empty page may store no Snappy block at all
            lbuf, l0 = snappy_bytes(buf, body, body + csize, page_buf[:usize])
            if l0 < 0:
                return ST_CORRUPT, buf, 0, 0, buf, 0, 0
            l1 = l0 + usize
        elif codec == CODEC_SNAPPY:
            lbuf = buf
            l0 = body
            l1 = body
        else:
            lbuf = buf
            l0 = body
            l1 = body + csize
        vbuf = lbuf
        v0 = l0
        v1 = l1
        if max_def > 0:
            if pages[p, P_DEF_ENC] != ENC_RLE and pages[p, P_DEF_ENC] != -1:
                return ST_UNSUPPORTED, buf, 0, 0, buf, 0, 0  # BIT_PACKED levels (deprecated): pyarrow reads them
            if l0 + 4 > l1:
                return ST_CORRUPT, buf, 0, 0, buf, 0, 0
            dlen = np.int64(lbuf[l0]) | (np.int64(lbuf[l0 + 1]) << 8) | (np.int64(lbuf[l0 + 2]) << 16) \
                | (np.int64(lbuf[l0 + 3]) << 24)
            if dlen > l1 - l0 - 4:
                return ST_CORRUPT, buf, 0, 0, buf, 0, 0
            l0 += 4
            l1 = l0 + dlen
            v0 = l1
    else:
        dlen = pages[p, P_DEF_LEN]
        rlen = pages[p, P_REP_LEN]
        if rlen != 0:
            return ST_UNSUPPORTED, buf, 0, 0, buf, 0, 0
        lbuf = buf
        l0 = body
        l1 = body + dlen
        n = usize - dlen - rlen
        if n < 0:
            return ST_CORRUPT, buf, 0, 0, buf, 0, 0
        if codec == CODEC_SNAPPY and pages[p, P_COMPRESSED] != 0 and n > 0:  # no values: maybe no block
            vbuf, v0 = snappy_bytes(buf, body + dlen + rlen, body + csize, page_buf[:n])
            if v0 < 0:
                return ST_CORRUPT, buf, 0, 0, buf, 0, 0
            v1 = v0 + n
        elif codec == CODEC_SNAPPY and pages[p, P_COMPRESSED] != 0:
            vbuf = buf
            v0 = body + dlen + rlen
            v1 = v0
        else:
            vbuf = buf
            v0 = body + dlen + rlen
            v1 = body + csize
    return ST_OK, lbuf, l0, l1, vbuf, v0, v1


@njit(cache=True, nogil=True)
def levels_at(lbuf, l0, l1, max_def, first, nrows, positions, k0, j, valid, vidx, sel):
    """For the wanted rows ``positions[k0:j]`` of a page (chunk rows ``first`` .. ``first +
    nrows``) whose definition levels are ``lbuf[l0:l1]``: ``valid[t]`` (not null), ``vidx[t]`` (the
    row's index among the page's encoded values) and ``sel[:count]`` (the ``t`` of the valid ones).
    Returns ``(defined values in the page, count)``; defined values ``ST_CORRUPT`` when damaged."""
    if max_def == 0:
        for t in range(k0, j):
            valid[t] = True
            vidx[t] = positions[t] - first
            sel[t - k0] = t
        return nrows, j - k0
    ndef = defined_at(lbuf, l0, l1, first, nrows, positions[k0:j], valid[k0:j], vidx[k0:j])
    c = 0
    for t in range(k0, j):
        if valid[t]:
            sel[c] = t
            c += 1
    return ndef, c


@njit(cache=True, nogil=True)
def work_bytes(pages, npages, codec):
    """Bytes of ``bwork`` :func:`read_at` needs: the dictionary page (decompressed) plus the
    largest decompressed Snappy data page."""
    d = np.int64(0)
    big = np.int64(0)
    for p in range(npages):
        kind = pages[p, P_TYPE]
        if kind == 2:
            d = max(d, pages[p, P_USIZE] if codec == CODEC_SNAPPY else pages[p, P_CSIZE])
        elif codec == CODEC_SNAPPY and (kind == 0 or kind == 3):
            big = max(big, pages[p, P_USIZE])
    return d + big


@njit(cache=True, nogil=True)
def wanted_rows(pages, p, positions, j):
    """The end of the run of wanted ``positions`` from ``j`` on that lie in data page ``p``: ``j``
    when none (or ``p`` is no data page), -1 when ``positions[j]`` lies before the page (damage)."""
    kind = pages[p, P_TYPE]
    if kind != 0 and kind != 3:
        return j
    first = pages[p, P_FIRST_ROW]
    end = first + pages[p, P_NROWS]
    m = positions.shape[0]
    if j >= m or positions[j] >= end:
        return j
    if positions[j] < first:
        return -1
    return j + np.searchsorted(positions[j:], end)  # ascending: the first at or past the page's end


@njit(cache=True, nogil=True)
def split_work(pages, npages, codec, positions, iwork, bwork):
    """Check ``positions`` ascending and the scratch sizes, and split the scratch: ``(ok,
    dictionary bytes, page buffer, vidx, scratch, sel)`` (see :func:`read_at`)."""
    m = positions.shape[0]
    ok = iwork.shape[0] >= 4 * m and ascending(positions)[0]
    need = work_bytes(pages, npages, codec)
    dsize = np.int64(0)
    for p in range(npages):
        if pages[p, P_TYPE] == 2:
            dsize = pages[p, P_USIZE] if codec == CODEC_SNAPPY else pages[p, P_CSIZE]
    if bwork.shape[0] < need or dsize > need:
        ok = False
        need = dsize = 0
    return ok, bwork[:dsize], bwork[dsize:need], iwork[:m], iwork[m:3 * m], iwork[3 * m:4 * m]


@njit(cache=True, nogil=True)
def read_at(buf, pages, npages, codec, width, max_def, positions, out, valid, iwork, bwork):
    """Values of the column chunk whose pages ``walk_pages`` found, at ascending row ``positions``.

    ``out`` (uint8, ``width`` bytes per position) gets the plain little-endian bytes of each
    value (zeros for nulls), ``valid`` whether the row is not null. ``codec``: 0 (pages stored
    uncompressed, or already decompressed by the caller) or 1 (Snappy, decompressed here page by
    page). ``max_def`` 0 (required) or 1 (optional flat column). Fixed-width values in PLAIN,
    dictionary (RLE_DICTIONARY / PLAIN_DICTIONARY with a PLAIN dictionary page) or
    BYTE_STREAM_SPLIT encoding; data pages v1 and v2.

    ``iwork`` (int64, at least ``4 * len(positions)``) and ``bwork`` (uint8, at least
    :func:`work_bytes`) are the caller's reusable scratch: fresh buffers of this size cost more
    in page faults than the decoding itself.

    Cost: the dictionary page and only the data pages holding a wanted row are decompressed; in
    them only the wanted values are decoded (bit-packed runs are indexed, not unpacked).
    Returns ``ST_OK``, ``ST_CORRUPT`` or ``ST_UNSUPPORTED``.
    """
    m = positions.shape[0]
    ok, dictionary, page_buf, vidx, scratch, selw = split_work(pages, npages, codec, positions, iwork, bwork)
    if not ok:
        return ST_CORRUPT
    strict = ascending(positions)[1]  # then a page's k == nrows wanted rows are all of its rows
    dict_n = np.int64(-1)
    ostart = np.empty(65, np.int64)  # a literal-only Snappy dictionary page read in place
    spos = np.empty(65, np.int64)
    nlit = 0
    j = 0  # next wanted position
    for p in range(npages):
        kind = pages[p, P_TYPE]
        body = pages[p, P_BODY]
        csize = pages[p, P_CSIZE]
        usize = pages[p, P_USIZE]
        if kind == 2:
            if pages[p, P_ENCODING] != ENC_PLAIN and pages[p, P_ENCODING] != ENC_PLAIN_DICTIONARY:
                return ST_UNSUPPORTED
            if dict_n >= 0 or dictionary.shape[0] != (usize if codec == CODEC_SNAPPY else csize):
                return ST_CORRUPT  # a second dictionary page
            dict_n = pages[p, P_NVALUES]
            if codec == CODEC_SNAPPY:
                # few wanted rows: a literal-only dictionary is read in place; more: decompressed (a
                # memcpy, ~0.1 ns/byte) so the gather hits cache, not a random file page (~35 ns each)
                nlit = snappy_literals(buf, body, body + csize, usize, ostart, spos) if m * 512 < usize \
                    else NOT_LITERALS
                if nlit == ST_CORRUPT:
                    return ST_CORRUPT
                if nlit == NOT_LITERALS:
                    nlit = 0
                    st = snappy_decompress(buf, body, body + csize, dictionary)
                    if st != ST_OK:
                        return st
            else:  # copied to the start of bwork: aligned for the typed gather
                dictionary[:] = buf[body:body + csize]
            # every entry lies in the decoded page, whichever way it is read (the gathers trust it)
            if dict_n * width > dictionary.shape[0]:
                return ST_CORRUPT
            continue
        k0 = j
        j = wanted_rows(pages, p, positions, k0)
        if j < 0:
            return ST_CORRUPT
        if j == k0:
            continue  # no wanted row here (or an index page): the page is not even decompressed
        first = pages[p, P_FIRST_ROW]
        nrows = pages[p, P_NROWS]
        st, lbuf, l0, l1, vbuf, v0, v1 = page_sections(buf, pages, p, codec, max_def, page_buf)
        if st != ST_OK:
            return st
        k = j - k0
        enc = pages[p, P_ENCODING]
        if k == nrows and strict \
                and (enc == ENC_RLE_DICTIONARY or enc == ENC_PLAIN_DICTIONARY) and nlit == 0 and dict_n >= 0 \
                and (width == 8 or width == 4) and (max_def == 0 or all_defined(lbuf, l0, l1, nrows)):
            # the whole page, no nulls: codes unpacked in one sequential pass, then one typed gather
            if v0 >= v1:
                return ST_CORRUPT
            bw = np.int64(vbuf[v0])
            if width == 8:
                st = unpack_gather(vbuf, v0 + 1, v1, bw, dictionary[:dict_n * 8].view(np.uint64), dict_n,
                                   out.view(np.uint64), k0, k)
            else:
                st = unpack_gather(vbuf, v0 + 1, v1, bw, dictionary[:dict_n * 4].view(np.uint32), dict_n,
                                   out.view(np.uint32), k0, k)
            if st != ST_OK:
                return ST_CORRUPT
            valid[k0:j] = True
            continue
        ndef, c = levels_at(lbuf, l0, l1, max_def, first, nrows, positions, k0, j, valid, vidx, selw)
        if ndef < 0:
            return ST_CORRUPT
        sel = selw[:c]
        if c < k:
            for t in range(k0, j):
                if not valid[t]:
                    for b in range(width):
                        out[t * width + b] = 0
        st = _copy_values(enc, vbuf, v0, v1, ndef, width, dictionary, dict_n, (buf, ostart, spos),
                          nlit, vidx, sel, out, scratch)
        if st != ST_OK:
            return st
    if j < m:
        return ST_CORRUPT  # positions beyond the chunk's rows
    return ST_OK
