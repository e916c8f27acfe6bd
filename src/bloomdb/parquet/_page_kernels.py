"""numba kernels of the Parquet page reader: page headers, Snappy, levels and values at positions.

Everything reads from one ``uint8`` array (the file, memory-mapped) between ``start`` and ``end``
(one column chunk) and never touches a byte outside it: every length and offset read from the
file is checked first, so damaged bytes give a negative status, never a crash.

Statuses: ``ST_OK`` (0), ``ST_CORRUPT`` (-1: the bytes contradict the format),
``ST_UNSUPPORTED`` (-2: a legal feature these kernels do not decode -- the caller falls back to
another reader), ``ST_FULL`` (-3: the page table is too small; call again with a larger one).

Page table (``pages``, int64, one row per page, columns ``P_*``): what :func:`walk_pages` read of
each Thrift ``PageHeader`` plus where the page's body lies in ``buf``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import load_u64, store_u64

ST_OK = 0
ST_CORRUPT = -1
ST_UNSUPPORTED = -2
ST_FULL = -3
NOT_LITERALS = -4  # snappy_literals: the block has copies (or too many literals)

# page table columns
P_TYPE = 0  # PageType: 0 DATA_PAGE, 1 INDEX_PAGE, 2 DICTIONARY_PAGE, 3 DATA_PAGE_V2
P_BODY = 1  # offset of the page body (after the header) in buf
P_CSIZE = 2  # compressed_page_size
P_USIZE = 3  # uncompressed_page_size
P_NVALUES = 4  # num_values (v1: levels count = rows of a flat column; dictionary: entries)
P_ENCODING = 5  # encoding of the values
P_NROWS = 6  # rows in the page (v1 flat: num_values; v2: num_rows)
P_DEF_LEN = 7  # v2: definition_levels_byte_length (v1: -1)
P_REP_LEN = 8  # v2: repetition_levels_byte_length (v1: -1)
P_COMPRESSED = 9  # v2: is_compressed (v1: 1)
P_FIRST_ROW = 10  # row index of the page's first row within the column chunk (data pages)
P_FIELDS = 11

# Thrift compact types
_T_TRUE = 1
_T_FALSE = 2
_T_BYTE = 3
_T_I16 = 4
_T_I32 = 5
_T_I64 = 6
_T_DOUBLE = 7
_T_BINARY = 8
_T_LIST = 9
_T_SET = 10
_T_MAP = 11
_T_STRUCT = 12

# Parquet enums used here
ENC_PLAIN = 0
ENC_PLAIN_DICTIONARY = 2
ENC_RLE = 3
ENC_RLE_DICTIONARY = 8
ENC_BYTE_STREAM_SPLIT = 9
CODEC_UNCOMPRESSED = 0
CODEC_SNAPPY = 1


@njit(cache=True, nogil=True)
def _varint(buf, pos, end):
    """``(value, new pos)``; new pos -1 when the varint is truncated or longer than 64 bits."""
    out = np.uint64(0)
    shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        out |= np.uint64(b & 0x7F) << np.uint64(shift)
        if b < 0x80:
            return np.int64(out), pos
        shift += 7
        if shift > 63:
            return 0, -1
    return 0, -1


@njit(cache=True, nogil=True)
def _zigzag(buf, pos, end):
    v, pos = _varint(buf, pos, end)
    return (v >> 1) ^ -(v & 1), pos


@njit(cache=True, nogil=True)
def _field(buf, pos, end, last):
    """One struct field header: ``(field id, type, new pos)``; type 0 = end of struct; pos -1 = bad."""
    if pos >= end:
        return 0, 0, -1
    b = buf[pos]
    pos += 1
    if b == 0:
        return 0, 0, pos
    t = b & 15
    delta = b >> 4
    if delta:
        return last + delta, t, pos
    fid, pos = _zigzag(buf, pos, end)
    return fid, t, pos


@njit(cache=True, nogil=True)
def _skip(buf, pos, end, t):
    """Position after one value of Thrift compact type ``t`` at ``pos`` (nested containers and
    structs included, up to 64 levels deep); -1 when the bytes are not a value."""
    kinds = np.empty(64, np.int64)  # 0 struct (a = last field id), 1 list (a = elem type, b = left), 2 map
    fa = np.empty(64, np.int64)
    fb = np.empty(64, np.int64)
    fc = np.empty(64, np.int64)
    sp = 0
    cur = t
    while True:
        # skip one value of type `cur`, or open its container
        if cur == _T_TRUE or cur == _T_FALSE:
            pass
        elif cur == _T_BYTE:
            pos += 1
        elif cur == _T_I16 or cur == _T_I32 or cur == _T_I64:
            _, pos = _varint(buf, pos, end)
        elif cur == _T_DOUBLE:
            pos += 8
        elif cur == _T_BINARY:
            n, pos = _varint(buf, pos, end)
            if pos < 0 or n < 0:
                return -1
            pos += n
        elif cur == _T_LIST or cur == _T_SET:
            if pos >= end or sp >= 64:
                return -1
            h = buf[pos]
            pos += 1
            n = np.int64(h >> 4)
            if n == 15:
                n, pos = _varint(buf, pos, end)
                if pos < 0 or n < 0:
                    return -1
            et = np.int64(h & 15)
            kinds[sp] = 1
            fa[sp] = _T_BYTE if (et == _T_TRUE or et == _T_FALSE) else et  # list<bool>: a byte each
            fb[sp] = n
            sp += 1
        elif cur == _T_MAP:
            n, pos = _varint(buf, pos, end)
            if pos < 0 or n < 0 or sp >= 64:
                return -1
            kt = np.int64(0)
            vt = np.int64(0)
            if n > 0:
                if pos >= end:
                    return -1
                kt = np.int64(buf[pos] >> 4)
                vt = np.int64(buf[pos] & 15)
                pos += 1
            kinds[sp] = 2
            fa[sp] = kt
            fb[sp] = 2 * n
            fc[sp] = vt
            sp += 1
        elif cur == _T_STRUCT:
            if sp >= 64:
                return -1
            kinds[sp] = 0
            fa[sp] = 0
            sp += 1
        else:
            return -1
        if pos < 0 or pos > end:
            return -1
        # the next value to skip, from the innermost open container
        found = False
        while sp > 0 and not found:
            k = kinds[sp - 1]
            if k == 0:
                fid, ft, pos = _field(buf, pos, end, fa[sp - 1])
                if pos < 0:
                    return -1
                if ft == 0:
                    sp -= 1
                else:
                    fa[sp - 1] = fid
                    cur = ft
                    found = True
            elif k == 1:
                if fb[sp - 1] == 0:
                    sp -= 1
                else:
                    fb[sp - 1] -= 1
                    cur = fa[sp - 1]
                    found = True
            else:
                if fb[sp - 1] == 0:
                    sp -= 1
                else:
                    fb[sp - 1] -= 1
                    cur = fa[sp - 1] if fb[sp - 1] % 2 == 1 else fc[sp - 1]
                    found = True
        if not found:
            return pos


@njit(cache=True, nogil=True)
def _int_field(buf, pos, end, t):
    """An i16/i32/i64 field's value and the position after it (pos -1 when ``t`` is another type)."""
    if t != _T_I16 and t != _T_I32 and t != _T_I64:
        return 0, -1
    return _zigzag(buf, pos, end)


