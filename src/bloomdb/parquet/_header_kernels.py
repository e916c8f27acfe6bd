"""numba kernels of the Parquet page reader: page headers (Thrift compact protocol) into a page table.

Everything reads from one ``uint8`` array (the file, memory-mapped) between ``start`` and ``end``
(one column chunk) and never touches a byte outside it: every length and offset read from the
file is checked first, so damaged bytes give a negative status, never a crash.

Statuses (shared by every page-reader kernel): ``ST_OK`` (0), ``ST_CORRUPT`` (-1: the bytes
contradict the format), ``ST_UNSUPPORTED`` (-2: a legal feature these kernels do not decode --
the caller falls back to another reader), ``ST_FULL`` (-3: the page table is too small; call
again with a larger one).

Page table (``pages``, int64, one row per page, columns ``P_*``): what :func:`walk_pages` read of
each Thrift ``PageHeader`` plus where the page's body lies in ``buf``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

ST_OK = 0
ST_CORRUPT = -1
ST_UNSUPPORTED = -2
ST_FULL = -3

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
P_CRC = 11  # PageHeader.crc: CRC-32 (zlib's) of the page body as stored, as uint32; -1 when absent
P_DEF_ENC = 12  # v1: definition_level_encoding (3 RLE; 4 BIT_PACKED, deprecated); -1 absent / v2
P_FIELDS = 13

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



@njit(cache=True, nogil=True)
def varint(buf, pos, end):
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
    v, pos = varint(buf, pos, end)
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
            _, pos = varint(buf, pos, end)
        elif cur == _T_DOUBLE:
            pos += 8
        elif cur == _T_BINARY:
            n, pos = varint(buf, pos, end)
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
                n, pos = varint(buf, pos, end)
                if pos < 0 or n < 0:
                    return -1
            et = np.int64(h & 15)
            kinds[sp] = 1
            fa[sp] = _T_BYTE if (et == _T_TRUE or et == _T_FALSE) else et  # list<bool>: a byte each
            fb[sp] = n
            sp += 1
        elif cur == _T_MAP:
            n, pos = varint(buf, pos, end)
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
        elif kind == 0 and fid == 3:
            v, pos = _int_field(buf, pos, end, t)
            pages[row, P_DEF_ENC] = v
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
            elif fid == 4 and t == _T_I32:
                v, pos = _zigzag(buf, pos, end)
                pages[n, P_CRC] = v & 0xFFFFFFFF
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
