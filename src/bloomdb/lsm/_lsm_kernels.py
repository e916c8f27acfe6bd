"""numba kernels of the LSM store: the all-tables filter probe and the data-block codec.

Probe directory (``meta``, int64) -- one array per store version, built by
:mod:`bloomdb.lsm.directory`::

    meta[0]              number of L0 slots (slots 0 .. n0-1, newest table first)
    meta[1]              number of further levels described below (L1, L2, ...)
    meta[2 + 2j]         first slot of level j+1
    meta[3 + 2j]         number of slots of level j+1 (tables sorted by key, non-overlapping)
    meta[C_CHECKS]       counter: filter probes done
    meta[C_USEFUL]       counter: probes that said "definitely not" (the read was saved)
    meta[C_POSITIVE]     counter: probes that said "may contain"
    meta[W32_BASE]       32-bit index where the filter words start (same array, viewed as uint32)
    meta[BYTE_BASE]      byte index where the key bounds start (same array, viewed as uint8)
    meta[SLOTS + 12s ..] slot s: kind, word offset (or partition table index), lines (or
                         partition count, or words reserved), k, then for the min key and the
                         max key each: its two big-endian prefix words (read as uint64), its
                         byte offset into the array and its length
    partition entry      (``PSTRIDE`` words, for kind PARTITIONED) last key's two prefix words,
                         last key offset, length, state, word offset, lines (or words
                         reserved), k

Slot kinds: NONE (no usable filter: none, or damaged -- fail open, not counted), BLOCKED (a
``blocked`` filter's words at 32-bit index ``offset``), OTHER (another family: Python asks it),
LAZY (the filter is not read yet: Python reads it on this first lookup, see
:mod:`bloomdb.lsm.directory`), PARTITIONED (per-partition states P_LAZY, P_LOADED, P_OTHER,
P_DAMAGED; the kernel finds the partition by its last key). The probe returns ``-slot - 2`` for
"Python decides". A slot is a candidate only when ``min key <= key <= max key`` (full bytewise
comparison), so a lookup probes at most one table per level below L0.

Data block (see docs/formats.md): entries ``varint shared, varint unshared, varint vlen,
key[shared:], value`` over internal keys (user key + 8-byte little-endian ``seq << 8 | type``),
then ``uint32`` restart offsets and their ``uint32`` count. All kernels are pure: arrays in,
numbers/arrays out; they never raise on bad bytes (they return a status that Python turns into
``CorruptionError``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..filters._blocked_kernels import check_bits, line_word
from ..hashing._kernels import xxh3_64_bytes

SLOTS = 24
STRIDE = 12
PSTRIDE = 8
NONE, BLOCKED, OTHER, LAZY, PARTITIONED = 0, 1, 2, 3, 4  # slot kinds
P_LAZY, P_LOADED, P_OTHER, P_DAMAGED = 0, 1, 2, 3  # partition states
MAX_LEVELS = 9
C_CHECKS = 20
C_USEFUL = 21
C_POSITIVE = 22
W32_BASE = 18
BYTE_BASE = 19

ST_MISSING = 0
ST_VALUE = 1
ST_DELETED = 2
ST_CORRUPT = -1


@njit(cache=True, nogil=True)
def _cmp(a, astart, alen, b, bstart, blen):
    """Bytewise compare of ``a[astart:astart+alen]`` with ``b[bstart:bstart+blen]``: -1, 0, 1."""
    n = min(alen, blen)
    for i in range(n):
        x = a[astart + i]
        y = b[bstart + i]
        if x != y:
            return -1 if x < y else 1
    if alen == blen:
        return 0
    return -1 if alen < blen else 1


@njit(cache=True, nogil=True)
def key_words(key, kstart, klen):
    """Bytes 0..8 and 8..16 of ``key[kstart:kstart+klen]`` as big-endian uint64 words
    (zero-padded): comparing these, then :func:`_tail_cmp` on ties, is bytewise order."""
    k0 = np.uint64(0)
    k1 = np.uint64(0)
    for t in range(8):
        k0 <<= np.uint64(8)
        k1 <<= np.uint64(8)
        if t < klen:
            k0 |= np.uint64(key[kstart + t])
        if 8 + t < klen:
            k1 |= np.uint64(key[kstart + 8 + t])
    return k0, k1


@njit(cache=True, nogil=True)
def _wcmp(w0, w1, k0, k1):
    """Compare a bound's prefix words ``(w0, w1)`` with a key's ``(k0, k1)``: -1, 1, or 2 for
    a tie (then :func:`_tail_cmp` decides). Scalars only: free to call from the probe loop."""
    if w0 != k0:
        return -1 if w0 < k0 else 1
    if w1 != k1:
        return -1 if w1 < k1 else 1
    return 2


@njit(cache=True, nogil=True)
def _tail_cmp(a, astart, alen, b, bstart, blen):
    """Compare two keys whose zero-padded 16-byte prefixes are equal: -1, 0, 1."""
    if alen <= 16 or blen <= 16:
        return 0 if alen == blen else (-1 if alen < blen else 1)
    return _cmp(a, astart + 16, alen - 16, b, bstart + 16, blen - 16)


@njit(cache=True, nogil=True)
def _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, first, stride, count):
    """Binary search over ``count`` entries of ``stride`` words from ``first``, each starting
    with a bound's two prefix words followed by its byte offset and length: the first entry
    whose bound is ``>= key`` (``count`` if none)."""
    lo = 0
    hi = count
    while lo < hi:
        mid = (lo + hi) >> 1
        e = first + mid * stride
        r = _wcmp(u64[e], u64[e + 1], k0, k1)
        if r == 2:
            r = _tail_cmp(bounds, meta[e + 2], meta[e + 3], key, kstart, klen)
        if r < 0:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _probe(meta, u64, words, bounds, h, key, kstart, klen, start):
    """The probe loop. A ``blocked`` v1 filter is checked by that family's own kernel
    (:func:`bloomdb.filters._blocked_kernels.check_bits` on its words inside this array, numba
    inlines it); the bound searches share :func:`_first_not_below` (measured: no slower than
    inline at 1M keys).

    Key comparisons go by the two big-endian prefix words first (``k0``, ``k1`` of the key
    against the words stored per bound): one or two integer compares instead of a byte loop."""
    n0 = meta[0]
    nlev = meta[1]
    g0 = h >> np.uint64(32)
    k0, k1 = key_words(key, kstart, klen)
    # slot order: L0 slots newest first, then for each level the one table whose range may hold key
    j = -1  # -1: L0, else level index
    s = start
    while True:
        if j < 0:
            if s >= n0:
                j = 0
                continue
            cand = s
            s += 1
        else:
            if j >= nlev:
                return -1
            s0 = meta[2 + 2 * j]
            c = meta[3 + 2 * j]
            j += 1
            if c == 0 or s0 + c <= start:
                continue
            # first table whose max key >= key
            cand = s0 + _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, SLOTS + s0 * STRIDE + 8, STRIDE, c)
            if cand < start or cand >= s0 + c:
                continue
        base = SLOTS + cand * STRIDE
        # key >= min key ?
        r = -_wcmp(u64[base + 4], u64[base + 5], k0, k1)
        if r == -2:
            r = _tail_cmp(key, kstart, klen, bounds, meta[base + 6], meta[base + 7])
        if r < 0:
            continue
        # key <= max key ?
        r = -_wcmp(u64[base + 8], u64[base + 9], k0, k1)
        if r == -2:
            r = _tail_cmp(key, kstart, klen, bounds, meta[base + 10], meta[base + 11])
        if r > 0:
            continue
        kind = meta[base]
        if kind == NONE:
            return cand  # no usable filter (none, or damaged: fail open)
        if kind == OTHER or kind == LAZY:
            return -cand - 2  # Python asks (another family) or loads the filter first
        if kind == PARTITIONED:
            pt = meta[base + 1]
            # first partition whose last key >= key
            lo = _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, pt, PSTRIDE, meta[base + 2])
            if lo == meta[base + 2]:  # beyond the last partition: not here
                meta[C_CHECKS] += 1
                meta[C_USEFUL] += 1
                continue
            e = pt + lo * PSTRIDE
            st = meta[e + 4]
            if st == P_DAMAGED:
                return cand
            if st != P_LOADED:
                return -cand - 2
            woff = meta[e + 5]
            nlines = meta[e + 6]
            k = meta[e + 7]
        else:
            woff = meta[base + 1]
            nlines = meta[base + 2]
            k = meta[base + 3]
        meta[C_CHECKS] += 1
        # the blocked family's own kernel, on its words at 32-bit index woff of this array
        if check_bits(words, line_word(h, np.uint64(nlines)) + np.uint64(woff), g0, k):
            meta[C_POSITIVE] += 1
            return cand
        meta[C_USEFUL] += 1


@njit(cache=True, nogil=True)
def probe(directory, key, start):
    """First slot ``>= start`` that may hold ``key`` (range and filter), ``-1`` when none, or
    ``-slot - 2`` when Python must decide for ``slot`` (a filter to load, or of another family:
    :meth:`directory.Directory.check`). One hash per call.

    ``directory`` is the whole probe structure in one int64 array (fewer arguments: numba's
    dispatch costs ~0.1 us per array argument): the ``meta`` words, then the filters' 32-bit
    words from 32-bit index ``directory[W32_BASE]``, then the key bounds from byte
    ``directory[BYTE_BASE]``; the offsets stored in ``meta`` are already absolute.
    """
    n = len(key)
    return _probe(directory, directory.view(np.uint64), directory.view(np.uint32), directory.view(np.uint8),
                  xxh3_64_bytes(key, 0, n), key, 0, n, start)


@njit(cache=True, nogil=True)
def probe_many(directory, data, offsets, out):
    """``out[i]`` = :func:`probe` of key ``i`` (Arrow layout) from slot 0."""
    u64 = directory.view(np.uint64)
    words = directory.view(np.uint32)
    bounds = directory.view(np.uint8)
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        n = offsets[i + 1] - s
        out[i] = _probe(directory, u64, words, bounds, xxh3_64_bytes(data, s, n), data, s, n, 0)


# ------------------------------------------------------------------------------------------
# data blocks
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _varint(buf, p, end):
    """(value, next position); next position -1 when the varint runs past ``end``."""
    result = np.int64(0)
    shift = 0
    while p < end and shift < 63:
        b = np.int64(buf[p])
        p += 1
        result |= (b & 0x7F) << shift
        if b < 128:
            return result, p
        shift += 7
    return np.int64(0), -1


@njit(cache=True, nogil=True)
def _r32(buf, p):
    return (np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16)
            | (np.int64(buf[p + 3]) << 24))  # fmt: skip


@njit(cache=True, nogil=True)
def _cmp_user(a, astart, alen, key):
    """Bytewise compare of a[astart:astart+alen] with key: -1, 0 or 1."""
    n = min(alen, len(key))
    for i in range(n):
        x = a[astart + i]
        y = key[i]
        if x != y:
            return -1 if x < y else 1
    if alen == len(key):
        return 0
    return -1 if alen < len(key) else 1


@njit(cache=True, nogil=True)
def _restarts(buf, start, size):
    """(number of restarts, position of the restart array); (-1, 0) when malformed."""
    if size < 4:
        return -1, 0
    nr = _r32(buf, start + size - 4)
    rpos = start + size - 4 - 4 * nr
    if nr < 1 or rpos < start:
        return -1, 0
    return nr, rpos


@njit(cache=True, nogil=True)
def block_get(buf, start, size, key, snap):
    """Search one data block for the newest version of ``key`` with sequence ``<= snap``.

    Returns ``(status, value offset, value length)``: status 1 value, 2 deletion, 0 missing,
    -1 malformed block. Cost: a binary search over restart points plus at most one restart
    interval of entries.
    """
    nr, rpos = _restarts(buf, start, size)
    if nr < 0:
        return ST_CORRUPT, 0, 0
    end = rpos
    # last restart whose user key < key
    lo = 0
    hi = nr
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        p = start + _r32(buf, rpos + 4 * mid)
        shared, p = _varint(buf, p, end)
        if p < 0:
            return ST_CORRUPT, 0, 0
        unshared, p = _varint(buf, p, end)
        if p < 0:
            return ST_CORRUPT, 0, 0
        vlen, p = _varint(buf, p, end)
        if p < 0 or shared != 0 or unshared < 8 or p + unshared > end:
            return ST_CORRUPT, 0, 0
        if _cmp_user(buf, p, unshared - 8, key) < 0:
            lo = mid
        else:
            hi = mid
    scratch = np.empty(size, np.uint8)
    klen = 0
    p = start + _r32(buf, rpos + 4 * lo)
    while p < end:
        shared, p = _varint(buf, p, end)
        if p < 0:
            return ST_CORRUPT, 0, 0
        unshared, p = _varint(buf, p, end)
        if p < 0:
            return ST_CORRUPT, 0, 0
        vlen, p = _varint(buf, p, end)
        if p < 0 or shared > klen or p + unshared + vlen > end or shared + unshared < 8:
            return ST_CORRUPT, 0, 0
        if shared + unshared > size:
            return ST_CORRUPT, 0, 0
        scratch[shared : shared + unshared] = buf[p : p + unshared]
        klen = shared + unshared
        p += unshared
        c = _cmp_user(scratch, 0, klen - 8, key)
        if c > 0:
            return ST_MISSING, 0, 0
        if c == 0:
            tr = np.uint64(0)
            for i in range(8):
                tr |= np.uint64(scratch[klen - 8 + i]) << np.uint64(8 * i)
            if (tr >> np.uint64(8)) <= np.uint64(snap):
                if (tr & np.uint64(0xFF)) == np.uint64(1):
                    return ST_VALUE, p, vlen
                return ST_DELETED, p, 0
        p += vlen
    return ST_MISSING, 0, 0


@njit(cache=True, nogil=True)
def _put_varint(out, p, v):
    while v >= 128:
        out[p] = np.uint8((v & 0x7F) | 0x80)
        v >>= 7
        p += 1
    out[p] = np.uint8(v)
    return p + 1


@njit(cache=True, nogil=True)
def encode_blocks(kdata, koff, trailers, vdata, voff, block_size, restart_interval):
    """Encode sorted entries into data blocks.

    Entry ``i`` has user key ``kdata[koff[i]:koff[i+1]]``, trailer ``trailers[i]`` and value
    ``vdata[voff[i]:voff[i+1]]``. A block ends once it holds ``>= block_size`` bytes, but never
    between two versions of one user key (so a point read looks in exactly one block).
    Returns ``(out, block_ends, block_last_entry)``: the blocks back to back in ``out``, the end
    offset of each block in ``out`` and the index of its last entry.
    """
    n = koff.shape[0] - 1
    total = 0
    for i in range(n):
        total += (koff[i + 1] - koff[i]) + 8 + (voff[i + 1] - voff[i]) + 15
    nblocks_max = n + 1
    out = np.empty(total + 8 * (n // max(restart_interval, 1) + 2) + 8 * nblocks_max + 64, np.uint8)
    ends = np.empty(nblocks_max, np.int64)
    lasts = np.empty(nblocks_max, np.int64)
    restarts = np.empty(n + 1, np.int64)
    prev = np.empty(0, np.uint8)
    cur = np.empty(0, np.uint8)
    nb = 0
    p = 0
    bstart = 0
    nr = 0
    count = 0
    prev_len = 0
    for i in range(n):
        ks = koff[i]
        uk = koff[i + 1] - ks
        klen = uk + 8
        if cur.shape[0] < klen:
            cur = np.empty(klen * 2, np.uint8)
        for j in range(uk):
            cur[j] = kdata[ks + j]
        tr = trailers[i]
        for j in range(8):
            cur[uk + j] = np.uint8((tr >> np.uint64(8 * j)) & np.uint64(0xFF))
        shared = 0
        if count % restart_interval == 0:
            restarts[nr] = p - bstart
            nr += 1
        else:
            m = min(prev_len, klen)
            while shared < m and prev[shared] == cur[shared]:
                shared += 1
        vs = voff[i]
        vlen = voff[i + 1] - vs
        p = _put_varint(out, p, shared)
        p = _put_varint(out, p, klen - shared)
        p = _put_varint(out, p, vlen)
        for j in range(shared, klen):
            out[p] = cur[j]
            p += 1
        out[p : p + vlen] = vdata[vs : vs + vlen]
        p += vlen
        count += 1
        prev, cur = cur, prev
        prev_len = klen
        same_next = False
        if i + 1 < n:
            nk = koff[i + 2] - koff[i + 1]
            if nk == uk:
                same_next = True
                for j in range(uk):
                    if kdata[koff[i + 1] + j] != kdata[ks + j]:
                        same_next = False
                        break
        if i == n - 1 or (p - bstart >= block_size and not same_next):
            for r in range(nr):
                v = restarts[r]
                for j in range(4):
                    out[p + j] = np.uint8((v >> (8 * j)) & 0xFF)
                p += 4
            for j in range(4):
                out[p + j] = np.uint8((nr >> (8 * j)) & 0xFF)
            p += 4
            ends[nb] = p
            lasts[nb] = i
            nb += 1
            bstart = p
            nr = 0
            count = 0
            prev_len = 0
    return out[:p], ends[:nb], lasts[:nb]


@njit(cache=True, nogil=True)
def first_of_key(kdata, koff):
    """``out[i]``: entry ``i`` is the first (newest) version of its user key."""
    n = koff.shape[0] - 1
    out = np.ones(n, np.bool_)
    for i in range(1, n):
        a = koff[i - 1]
        la = koff[i] - a
        b = koff[i]
        lb = koff[i + 1] - b
        if la == lb:
            same = True
            for j in range(la):
                if kdata[a + j] != kdata[b + j]:
                    same = False
                    break
            out[i] = not same
    return out


@njit(cache=True, nogil=True)
def _head(buf, p, end):
    """An entry's three varints: ``(shared, unshared, value length, next position)``; next
    position -1 when they run past ``end``."""
    shared, p = _varint(buf, p, end)
    if p < 0:
        return 0, 0, 0, -1
    unshared, p = _varint(buf, p, end)
    if p < 0:
        return 0, 0, 0, -1
    vlen, p = _varint(buf, p, end)
    return shared, unshared, vlen, p


@njit(cache=True, nogil=True)
def decoded_sizes(buf, offs, sizes):
    """Check the entry headers of the blocks and size their decoded form: ``(entries, user key
    bytes, value bytes)``, or ``(-1, 0, 0)`` for a malformed block."""
    n = 0
    kb = 0
    vb = 0
    for b in range(offs.shape[0]):
        nr, rpos = _restarts(buf, offs[b], sizes[b])
        if nr < 0:
            return -1, 0, 0
        p = offs[b]
        klen = 0
        while p < rpos:
            shared, unshared, vlen, p = _head(buf, p, rpos)
            if p < 0 or shared > klen or p + unshared + vlen > rpos or shared + unshared < 8:
                return -1, 0, 0
            klen = shared + unshared
            kb += klen - 8
            vb += vlen
            n += 1
            p += unshared + vlen
    return n, kb, vb


@njit(cache=True, nogil=True)
def decode_blocks(buf, offs, sizes):
    """Decode many data blocks of ``buf`` into packed arrays with the values copied out:
    ``(ok, kdata, koff, trailers, vdata, voff)`` (``ok`` False: a malformed block).

    Two passes: :func:`decoded_sizes` parses the entry headers only (and checks them) to size
    the outputs exactly, then :func:`decode_into` copies. Allocating exact sizes matters:
    over-sized outputs of a whole table cost page faults that made decoding 4x slower.
    """
    n, kb, vb = decoded_sizes(buf, offs, sizes)
    if n < 0:
        e8 = np.zeros(0, np.uint8)
        return False, e8, np.zeros(1, np.int64), np.zeros(0, np.uint64), e8, np.zeros(1, np.int64)
    kdata = np.empty(kb, np.uint8)
    koff = np.empty(n + 1, np.int64)
    trailers = np.empty(n, np.uint64)
    vdata = np.empty(vb, np.uint8)
    voff = np.empty(n + 1, np.int64)
    koff[0] = 0
    voff[0] = 0
    decode_into(buf, offs, sizes, kdata, koff, trailers, vdata, voff, 0)
    return True, kdata, koff, trailers, vdata, voff


@njit(cache=True, nogil=True)
def decode_into(buf, offs, sizes, kdata, koff, trailers, vdata, voff, first):
    """Decode blocks checked by :func:`decoded_sizes` into the outputs from entry ``first``
    (``koff[first]``/``voff[first]`` already hold where its key and value bytes start): several
    tables' entries decoded back to back without a concatenation."""
    scratch = np.empty(1024, np.uint8)
    i = first
    kpos = koff[first]
    vpos = voff[first]
    for b in range(offs.shape[0]):
        rpos = _restarts(buf, offs[b], sizes[b])[1]
        p = offs[b]
        while p < rpos:
            shared, unshared, vlen, p = _head(buf, p, rpos)  # checked by decoded_sizes
            klen = shared + unshared
            if klen > scratch.shape[0]:
                grown = np.empty(2 * klen, np.uint8)
                grown[:shared] = scratch[:shared]
                scratch = grown
            for t in range(unshared):
                scratch[shared + t] = buf[p + t]
            p += unshared
            uk = klen - 8
            for t in range(uk):
                kdata[kpos + t] = scratch[t]
            kpos += uk
            tr = np.uint64(0)
            for t in range(8):
                tr |= np.uint64(scratch[uk + t]) << np.uint64(8 * t)
            trailers[i] = tr
            vdata[vpos : vpos + vlen] = buf[p : p + vlen]
            vpos += vlen
            p += vlen
            i += 1
            koff[i] = kpos
            voff[i] = vpos