@njit(cache=True, nogil=True)
def _sub_header(buf, pos, end, row, pages):
    """Read a DataPageHeader / DictionaryPageHeader / DataPageHeaderV2 struct into ``pages[row]``.

    Field ids: v1 {1 num_values, 2 encoding, 3 def encoding, 4 rep encoding}, dictionary
    {1 num_values, 2 encoding, 3 is_sorted}, v2 {1 num_values, 2 num_nulls, 3 num_rows,
    4 encoding, 5 def length, 6 rep length, 7 is_compressed}. Others are skipped."""
    kind = pages[row, P_TYPE]
    last = 0
    while True:
        fid, t, pos = _field(buf, pos, end, last)
        if pos < 0:
            return -1
        if t == 0:
            return pos
        last = fid
        v = np.int64(0)
        if kind == 3 and fid == 7 and (t == _T_TRUE or t == _T_FALSE):
            pages[row, P_COMPRESSED] = 1 if t == _T_TRUE else 0
            continue
        if fid == 1:
            v, pos = _int_field(buf, pos, end, t)
            pages[row, P_NVALUES] = v
        elif kind == 3 and fid == 3:
            v, pos = _int_field(buf, pos, end, t)
            pages[row, P_NROWS] = v
        elif (kind != 3 and fid == 2) or (kind == 3 and fid == 4):
            v, pos = _int_field(buf, pos, end, t)
            pages[row, P_ENCODING] = v
        elif kind == 3 and fid == 5:
            v, pos = _int_field(buf, pos, end, t)
            pages[row, P_DEF_LEN] = v
        elif kind == 3 and fid == 6:
            v, pos = _int_field(buf, pos, end, t)
            pages[row, P_REP_LEN] = v
        else:
            pos = _skip(buf, pos, end, t)
        if pos < 0:
            return -1


