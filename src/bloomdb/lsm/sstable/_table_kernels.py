"""numba kernels of table files: block framing, the index block, and sorting packed keys.

They replace per-block and per-entry Python loops of the table builder, the flush and the
compaction input (those loops held the GIL in the background thread and slowed the writer).
CRC32C values are computed by the ``crc32c`` library (hardware CRC), one call per block; these
kernels only lay the bytes out and put the numbers in place. All kernels are pure: arrays in,
arrays out.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._checksum_kernels import crc32c_range
from ..._intrinsics import copy_bytes, load_u64, prefetch
from ._block_kernels import (HINT_NONE, HINT_WORDS, ST_RETRY, _cmp, _first_not_below, _r32, block_get, block_get_hinted,
                             block_hint, decode_into, decoded_sizes, encode_blocks, first_of_key, key_words,
                             packed_empty)
from .block import RAW, TRAILER
from ._index_kernels import fill_index, index_key_bytes

ST_UNCHECKED = -2


@njit(cache=True, nogil=True)
def _prefix_words(data, off, skip):
    """Per item, bytes ``skip .. skip + 8`` as a big-endian uint64 (zero-padded). Ordering by
    these words, then by the rest, is bytewise order (a zero pad sorts like "shorter first")."""
    n = off.shape[0] - 1
    out = np.zeros(n, np.uint64)
    for i in range(n):
        a = off[i] + skip
        out[i] = key_words(data, a, max(0, off[i + 1] - a))[0]
    return out


@njit(cache=True, nogil=True)
def cmp_tail(data, off, i, j):
    """Compare items ``i`` and ``j`` whose 16-byte prefix words are equal: -1, 0, 1 (the bytes
    past 16; a shorter item padded with zeros within the first 16 sorts first)."""
    a = off[i]
    la = off[i + 1] - a
    b = off[j]
    lb = off[j + 1] - b
    if la <= 16 or lb <= 16:
        return 0 if la == lb else (-1 if la < lb else 1)
    return _cmp(data, a + 16, la - 16, data, b + 16, lb - 16)


@njit(cache=True, nogil=True, inline="always")
def _before(data, off, p0, p1, x, y):
    """Item ``x`` sorts strictly before item ``y``. The merge loop writes this out by hand: a
    call taking arrays costs an atomic incref/decref pair per array, more than the comparison
    (even with ``inline="always"``, measured 5x slower)."""
    if p0[x] != p0[y]:
        return p0[x] < p0[y]
    if p1[x] != p1[y]:
        return p1[x] < p1[y]
    return cmp_tail(data, off, x, y) < 0


@njit(cache=True, nogil=True)
def _merge_order(data, off, p0, p1, a):
    """The items ``a`` (indexes into the packed byte strings ``data[off[i]:off[i+1]]``, whose
    prefix words are ``p0``/``p1``) in stable bytewise order: a bottom-up merge sort (full
    compare only on equal words); O(k log k) word comparisons, runs already in order cost one
    comparison each. ``a`` may be reused."""
    n = a.shape[0]
    b = np.empty(n, np.int64)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            if mid < hi and not _before(data, off, p0, p1, a[mid], a[mid - 1]):
                b[lo:hi] = a[lo:hi]  # already in order
            else:
                i = lo
                j = mid
                k = lo
                while i < mid and j < hi:
                    x = a[j]
                    y = a[i]
                    if p0[x] != p0[y]:  # _before, written out: see its docstring
                        less = p0[x] < p0[y]
                    elif p1[x] != p1[y]:
                        less = p1[x] < p1[y]
                    else:
                        less = cmp_tail(data, off, x, y) < 0
                    if less:
                        b[k] = x
                        j += 1
                    else:
                        b[k] = a[i]
                        i += 1
                    k += 1
                while i < mid:
                    b[k] = a[i]
                    i += 1
                    k += 1
                while j < hi:
                    b[k] = a[j]
                    j += 1
                    k += 1
            lo = hi
        a, b = b, a
        width *= 2
    return a


#: below this many items :func:`argsort_packed` merge-sorts (the radix passes' tables cost more)
RADIX_MIN = 512


@njit(cache=True, nogil=True)
def _radix_order(p0, p1):
    """Stable order of the pairs ``(p0[i], p1[i])`` ascending: an LSD radix sort by bytes, least
    significant first, skipping every byte position where all items agree (db-bench's ``%016d``
    keys differ in their last 6-7 bytes only). Cost: one counting pass over the 16 bytes, then
    one scatter pass per varying byte."""
    n = p0.shape[0]
    counts = np.zeros((16, 256), np.int64)
    for i in range(n):
        x = p0[i]
        y = p1[i]
        for t in range(8):
            sh = np.uint64(56 - 8 * t)
            counts[t, (x >> sh) & np.uint64(0xFF)] += 1
            counts[8 + t, (y >> sh) & np.uint64(0xFF)] += 1
    a = np.arange(n)
    w0 = p0.copy()
    w1 = p1.copy()
    b = np.empty(n, np.int64)
    v0 = np.empty(n, np.uint64)
    v1 = np.empty(n, np.uint64)
    pos = np.empty(256, np.int64)
    for t in range(15, -1, -1):
        c = counts[t]
        varies = True
        for d in range(256):
            if c[d] == n:
                varies = False
                break
            if c[d] != 0:
                break
        if not varies:
            continue
        acc = 0
        for d in range(256):
            pos[d] = acc
            acc += c[d]
        sh = np.uint64(56 - 8 * (t & 7))
        hi = t < 8
        for i in range(n):
            d = ((w0[i] if hi else w1[i]) >> sh) & np.uint64(0xFF)
            q = pos[d]
            pos[d] = q + 1
            b[q] = a[i]
            v0[q] = w0[i]
            v1[q] = w1[i]
        a, b = b, a
        w0, v0 = v0, w0
        w1, v1 = v1, w1
    return a


@njit(cache=True, nogil=True)
def argsort_packed(data, off):
    """Stable order of the packed byte strings ``data[off[i]:off[i+1]]`` (bytewise ascending).
    Their 16-byte big-endian prefix words are sorted by :func:`_radix_order` (``RADIX_MIN``
    items or more; else :func:`_merge_order`), then each group of equal words holding a key
    longer than 16 bytes or keys of different lengths is merge-sorted by the full keys (equal
    words and equal lengths up to 16 bytes: the same key, already in stable order). Cost: O(n)
    per varying key byte: ~2 ms for 42K db-bench keys where the merge sort took ~5.4 ms."""
    n = off.shape[0] - 1
    p0 = _prefix_words(data, off, 0)
    p1 = _prefix_words(data, off, 8)
    if n < RADIX_MIN:
        return _merge_order(data, off, p0, p1, np.arange(n))
    a = _radix_order(p0, p1)
    i = 0
    while i < n:
        x = a[i]
        j = i + 1
        while j < n and p0[a[j]] == p0[x] and p1[a[j]] == p1[x]:
            j += 1
        if j - i > 1:
            lx = off[x + 1] - off[x]
            tails = False
            for t in range(i, j):
                lt = off[a[t] + 1] - off[a[t]]
                if lt > 16 or lt != lx:
                    tails = True
                    break
            if tails:
                a[i:j] = _merge_order(data, off, p0, p1, a[i:j].copy())
        i = j
    return a


@njit(cache=True, nogil=True)
def put_u32(out, pos, values):
    """``out[pos[i]:pos[i] + 4] = values[i]`` little-endian, for every ``i``."""
    for i in range(pos.shape[0]):
        v = np.uint64(values[i])
        p = pos[i]
        for j in range(4):
            out[p + j] = np.uint8((v >> np.uint64(8 * j)) & np.uint64(0xFF))


@njit(cache=True, nogil=True)
def get_u32(buf, pos):
    """Little-endian uint32 at each ``buf[pos[i]:pos[i] + 4]`` (int64 array)."""
    out = np.empty(pos.shape[0], np.int64)
    for i in range(pos.shape[0]):
        p = pos[i]
        out[i] = (np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16)
                  | (np.int64(buf[p + 3]) << 24))  # fmt: skip
    return out


@njit(cache=True, nogil=True)
def encode_index(kdata, koff, lasts, offsets, sizes):
    """The index block: ``u32 n`` then per block ``u64 offset, u32 size, u32 key length, key``
    where key is the user key of entry ``lasts[i]`` (the block's last key)."""
    nb = lasts.shape[0]
    total = 4
    for i in range(nb):
        total += 16 + koff[lasts[i] + 1] - koff[lasts[i]]
    out = np.empty(total, np.uint8)
    p = 0
    for j in range(4):
        out[p + j] = np.uint8((nb >> (8 * j)) & 0xFF)
    p += 4
    for i in range(nb):
        a = koff[lasts[i]]
        kl = koff[lasts[i] + 1] - a
        o = offsets[i]
        for j in range(8):
            out[p + j] = np.uint8((o >> (8 * j)) & 0xFF)
        p += 8
        s = sizes[i]
        for j in range(4):
            out[p + j] = np.uint8((s >> (8 * j)) & 0xFF)
            out[p + 4 + j] = np.uint8((kl >> (8 * j)) & 0xFF)
        p += 8
        copy_bytes(out, p, kdata, a, kl)
        p += kl
    return out


@njit(cache=True, nogil=True)
def parse_index(b, p, n):
    """The index block's ``n`` entries (``u64 offset, u32 size, u32 key length, key`` from byte
    ``p`` of ``b``) as the one int64 array :func:`table_get` searches
    (:mod:`._index_kernels`). Returns ``(array, end)``: ``end`` is the byte after the last
    entry, ``-1`` when the bytes run out, ``-2`` when the keys are not in ascending order."""
    total, q = index_key_bytes(b, p, n, b.shape[0])
    if total < 0:
        return np.zeros(1, np.int64), -1
    a, ordered = fill_index(b, p, n, total, b.shape[0])
    if not ordered:
        return np.zeros(1, np.int64), -2
    return a, q


#: :func:`table_get_hinted` searches every HINT_GROUP-th block's key first, then the group
HINT_GROUP = 4
#: bytes per block of a table's read state (:func:`read_state_size`): its hint's words
HINT_BYTES = 8 * HINT_WORDS


@njit(cache=True, nogil=True, inline="always")
def hint_pos(n, blk):
    """Where block ``blk``'s hint starts in the read state of a table of ``n`` blocks: after the
    ``n`` checked flags, rounded up to a cache line, one line per block."""
    return ((n + 63) & ~63) + HINT_BYTES * blk


def read_state_size(n: int) -> int:
    """Bytes of the read state of a table of ``n`` blocks (``Table._state``): ``n`` checked
    flags (1: the block's CRC32C was checked and it is raw), then per block the hint of
    :func:`_block_kernels.block_hint` (64 bytes, zero until the lookup kernel first reads the
    block)."""
    return ((n + 63) & ~63) + HINT_BYTES * n


@njit(cache=True, nogil=True, inline="always")
def _table_get(buf, index, state, key, snap, hinted):
    """:func:`table_get` (``hinted`` False) or :func:`table_get_hinted` (True)."""
    n = index[0]
    klen = len(key)
    k0, k1 = key_words(key, 0, klen)
    u64 = index.view(np.uint64)
    u8 = index.view(np.uint8)
    if hinted and n > 2 * HINT_GROUP:
        # every HINT_GROUP-th block's key first, then the hint lines of the group the key falls
        # in are asked for while the group is searched: the hint's wait overlaps the last steps
        m = (n + HINT_GROUP - 1) // HINT_GROUP
        j = _first_not_below(index, u64, u8, key, 0, klen, k0, k1, 1, 6 * HINT_GROUP, m)
        a = max(0, HINT_GROUP * j - HINT_GROUP + 1)
        b = min(HINT_GROUP * j, n - 1) + 1 if j < m else n
        for t in range(a, b):
            prefetch(state, hint_pos(n, t))
        lo = a + _first_not_below(index, u64, u8, key, 0, klen, k0, k1, 1 + 6 * a, 6, b - a)
    else:
        lo = _first_not_below(index, u64, u8, key, 0, klen, k0, k1, 1, 6, n)
    if lo == n:
        return 0, lo, 0, 0
    if state[lo] == 0:
        return ST_UNCHECKED, lo, 0, 0
    e = 1 + 6 * lo
    start = index[e + 4]
    size = index[e + 5]
    if hinted:
        pos = hint_pos(n, lo)
        h = load_u64(state, pos)
        if h == np.uint64(0):
            h = block_hint(buf, start, size, state, pos)
        if h != np.uint64(HINT_NONE):
            st, vo, vl = block_get_hinted(buf, start, size, h, state, pos, key, k0, k1, snap)
            if st != ST_RETRY:
                return st, lo, vo, vl
    st, vo, vl = block_get(buf, start, size, key, snap)
    return st, lo, vo, vl


@njit(cache=True, nogil=True)
def table_get(buf, index, checked, key, snap):
    """Point read in one table: the first block whose last key ``>= key`` (by prefix words),
    then :func:`_block_kernels.block_get` in it. Returns ``(status, block, value offset, value
    length)``; status as ``block_get``'s, or ``ST_UNCHECKED`` when the block's CRC32C has not
    been checked yet (``checked[block] == 0``: Python checks it and searches)."""
    return _table_get(buf, index, checked, key, snap, False)


@njit(cache=True, nogil=True)
def table_get_hinted(buf, index, state, key, snap):
    """:func:`table_get` for the lookup kernel: ``state`` is the table's whole read state
    (:func:`read_state_size` bytes: checked flags, then the blocks' hints). A checked block is
    searched through its hint (:func:`_block_kernels.block_get_hinted`), made on its first
    search here (:func:`_block_kernels.block_hint`); a block with no hint is searched whole.
    Returns as :func:`table_get`. Cost: the index search, one line of hint, then the lines of
    one restart interval, fetched at once: no wait for the restart array and then for the
    restart entries (lookup kernel, present keys of a 1M store at random: 1,166 -> 947 ns, 8
    alternations in one process; loaded machine). The index is searched by groups of
    :data:`HINT_GROUP` blocks first, and the hint lines of the group the key falls in are asked
    for before the group itself is searched, so the hint's wait overlaps the search's last
    steps (1,038 -> 987 ns, same measure)."""
    return _table_get(buf, index, state, key, snap, True)


@njit(cache=True, nogil=True)
def trailer_stats(tr):
    """``(smallest sequence, largest sequence, deletions)`` of the trailers ``tr`` (``seq << 8 |
    type``, type 0 a deletion): one pass, one GIL release (three numpy reductions released and
    took back the GIL three times, each a wait behind a busy writer)."""
    lo = tr[0] >> np.uint64(8)
    hi = lo
    dels = 0
    for i in range(tr.shape[0]):
        s = tr[i] >> np.uint64(8)
        if s < lo:
            lo = s
        if s > hi:
            hi = s
        if (tr[i] & np.uint64(0xFF)) == np.uint64(0):
            dels += 1
    return lo, hi, dels


@njit(cache=True, nogil=True)
def _offsets(lens):
    off = np.zeros(lens.shape[0] + 1, np.int64)
    for i in range(lens.shape[0]):
        off[i + 1] = off[i] + lens[i]
    return off


@njit(cache=True, nogil=True)
def sort_run(kdata, klens, seqs, live, vlens):
    """A memtable's entries in table order, in one call: ``(kdata, koff, trailers, order,
    voff)`` -- the keys (packed ``kdata``, lengths ``klens``) sorted bytewise
    (:func:`argsort_packed`) and gathered, the trailers ``seq << 8 | live`` in that order,
    ``order`` (entry ``i`` of the result is input ``order[i]``) and the values' offsets (lengths
    ``vlens``; the values stay where they are, in input order). Keys are distinct."""
    koff = _offsets(klens)
    order = argsort_packed(kdata, koff)
    n = order.shape[0]
    kd = np.empty(koff[n], np.uint8)
    ko = np.zeros(n + 1, np.int64)
    tr = np.empty(n, np.uint64)
    p = 0
    for j in range(n):
        i = order[j]
        a = koff[i]
        b = koff[i + 1]
        copy_bytes(kd, p, kdata, a, b - a)
        p += b - a
        ko[j + 1] = p
        tr[j] = (seqs[i] << np.uint64(8)) | np.uint64(live[i])
    return kd, ko, tr, order, _offsets(vlens)


@njit(cache=True, nogil=True)
def frame_table(kdata, koff, tr, vdata, voff, vidx, block_size, restart_interval, gap, want_first):
    """Everything of a table's build that needs no Python, in ONE call (one GIL release: a
    background thread taking the GIL back behind a busy writer waits up to the interpreter's
    switch interval after each call, and this used to be five calls): the data blocks
    (:func:`encode_blocks`, each followed by ``gap`` zero bytes), the index block
    (:func:`encode_index`), the first-of-key flags the filter needs (``want_first``; else an
    empty array) and the trailers' :func:`trailer_stats`. Returns ``(framed, offs, sizes, lasts,
    value bytes, index, first, min seq, max seq, deletions)``; the blocks' CRCs are the
    caller's (:func:`frame_table_crc` puts them in place too)."""
    framed, offs, sizes, lasts, vbytes = encode_blocks(kdata, koff, tr, vdata, voff, vidx, block_size,
                                                       restart_interval, gap)
    index = encode_index(kdata, koff, lasts, offs, sizes)
    first = first_of_key(kdata, koff) if want_first else np.ones(0, np.bool_)
    lo, hi, dels = trailer_stats(tr)
    return framed, offs, sizes, lasts, vbytes, index, first, lo, hi, dels


@njit(cache=True, nogil=True)
def frame_table_crc(kdata, koff, tr, vdata, voff, vidx, block_size, restart_interval, gap, want_first):
    """:func:`frame_table` with each block's trailer complete: the type byte 0 (raw) at
    ``offs + sizes`` and, little-endian after it, the CRC32C of the block and that byte (the
    SSE4.2 instruction: only on a host with it, :data:`bloomdb.checksum.HW_RANGES`)."""
    framed, offs, sizes, lasts, vbytes, index, first, lo, hi, dels = frame_table(
        kdata, koff, tr, vdata, voff, vidx, block_size, restart_interval, gap, want_first)
    for b in range(offs.shape[0]):
        e = offs[b] + sizes[b] + 1  # the block, then its type byte
        c = crc32c_range(framed, offs[b], e)
        for j in range(4):
            framed[e + j] = np.uint8((c >> np.uint64(8 * j)) & np.uint64(0xFF))
    return framed, offs, sizes, lasts, vbytes, index, first, lo, hi, dels


@njit(cache=True, nogil=True)
def decode_range(buf, index, chk, first, last):
    """Data blocks ``first..last`` of a table (its mapped file ``buf``, index array ``index``,
    checked flags ``chk``) checked and decoded in one call: ``(ok, kdata, koff, trailers, vdata,
    voff)`` (values copied). A block read for the first time must lie in the file, be stored raw
    and match its CRC32C (the SSE4.2 instruction: only on a host with it,
    :data:`bloomdb.checksum.HW_RANGES`); it is then marked in ``chk`` as
    :meth:`Table.check_block` does. ``ok`` False: some block is compressed, outside the file,
    damaged or malformed -- nothing is decoded and the caller's step-by-step path names the
    damage or decompresses (blocks marked before the failure are intact). Cost: one ``crc32``
    instruction per 8 bytes of each block not checked yet, then :func:`decoded_sizes` and
    :func:`decode_into`; no Python step per block (a scan's rounds of 64 blocks)."""
    nb = last - first + 1
    offs = np.empty(nb, np.int64)
    sizes = np.empty(nb, np.int64)
    e8 = np.zeros(0, np.uint8)
    z = np.zeros(1, np.int64)
    for j in range(nb):
        b = first + j
        off = index[1 + 6 * b + 4]
        size = index[1 + 6 * b + 5]
        offs[j] = off
        sizes[j] = size
        if chk[b] == 0:
            end = off + size
            if off < 0 or size < 0 or end + TRAILER > buf.shape[0] or buf[end] != RAW:
                return False, e8, z, np.zeros(0, np.uint64), e8, z
            if crc32c_range(buf, off, end + 1) != np.uint64(_r32(buf, end + 1)):
                return False, e8, z, np.zeros(0, np.uint64), e8, z
            chk[b] = 1
    n, kb, vb = decoded_sizes(buf, offs, sizes)
    if n < 0:
        return False, e8, z, np.zeros(0, np.uint64), e8, z
    kdata, koff, trailers, vdata, voff = packed_empty(n, kb, vb)
    decode_into(buf, offs, sizes, kdata, koff, trailers, vdata, voff, 0)
    return True, kdata, koff, trailers, vdata, voff