@njit(cache=True, nogil=True)
def _before(kdata, koff, trailers, i, j):
    """Entry ``i`` sorts before entry ``j``: smaller user key, or same key and newer sequence."""
    c = _cmp(kdata, koff[i], koff[i + 1] - koff[i], kdata, koff[j], koff[j + 1] - koff[j])
    if c != 0:
        return c < 0
    return (trailers[i] >> np.uint64(8)) > (trailers[j] >> np.uint64(8))


@njit(cache=True, nogil=True)
def merge_runs(kdata, koff, trailers, run_starts, smallest_snapshot, bottom):
    """k-way merge of sorted runs (entries ``run_starts[r]..run_starts[r+1]``) with the
    compaction drop rules; returns the indexes of the kept entries in merged order.

    A version is dropped when a newer version of its key has sequence ``<= smallest_snapshot``;
    a deletion with sequence ``<= smallest_snapshot`` is dropped when ``bottom``.
    Cost: O(n * runs) key comparisons (runs are few).
    """
    nruns = run_starts.shape[0] - 1
    heads = run_starts[:-1].copy()
    n = run_starts[nruns]
    out = np.empty(n, np.int64)
    m = 0
    last = -1
    last_seq = np.uint64(0)
    have_last = False
    snap = np.uint64(smallest_snapshot)
    while True:
        best = -1
        for r in range(nruns):
            if heads[r] < run_starts[r + 1]:
                if best < 0 or _before(kdata, koff, trailers, heads[r], heads[best]):
                    best = r
        if best < 0:
            break
        i = heads[best]
        heads[best] += 1
        same = have_last and _cmp(kdata, koff[i], koff[i + 1] - koff[i], kdata, koff[last], koff[last + 1] - koff[last]) == 0
        if not same:
            have_last = False
        seq = trailers[i] >> np.uint64(8)
        drop = have_last and last_seq <= snap
        if not drop and bottom and (trailers[i] & np.uint64(0xFF)) == np.uint64(0) and seq <= snap:
            drop = True
        have_last = True
        last_seq = seq
        last = i
        if not drop:
            out[m] = i
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def gather(data, off, idx):
    """Packed ``data``/``off`` items ``idx`` (in that order) as a new packed pair."""
    total = 0
    for j in range(idx.shape[0]):
        total += off[idx[j] + 1] - off[idx[j]]
    out = np.empty(total, np.uint8)
    o = np.zeros(idx.shape[0] + 1, np.int64)
    p = 0
    for j in range(idx.shape[0]):
        a = off[idx[j]]
        b = off[idx[j] + 1]
        out[p : p + b - a] = data[a:b]
        p += b - a
        o[j + 1] = p
    return out, o


@njit(cache=True, nogil=True)
def split_points(kdata, koff, voff, table_bytes):
    """End indexes of output tables of about ``table_bytes``, never between versions of a key."""
    n = koff.shape[0] - 1
    ends = np.empty(n + 1, np.int64)
    m = 0
    size = 0
    for i in range(n):
        size += (koff[i + 1] - koff[i]) + (voff[i + 1] - voff[i]) + 12
        if size >= table_bytes and i + 1 < n:
            if _cmp(kdata, koff[i], koff[i + 1] - koff[i], kdata, koff[i + 1], koff[i + 2] - koff[i + 1]) != 0:
                ends[m] = i + 1
                m += 1
                size = 0
    if n > 0:
        ends[m] = n
        m += 1
    return ends[:m]