@njit(cache=True, nogil=True)
def walk_pages(buf, start, end, pages):
    """Read every page header of the column chunk ``buf[start:end]`` into ``pages``.

    Returns the number of pages, or a negative status (``ST_FULL`` when ``pages`` has too few
    rows). Data pages get ``P_FIRST_ROW``; v1 pages' row count is their level count (flat
    columns). Cost: one pass over the headers; page bodies are not read.
    """
    n = 0
    pos = start
    row0 = np.int64(0)
    while pos < end:
        if n >= pages.shape[0]:
            return ST_FULL
        for j in range(P_FIELDS):
            pages[n, j] = -1
        pages[n, P_COMPRESSED] = 1
        last = 0
        seen = 0
        while True:
            fid, t, pos = _field(buf, pos, end, last)
            if pos < 0:
                return ST_CORRUPT
            if t == 0:
                break
            last = fid
            if fid >= 1 and fid <= 3:
                v, pos = _int_field(buf, pos, end, t)
                pages[n, P_TYPE if fid == 1 else (P_USIZE if fid == 2 else P_CSIZE)] = v
                seen |= 1 << fid
            elif (fid == 5 or fid == 7 or fid == 8) and t == _T_STRUCT:
                if pages[n, P_TYPE] < 0:
                    return ST_CORRUPT  # the type comes first in every writer's headers
                pos = _sub_header(buf, pos, end, n, pages)
            else:
                pos = _skip(buf, pos, end, t)
            if pos < 0:
                return ST_CORRUPT
        if seen != 0b1110:
            return ST_CORRUPT
        csize = pages[n, P_CSIZE]
        if csize < 0 or pages[n, P_USIZE] < 0 or csize > end - pos:
            return ST_CORRUPT
        pages[n, P_BODY] = pos
        kind = pages[n, P_TYPE]
        if kind == 0 or kind == 3:
            nv = pages[n, P_NVALUES]
            if nv < 0:
                return ST_CORRUPT
            if kind == 0:
                pages[n, P_NROWS] = nv
            elif pages[n, P_NROWS] < 0 or pages[n, P_DEF_LEN] < 0 or pages[n, P_REP_LEN] < 0 \
                    or pages[n, P_DEF_LEN] + pages[n, P_REP_LEN] > csize:
                return ST_CORRUPT
            pages[n, P_FIRST_ROW] = row0
            row0 += pages[n, P_NROWS]
        elif kind == 2:
            if pages[n, P_NVALUES] < 0:
                return ST_CORRUPT
        pos += csize
        n += 1
    return n


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
    n, pos = _varint(src, s0, s1)
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
    m, pos = _varint(src, s0, s1)
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
def _snappy_bytes(src, s0, s1, dst):
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
def _gather_literals(out, src, ostart, spos, nlit, codes, sel, width):
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
            _put(out, o, src, spos[lo] + a - ostart[lo], width)
        else:  # the entry straddles two literals
            e = lo
            for b in range(width):
                while a + b >= ostart[e + 1]:
                    e += 1
                out[o + b] = src[spos[e] + a + b - ostart[e]]


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
def _put(dst, d, src, s, width):
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
def _rle_value(buf, pos, end, vbytes):
    """``(value, position after it)`` of an RLE run's ``vbytes``-byte little-endian value; -1: cut off."""
    if pos + vbytes > end:
        return np.int64(0), np.int64(-1)
    v = np.int64(0)
    for i in range(vbytes):
        v |= np.int64(buf[pos + i]) << (8 * i)
    return v, pos + vbytes


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
        h, pos = _varint(buf, pos, end)
        if pos < 0:
            return ST_CORRUPT
        if h & 1:
            count = (h >> 1) * 8
            nb = (h >> 1) * width
            if nb > end - pos:
                # the last bit-packed run may be cut to the bytes its real values need
                nb = end - pos
            j2 = j
            while j2 < m and wanted[j2] < base + count:
                j2 += 1
            if (j2 - j) * 8 >= count:  # dense: every value of the run up to its last wanted one
                mask = np.uint64((1 << width) - 1)
                stop = pos + nb
                last = wanted[j2 - 1] - base
                for i in range(last + 1):
                    bit = i * width
                    at = pos + (bit >> 3)
                    if at + 8 <= stop:
                        v = np.int64((load_u64(buf, at) >> np.uint64(bit & 7)) & mask)
                    else:
                        v = _read_bits(buf, pos, bit, width, stop)
                        if v < 0:
                            return ST_CORRUPT
                    while j < j2 and wanted[j] - base == i:
                        out[j] = v
                        j += 1
            else:  # sparse: read each wanted value where it lies
                while j < j2:
                    v = _read_bits(buf, pos, (wanted[j] - base) * width, width, pos + nb)
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
def _all_defined(buf, pos, end, nrows):
    """Whether the definition levels at ``buf[pos:end]`` are one RLE run of level 1 covering
    ``nrows`` rows (how writers store a page without nulls)."""
    h, pos = _varint(buf, pos, end)
    return pos >= 0 and pos < end and (h & 1) == 0 and (h >> 1) >= nrows and buf[pos] == 1


