"""numba kernel of a forward cursor's first round in ONE call (:mod:`bloomdb.lsm.cursor`): pick
the tables that may hold the start of ``[lo, hi)`` (every overlapping L0 table, the first
overlapping table of each deeper level by binary search), ask their prefix filters, and read each
table from ``lo`` (an index search, a restart-point search in the block, then entries until
``limit`` are taken), merge them with the memtable's entries by key, pick the visible versions and
write at most ``limit`` of them packed.

The plan (:class:`.cursor.Plan`) lays a version's tables out in one int64 array, ``T_STRIDE``
words per table in level order (fields ``T_*``), with per level its first table and count, the
tables' key bounds in one uint8 array, and the mapped file, index and checked-block flags of each
table by address (:func:`bloomdb._intrinsics.u8_view`; the plan keeps the arrays referenced). A table's
prefix filter is a record of a :class:`.probe.prefixes.PrefixFilters` buffer (word index, checked
by the family's own ``check_hash`` through :func:`.probe._probe_kernels._check`), or ``F_MAYBE``
(no usable filter), ``F_NONE`` (no key of the table has a prefix), ``F_PYTHON`` (a family the
kernel does not check: the round goes back to Python).

A block read for the first time has its CRC32C checked here (the SSE4.2 kernel of
:mod:`bloomdb._checksum_kernels`: :mod:`.cursor` calls this kernel only where that runs) and is
marked checked in the table's flags, as :meth:`Table.check_block` marks it.

Statuses: ``OK`` 0; ``CHECK`` 1 (table ``a``'s block ``b`` is compressed, lies outside the file
or fails its CRC32C: :meth:`Table.check_block` says which, and raises on damage); ``GENERAL`` 2 (a table without an address, a filter Python must ask, a malformed
block, or a table whose first blocks hold nothing in range yet it goes on: the general merge
reads the round and raises on damage).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..hashing._kernels import xxh3_64_bytes
from ._scan_kernels import count_below, merge_visible
from .._checksum_kernels import crc32c_range
from .._intrinsics import copy_bytes, i64_view, u8_view
from .probe._probe_kernels import _check
from .sstable.block import RAW, TRAILER
from .sstable._block_kernels import _cmp, _first_not_below, _head, _r32, _restarts, key_words

# table fields (T_STRIDE words per table)
T_MIN_OFF, T_MIN_LEN, T_MAX_OFF, T_MAX_LEN = 0, 1, 2, 3
T_BUF, T_BUFLEN, T_IDX, T_IDXLEN, T_CHK = 4, 5, 6, 7, 8
T_FILTER = 9
T_STRIDE = 10
# T_FILTER values that are not a record's word index
F_MAYBE, F_NONE, F_PYTHON = -1, -2, -3
OK, CHECK, GENERAL = 0, 1, 2
#: data blocks one table's run reads at most
MAX_BLOCKS = 4


@njit(cache=True, nogil=True, inline="always")
def _below_hi(kb, off, ln, hi, has_hi):
    return not has_hi or _cmp(kb, off, ln, hi, 0, hi.shape[0]) < 0


@njit(cache=True, nogil=True)
def _pick_tables(tab, lv, kb, pbuf, use_filter, prefix, lo, hi, has_hi):
    """``(tables, count, checks, skips, status)``: the tables whose first entries of
    ``[lo, hi)`` the round reads, newest level first; filter checks made and tables they ruled
    out; status GENERAL when a candidate needs Python."""
    u64 = pbuf.view(np.uint64)
    w32 = pbuf.view(np.uint32)
    u16 = pbuf.view(np.uint16)
    u8 = pbuf.view(np.uint8)
    h = xxh3_64_bytes(prefix, 0, prefix.shape[0]) if use_filter else np.uint64(0)
    out = np.empty(tab.shape[0] // T_STRIDE, np.int64)
    m = 0
    checks = 0
    skips = 0
    nlevels = lv.shape[0] // 2
    for li in range(nlevels):
        first = lv[2 * li]
        end = first + lv[2 * li + 1]
        if li == 0:
            i = first
        else:  # the first table whose last key is >= lo
            a, b = first, end
            while a < b:
                mid = (a + b) >> 1
                t = mid * T_STRIDE
                if _cmp(kb, tab[t + T_MAX_OFF], tab[t + T_MAX_LEN], lo, 0, lo.shape[0]) < 0:
                    a = mid + 1
                else:
                    b = mid
            i = a
        while i < end:
            t = i * T_STRIDE
            i += 1
            if not _below_hi(kb, tab[t + T_MIN_OFF], tab[t + T_MIN_LEN], hi, has_hi):
                if li == 0:
                    continue
                break  # a deeper level's tables are in key order: none further meets the range
            if li == 0 and _cmp(kb, tab[t + T_MAX_OFF], tab[t + T_MAX_LEN], lo, 0, lo.shape[0]) < 0:
                continue
            keep = True
            if use_filter:
                f = tab[t + T_FILTER]
                checks += 1
                if f == F_PYTHON:
                    return out, 0, 0, 0, GENERAL
                if f == F_NONE:
                    keep = False
                elif f >= 0:
                    keep = _check(pbuf, u64, w32, u16, u8, f, h, prefix, 0, prefix.shape[0])
                if not keep:
                    skips += 1
            if keep:
                out[m] = t
                m += 1
                if li > 0:
                    break  # one table per deeper level: the round ends before the next one
    return out, m, checks, skips, OK


@njit(cache=True, nogil=True, inline="always")
def _room(a, need):
    """``a`` or a copy of it at least ``need`` long (doubling)."""
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True, nogil=True)
def _append(buf, p, end, kd, ko, tr, vd, vo, n, scratch, klen, lo, hi, has_hi, limit, got, last_key_len):
    """Decode the entries of one data block from position ``p`` (a restart point) to ``end``
    (its restart array), appending those with ``lo <= user key < hi`` to the packed outputs
    (entries ``n``... ; grown as needed). Stops at the first key ``>= hi`` or, once ``limit``
    entries of this table are taken, at the first key after the last one taken (versions of a
    key stay together). Returns ``(kd, ko, tr, vd, vo, n, got, state)``: state 0 block read
    through, 1 the range ended, 2 the limit was reached, -1 malformed."""
    past_lo = False
    while p < end:
        shared, unshared, vlen, p = _head(buf, p, end)
        if p < 0 or shared > klen or p + unshared + vlen > end or shared + unshared < 8:
            return kd, ko, tr, vd, vo, n, got, -1
        if shared + unshared > scratch.shape[0]:
            return kd, ko, tr, vd, vo, n, got, -1
        copy_bytes(scratch, shared, buf, p, unshared)
        klen = shared + unshared
        p += unshared
        uk = klen - 8
        if not past_lo:  # keys ascend: once one is >= lo, the rest are
            if _cmp(scratch, 0, uk, lo, 0, lo.shape[0]) < 0:
                p += vlen
                continue
            past_lo = True
        if has_hi and _cmp(scratch, 0, uk, hi, 0, hi.shape[0]) >= 0:
            return kd, ko, tr, vd, vo, n, got, 1
        if got >= limit and (uk != last_key_len or _cmp(scratch, 0, uk, kd, ko[n - 1], last_key_len) != 0):
            return kd, ko, tr, vd, vo, n, got, 2
        kb = ko[n]
        kd = _room(kd, kb + uk)
        copy_bytes(kd, kb, scratch, 0, uk)
        vb = vo[n]
        vd = _room(vd, vb + vlen)
        copy_bytes(vd, vb, buf, p, vlen)
        p += vlen
        ko = _room(ko, n + 2)
        vo = _room(vo, n + 2)
        tr = _room(tr, n + 1)
        t = np.uint64(0)
        for i in range(8):
            t |= np.uint64(scratch[uk + i]) << np.uint64(8 * i)
        tr[n] = t
        ko[n + 1] = kb + uk
        vo[n + 1] = vb + vlen
        n += 1
        got += 1
        last_key_len = uk
    return kd, ko, tr, vd, vo, n, got, 0


@njit(cache=True, nogil=True)
def _seek_start(buf, start, size, lo):
    """``(position, restart array position)`` of the last restart point of the block whose key
    is ``< lo`` (the block's start if none); position -1 when the block is malformed."""
    nr, rpos = _restarts(buf, start, size)
    if nr < 0:
        return -1, 0
    a = 0
    b = nr
    while b - a > 1:
        mid = (a + b) >> 1
        p = start + _r32(buf, rpos + 4 * mid)
        shared, unshared, vlen, p = _head(buf, p, rpos)
        if p < 0 or shared != 0 or unshared < 8 or p + unshared > rpos:
            return -1, 0
        if _cmp(buf, p, unshared - 8, lo, 0, lo.shape[0]) < 0:
            a = mid
        else:
            b = mid
    return start + _r32(buf, rpos + 4 * a), rpos


@njit(cache=True, nogil=True)
def first_round(tab, lv, kb, pbuf, use_filter, keys, nlo, nhi, has_hi, snap, limit, mkd, mko, mtr, mvd, mvo):
    """The first forward round of a cursor over ``[lo, hi)`` (``has_hi`` False: no upper bound)
    at sequence ``snap``: ``(status, a, b, checks, skips, out, offs, m, has_bound, fmt)``. ``keys``
    holds ``lo`` (``nlo`` bytes), ``hi`` (``nhi``) and the prefix the filters are asked for
    (the rest; with ``use_filter``).

    ``out``/``offs``: the ``m`` visible entries' keys then values, packed (key ``j`` is
    ``out[offs[j]:offs[j+1]]``, value ``j`` is ``out[offs[m+1+j]:offs[m+2+j]]``), then the round's
    bound key (``out[offs[2m+2]:offs[2m+3]]``, when ``has_bound``: every visible entry up to it
    is returned; without, the whole range was read), then from ``out[fmt]`` on the ``struct``
    format that cuts them (status OK with entries or a bound; else ``fmt`` is 0). ``mkd..mvo``: the memtables' entries of the
    range, packed (one run, ascending, versions newest first). Status CHECK: ``a`` is the
    table's word offset in ``tab`` and ``b`` the block to check; checks/skips count the prefix
    filters asked (status OK only). Cost: one binary search per level, one filter check per
    table met, and per table read one index search, one restart search and the entries from
    ``lo`` until ``limit`` are taken (at most ``MAX_BLOCKS`` blocks); one merge of those."""
    lo = keys[:nlo]
    hi = keys[nlo : nlo + nhi]
    prefix = keys[nlo + nhi :]
    e8 = np.zeros(0, np.uint8)
    z1 = np.zeros(1, np.int64)
    tabs, nt, checks, skips, st = _pick_tables(tab, lv, kb, pbuf, use_filter, prefix, lo, hi, has_hi)
    if st != OK:
        return st, 0, 0, 0, 0, e8, z1, 0, False, 0
    # every run laid side by side: the memtables' entries in range first, then each table's
    s0 = count_below(mkd, mko, lo, False)
    s1 = count_below(mkd, mko, hi, False) if has_hi else mtr.shape[0]
    n = s1 - s0
    if nt == 0 and n == 0:  # nothing to read (an absent prefix every filter ruled out)
        return OK, 0, 0, checks, skips, e8, np.zeros(4, np.int64), 0, False, 0
    cap = n + 2 * limit + 2
    kd = np.empty(max(64 * cap, mko[s1] - mko[s0]), np.uint8)
    ko = np.empty(cap + 1, np.int64)
    tr = np.empty(cap, np.uint64)
    vd = np.empty(max(256 * cap, mvo[s1] - mvo[s0]), np.uint8)
    vo = np.empty(cap + 1, np.int64)
    ko[0] = 0
    vo[0] = 0
    kd[: mko[s1] - mko[s0]] = mkd[mko[s0] : mko[s1]]
    vd[: mvo[s1] - mvo[s0]] = mvd[mvo[s0] : mvo[s1]]
    for i in range(n):
        ko[i + 1] = mko[s0 + i + 1] - mko[s0]
        vo[i + 1] = mvo[s0 + i + 1] - mvo[s0]
        tr[i] = mtr[s0 + i]
    starts = np.zeros(nt + 2, np.int64)
    starts[1] = n
    nr = 1
    bound = e8
    has_bound = False
    scratch = np.empty(1024, np.uint8)
    for j in range(nt):
        t = tabs[j]
        if tab[t + T_BUF] == 0:
            return GENERAL, 0, 0, 0, 0, e8, z1, 0, False, 0
        idx = i64_view(tab[t + T_IDX], tab[t + T_IDXLEN])
        buf = u8_view(tab[t + T_BUF], tab[t + T_BUFLEN])
        chk = u8_view(tab[t + T_CHK], idx[0])
        nb = idx[0]
        k0, k1 = key_words(lo, 0, lo.shape[0])
        b = _first_not_below(idx, idx.view(np.uint64), idx.view(np.uint8), lo, 0, lo.shape[0], k0, k1, 1, 6, nb)
        got = 0
        state = 0
        last = 0
        first_block = b
        while b < nb and b - first_block < MAX_BLOCKS:
            off = idx[1 + 6 * b + 4]
            size = idx[1 + 6 * b + 5]
            if chk[b] == 0:  # first read: a raw, intact block is marked checked here
                end = off + size
                if (off < 0 or end + TRAILER > buf.shape[0] or buf[end] != RAW
                        or crc32c_range(buf, off, end + 1) != np.uint64(_r32(buf, end + 1))):
                    return CHECK, t, b, 0, 0, e8, z1, 0, False, 0  # Python names the damage or decompresses
                chk[b] = 1
            if b == first_block:
                p, rpos = _seek_start(buf, off, size, lo)
            else:
                p, rpos = off, _restarts(buf, off, size)[1]
            if p < 0 or rpos < off:
                return GENERAL, 0, 0, 0, 0, e8, z1, 0, False, 0
            if size > scratch.shape[0]:
                scratch = np.empty(size, np.uint8)
            kd, ko, tr, vd, vo, n, got, state = _append(buf, p, rpos, kd, ko, tr, vd, vo, n, scratch, 0, lo,
                                                        hi, has_hi, limit, got, last)
            if state < 0:
                return GENERAL, 0, 0, 0, 0, e8, z1, 0, False, 0
            if got:
                last = ko[n] - ko[n - 1]
            b += 1
            if state != 0 or got >= limit:
                break
        # the range goes on past what was read (in this table, or in the level's next one): the
        # last key read bounds the round
        more = state != 1
        if more:
            if got == 0:
                return GENERAL, 0, 0, 0, 0, e8, z1, 0, False, 0
            a = ko[n - 1]
            if not has_bound or _cmp(kd, a, ko[n] - a, bound, 0, bound.shape[0]) < 0:
                bound = kd[a : ko[n]].copy()
                has_bound = True
        nr += 1
        starts[nr] = n
    sel = merge_visible(kd, ko[: n + 1], tr[:n], starts[: nr + 1], snap, False)
    # the visible keys come ascending: keep those <= bound, at most limit
    m = 0
    while m < sel.shape[0] and m < limit + 1:
        e = sel[m]
        if has_bound and _cmp(kd, ko[e], ko[e + 1] - ko[e], bound, 0, bound.shape[0]) > 0:
            break
        m += 1
    if m > limit:  # a cursor reads a few: the round ends at its limit-th visible key
        m = limit
        e = sel[m - 1]
        bound = kd[ko[e] : ko[e + 1]].copy()
        has_bound = True
    size = bound.shape[0] if has_bound else 0
    for j in range(m):
        e = sel[j]
        size += ko[e + 1] - ko[e] + vo[e + 1] - vo[e]
    out = np.empty(size + 1 + (2 * m + 1) * 20, np.uint8)  # then the struct format
    offs = np.empty(2 * m + 4, np.int64)
    q = 0
    offs[0] = 0
    for j in range(m):
        e = sel[j]
        ln = ko[e + 1] - ko[e]
        copy_bytes(out, q, kd, ko[e], ln)
        q += ln
        offs[j + 1] = q
    offs[m + 1] = q
    for j in range(m):
        e = sel[j]
        ln = vo[e + 1] - vo[e]
        copy_bytes(out, q, vd, vo[e], ln)
        q += ln
        offs[m + 2 + j] = q
    offs[2 * m + 2] = q
    if has_bound:
        copy_bytes(out, q, bound, 0, bound.shape[0])
        q += bound.shape[0]
    offs[2 * m + 3] = q
    f = _unpack_format(out, q, offs, m)
    return OK, 0, 0, checks, skips, out[:f], offs, m, has_bound, q


@njit(cache=True, nogil=True)
def _unpack_format(fmt, f, offs, m):
    """Write at ``fmt[f:]`` the ``struct`` format (ASCII) that cuts the ``m`` keys, the ``m`` values
    and the bound (empty without one) laid out as :func:`first_round`'s ``offs`` says:
    ``"<16s16s...100s...16s"`` (one ``struct.unpack_from`` call then makes every ``bytes`` object
    in C; Python slicing took ~5 us for ten entries). Returns the format's end. ``fmt`` needs
    ``1 + 20 * (2m + 1)`` bytes from ``f``."""
    fmt[f] = 60  # '<': no alignment
    f += 1
    for i in range(2 * m + 1):
        if i < m:
            ln = offs[i + 1] - offs[i]
        elif i < 2 * m:
            ln = offs[i + 2] - offs[i + 1]
        else:
            ln = offs[2 * m + 3] - offs[2 * m + 2]
        d = 1
        while d * 10 <= ln:
            d *= 10
        while d > 0:
            fmt[f] = 48 + (ln // d) % 10
            f += 1
            d //= 10
        fmt[f] = 115  # 's'
        f += 1
    return f