@njit(cache=True, nogil=True)
def _unpack_hybrid(buf, pos, end, width, out):
    """Decode the first ``len(out)`` values (``width`` <= 32 bits) of the RLE / bit-packed hybrid
    run sequence at ``buf[pos:end]`` in order. Returns ``ST_OK`` or ``ST_CORRUPT``."""
    n = out.shape[0]
    mask = np.uint64((1 << width) - 1)
    vbytes = (width + 7) >> 3
    i = 0
    while i < n:
        h, pos = _varint(buf, pos, end)
        if pos < 0:
            return ST_CORRUPT
        if h & 1:
            nb = min((h >> 1) * width, end - pos)
            take = min((h >> 1) * 8, n - i)
            stop = pos + nb
            for t in range(take):
                bit = t * width
                at = pos + (bit >> 3)
                if at + 8 <= stop:
                    out[i + t] = np.int64((load_u64(buf, at) >> np.uint64(bit & 7)) & mask)
                else:
                    v = _read_bits(buf, pos, bit, width, stop)
                    if v < 0:
                        return ST_CORRUPT
                    out[i + t] = v
            pos = stop
        else:
            v, pos = _rle_value(buf, pos, end, vbytes)
            if pos < 0:
                return ST_CORRUPT
            take = min(h >> 1, n - i)
            out[i:i + take] = v
        i += take
    return ST_OK


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
        h, pos = _varint(buf, pos, end)
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
def _gather_run(out, dictionary, codes, start):
    """``out[start + t] = dictionary[codes[t]]`` (typed views; codes already checked)."""
    for t in range(codes.shape[0]):
        out[start + t] = dictionary[codes[t]]


@njit(cache=True, nogil=True)
def _gather(out, dictionary, codes, sel):
    """``out[sel[t]] = dictionary[codes[t]]`` (typed views; codes already checked)."""
    for t in range(sel.shape[0]):
        out[sel[t]] = dictionary[codes[t]]


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
                and idx[sel[k - 1]] < nvals:  # a run of consecutive rows and values: one copy
            o = sel[0] * width
            i = v0 + idx[sel[0]] * width
            out[o:o + k * width] = vbuf[i:i + k * width]
            return ST_OK
        for t in range(k):
            i = idx[sel[t]]
            if i >= nvals:
                return ST_CORRUPT
            _put(out, sel[t] * width, vbuf, v0 + i * width, width)
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
            _gather_literals(out, lit[0], lit[1], lit[2], nlit, codes, sel, width)
        elif width == 8:
            _gather(out.view(np.uint64), dictionary[:dict_n * 8].view(np.uint64), codes, sel)
        elif width == 4:
            _gather(out.view(np.uint32), dictionary[:dict_n * 4].view(np.uint32), codes, sel)
        else:
            for t in range(k):
                _put(out, sel[t] * width, dictionary, codes[t] * width, width)
        return ST_OK
    return ST_UNSUPPORTED


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
    for t in range(1, m):
        if positions[t] < positions[t - 1]:
            return ST_CORRUPT
    need = work_bytes(pages, npages, codec)
    if iwork.shape[0] < 4 * m or bwork.shape[0] < need:
        return ST_CORRUPT
    dict_n = np.int64(-1)
    dsize = np.int64(0)
    for p in range(npages):
        if pages[p, P_TYPE] == 2:
            dsize = pages[p, P_USIZE] if codec == CODEC_SNAPPY else pages[p, P_CSIZE]
    dictionary = bwork[:dsize]
    page_buf = bwork[dsize:need]
    vidx = iwork[:m]
    scratch = iwork[m:3 * m]
    selw = iwork[3 * m:4 * m]
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
                elif dict_n * width > usize:
                    return ST_CORRUPT
                continue
            else:  # copied to the start of bwork: aligned for the typed gather
                dictionary[:] = buf[body:body + csize]
            if dict_n * width > dictionary.shape[0]:
                return ST_CORRUPT
            continue
        if kind != 0 and kind != 3:
            continue  # index pages carry nothing to decode
        first = pages[p, P_FIRST_ROW]
        nrows = pages[p, P_NROWS]
        if j >= m or positions[j] >= first + nrows:
            continue  # no wanted row here: the page is not even decompressed
        if positions[j] < first:
            return ST_CORRUPT
        k0 = j
        while j < m and positions[j] < first + nrows:
            j += 1
        # the levels section (lbuf[l0:l1]) and the values section (vbuf[v0:v1])
        if kind == 0:
            if codec == CODEC_SNAPPY:
                lbuf, l0 = _snappy_bytes(buf, body, body + csize, page_buf[:usize])
                if l0 < 0:
                    return ST_CORRUPT
                l1 = l0 + usize
            else:
                lbuf = buf
                l0 = body
                l1 = body + csize
            vbuf = lbuf
            v0 = l0
            v1 = l1
            if max_def > 0:
                if l0 + 4 > l1:
                    return ST_CORRUPT
                dlen = np.int64(lbuf[l0]) | (np.int64(lbuf[l0 + 1]) << 8) | (np.int64(lbuf[l0 + 2]) << 16) \
                    | (np.int64(lbuf[l0 + 3]) << 24)
                if dlen > l1 - l0 - 4:
                    return ST_CORRUPT
                l0 += 4
                l1 = l0 + dlen
                v0 = l1
        else:
            dlen = pages[p, P_DEF_LEN]
            rlen = pages[p, P_REP_LEN]
            if rlen != 0:
                return ST_UNSUPPORTED
            lbuf = buf
            l0 = body
            l1 = body + dlen
            if codec == CODEC_SNAPPY and pages[p, P_COMPRESSED] != 0:
                n = usize - dlen - rlen
                if n < 0:
                    return ST_CORRUPT
                vbuf, v0 = _snappy_bytes(buf, body + dlen + rlen, body + csize, page_buf[:n])
                if v0 < 0:
                    return ST_CORRUPT
                v1 = v0 + n
            else:
                vbuf = buf
                v0 = body + dlen + rlen
                v1 = body + csize
        k = j - k0
        enc = pages[p, P_ENCODING]
        if k == nrows and positions[k0] == first and positions[j - 1] == first + nrows - 1 \
                and (enc == ENC_RLE_DICTIONARY or enc == ENC_PLAIN_DICTIONARY) and nlit == 0 and dict_n >= 0 \
                and (width == 8 or width == 4) and (max_def == 0 or _all_defined(lbuf, l0, l1, nrows)):
            # the whole page, no nulls: codes unpacked in one sequential pass, then one typed gather
            if v0 >= v1:
                return ST_CORRUPT
            bw = np.int64(vbuf[v0])
            codes = scratch[:k]
            if bw > 32 or _unpack_hybrid(vbuf, v0 + 1, v1, bw, codes) != ST_OK:
                return ST_CORRUPT
            for t in range(k):
                if codes[t] >= dict_n:
                    return ST_CORRUPT
                valid[k0 + t] = True
            if width == 8:
                _gather_run(out.view(np.uint64), dictionary[:dict_n * 8].view(np.uint64), codes, k0)
            else:
                _gather_run(out.view(np.uint32), dictionary[:dict_n * 4].view(np.uint32), codes, k0)
            continue
        sel = selw[:k]
        if max_def > 0:
            ndef = defined_at(lbuf, l0, l1, first, nrows, positions[k0:j], valid[k0:j], vidx[k0:j])
            if ndef < 0:
                return ST_CORRUPT
            c = 0
            for t in range(k0, j):
                if valid[t]:
                    sel[c] = t
                    c += 1
                else:
                    for b in range(width):
                        out[t * width + b] = 0
            sel = sel[:c]
        else:
            ndef = nrows
            for t in range(k0, j):
                valid[t] = True
                vidx[t] = positions[t] - first
                sel[t - k0] = t
        st = _copy_values(enc, vbuf, v0, v1, ndef, width, dictionary, dict_n, (buf, ostart, spos),
                          nlit, vidx, sel, out, scratch)
        if st != ST_OK:
            return st
    if j < m:
        return ST_CORRUPT  # positions beyond the chunk's rows
    return ST_OK
