"""numba kernels of SSTable data blocks and key order: the block codec and the bytewise key
comparisons every layer above shares (the table index search, the probe directory, compaction).

Data block (see docs/formats.md): entries ``varint shared, varint unshared, varint vlen,
key[shared:], value`` over internal keys (user key + 8-byte little-endian ``seq << 8 | type``),
then ``uint32`` restart offsets and their ``uint32`` count. All kernels are pure: arrays in,
numbers/arrays out; they never raise on bad bytes (they return a status that Python turns into
``CorruptionError``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._intrinsics import copy_bytes, load_u64, popcount64, prefetch, store_u64

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


@njit(cache=True, nogil=True, inline="always")
def _prefetch_span(buf, a, lo, hi, lines):
    """Prefetch the cache lines of ``buf[a:hi]`` (``lines`` of them when ``lines > 0``), ``a``
    clamped into ``[lo, hi)``: a hint, never a fault, whatever the bytes say."""
    if a < lo or a >= hi:
        return
    e = hi if lines <= 0 else min(hi, a + 64 * lines)
    a -= a & 63  # from the line holding ``a`` (the map is page-aligned: indexes align as addresses)
    while a < e:
        prefetch(buf, a)
        a += 64


@njit(cache=True, nogil=True, inline="always")
def _entry_head(buf, p, end):
    """An entry's ``(shared, unshared, value length, position after them)``; the position is -1
    when a varint runs past ``end``. Three one-byte varints (keys and values under 128 bytes: the
    common entry) are read at once, as LevelDB's ``DecodeEntry`` does."""
    if p + 3 <= end:
        a = np.int64(buf[p])
        b = np.int64(buf[p + 1])
        c = np.int64(buf[p + 2])
        if (a | b | c) < 128:
            return a, b, c, p + 3
    shared, p = _varint(buf, p, end)
    if p < 0:
        return np.int64(0), np.int64(0), np.int64(0), -1
    unshared, p = _varint(buf, p, end)
    if p < 0:
        return np.int64(0), np.int64(0), np.int64(0), -1
    vlen, p = _varint(buf, p, end)
    return shared, unshared, vlen, p


@njit(cache=True, nogil=True, inline="always")
def _scan(buf, size, end, p, key, snap, strict):
    """The entries of a block from ``p`` (a restart entry) up to ``end`` (its restart array),
    for the newest version of ``key`` with sequence ``<= snap``: ``(status, value offset, value
    length)`` as :func:`block_get`'s. ``strict``: ``p`` was chosen from a hint
    (:func:`block_get_hinted`): when the entry at ``p`` does not sort strictly before ``key``
    the hint is not to be trusted and the status is ``ST_RETRY`` (search the whole block)."""
    scratch = np.empty(min(size, 128), np.uint8)  # the current entry's key; grown for a longer one
    klen = 0
    tl = len(key)
    m = 0  # the current entry's user key and ``key`` agree on their first m bytes
    while p < end:
        shared, unshared, vlen, p = _entry_head(buf, p, end)
        if p < 0 or shared > klen or p + unshared + vlen > end or shared + unshared < 8:
            return ST_CORRUPT, 0, 0
        if shared + unshared > size:
            return ST_CORRUPT, 0, 0
        if shared + unshared > scratch.shape[0]:  # (a small buffer first: 15 ns against 40 for 4 KiB)
            grown = np.empty(size, np.uint8)
            copy_bytes(grown, 0, scratch, 0, shared)
            scratch = grown
        copy_bytes(scratch, shared, buf, p, unshared)  # in bounds: checked just above
        klen = shared + unshared
        p += unshared
        # bytewise compare of the user key with ``key``, from the first byte that may differ: the
        # first ``shared`` bytes are the previous key's, which agreed with ``key`` on m bytes
        ulen = klen - 8
        j = min(m, shared, ulen, tl)
        while j < ulen and j < tl and scratch[j] == key[j]:
            j += 1
        m = j
        if j < ulen and j < tl:
            c = -1 if scratch[j] < key[j] else 1
        else:
            c = 0 if ulen == tl else (-1 if ulen < tl else 1)
        if strict:
            if c >= 0:
                return ST_RETRY, 0, 0
            strict = False
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
def block_get(buf, start, size, key, snap):
    """Search one data block for the newest version of ``key`` with sequence ``<= snap``.

    Returns ``(status, value offset, value length)``: status 1 value, 2 deletion, 0 missing,
    -1 malformed block. Cost: a binary search over restart points plus at most one restart
    interval of entries, each compared from the first byte that may differ from ``key`` (the
    bytes it shares with the entry before it are not compared again): 557 -> 435 ns per
    present-key lookup with the block in cache (docs/benchmarks.md, seventh session).

    A block not in cache costs a memory miss per cache line the search steps on, each one waiting
    for the line before (an entry's varints give the next entry's place). So the lines are asked
    for ahead (:func:`_prefetch_span`, never faults): every restart entry's once the restart array
    is read (at most 16 restarts), then the whole chosen restart interval: the misses overlap
    (~1160 -> ~940 ns per present key of a 1M store read at random, kernel only; loaded
    machine, docs/benchmarks.md "getpath"). :func:`block_get_hinted` skips the restart array
    and the restart entries when the block's restart keys are known already.
    """
    nr, rpos = _restarts(buf, start, size)
    if nr < 0:
        return ST_CORRUPT, 0, 0
    end = rpos
    if nr <= 16:
        for t in range(1, nr):
            _prefetch_span(buf, start + _r32(buf, rpos + 4 * t), start, end, 1)
    # last restart whose user key < key
    lo = 0
    hi = nr
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        shared, unshared, vlen, p = _entry_head(buf, start + _r32(buf, rpos + 4 * mid), end)
        if p < 0 or shared != 0 or unshared < 8 or p + unshared > end:
            return ST_CORRUPT, 0, 0
        if _cmp_user(buf, p, unshared - 8, key) < 0:
            lo = mid
        else:
            hi = mid
    p = start + _r32(buf, rpos + 4 * lo)
    if lo + 1 < nr:  # the interval: up to the next restart entry
        _prefetch_span(buf, p, start, start + _r32(buf, rpos + 4 * (lo + 1)), 0)
    else:
        _prefetch_span(buf, p, start, end, 0)
    return _scan(buf, size, end, p, key, snap, False)


# -- block hints: a data block's restart keys kept in memory ------------------------------------
#: a block's hint: ``HINT_WORDS`` uint64 words (one cache line). Word 0: the number of restarts
#: (bits 0-7; 0: no hint yet; ``HINT_NONE``: the block has none, read it whole) and the offsets of
#: restarts 1..3 in the block (16 bits each from bit 8); words 1..6: the two big-endian prefix
#: words (:func:`key_words`) of the user keys of restarts 1..3
HINT_WORDS = 8
HINT_RESTARTS = 4  #: at most this many restarts in a hinted block
HINT_NONE = 0xFF
ST_RETRY = -3  #: :func:`_scan`: the hint led past the key, search the whole block


@njit(cache=True, nogil=True)
def block_hint(buf, start, size, out, pos):
    """Write data block ``buf[start:start+size]``'s hint into ``out[pos:pos+8*HINT_WORDS]``
    (uint8, ``pos`` a multiple of 8) and return its word 0: ``HINT_NONE`` for a block with more
    than :data:`HINT_RESTARTS` restarts, a restart past 64 KiB, or bytes that do not parse.
    The key words are written before word 0; a reader on another thread that sees word 0 but
    stale key words is caught by :func:`block_get_hinted`'s check. Cost: the restart array and
    up to three restart entries (the block is in cache on its first read: its CRC was just
    checked)."""
    nr, rpos = _restarts(buf, start, size)
    h = np.uint64(HINT_NONE)
    if 1 <= nr <= HINT_RESTARTS and _r32(buf, rpos) == 0:
        h = np.uint64(nr)
        for t in range(1, nr):
            off = _r32(buf, rpos + 4 * t)
            if off >= 65536:
                h = np.uint64(HINT_NONE)
                break
            shared, unshared, vlen, p = _entry_head(buf, start + off, rpos)
            if p < 0 or shared != 0 or unshared < 8 or p + unshared > rpos:
                h = np.uint64(HINT_NONE)
                break
            k0, k1 = key_words(buf, p, unshared - 8)
            store_u64(out, pos + 16 * t - 8, k0)
            store_u64(out, pos + 16 * t, k1)
            h |= np.uint64(off) << np.uint64(16 * t - 8)
    store_u64(out, pos, h)
    return h


@njit(cache=True, nogil=True, inline="always")
def block_get_hinted(buf, start, size, h, hints, pos, key, k0, k1, snap):
    """:func:`block_get` through the block's hint (word 0 ``h``, the words at ``hints[pos:]``,
    ``h`` neither 0 nor ``HINT_NONE``; ``(k0, k1)``: ``key``'s prefix words): the restart interval
    is chosen from the hint's key words -- the last restart whose words sort strictly below
    ``key``'s, which sorts strictly below ``key`` -- and only its lines are fetched: no wait for
    the restart array, then for the restart entries. Ties (equal words) take the interval before,
    which the scan reads on from. Returns ``ST_RETRY`` when the entry the hint names does not
    sort below ``key`` (a hint read while another thread wrote it): the caller searches the
    whole block."""
    nr = np.int64(h & np.uint64(0xFF))
    r = 0
    for t in range(1, nr):
        w0 = load_u64(hints, pos + 16 * t - 8)
        w1 = load_u64(hints, pos + 16 * t)
        if w0 < k0 or (w0 == k0 and w1 < k1):
            r = t
        else:
            break
    end = start + size - 4 - 4 * nr
    p = start
    if r > 0:
        p += np.int64((h >> np.uint64(16 * r - 8)) & np.uint64(0xFFFF))
    iend = end
    if r + 1 < nr:
        iend = start + np.int64((h >> np.uint64(16 * r + 8)) & np.uint64(0xFFFF))
    _prefetch_span(buf, p, start, iend, 0)
    return _scan(buf, size, end, p, key, snap, r > 0)


@njit(cache=True, nogil=True)
def _put_varint(out, p, v):
    while v >= 128:
        out[p] = np.uint8((v & 0x7F) | 0x80)
        v >>= 7
        p += 1
    out[p] = np.uint8(v)
    return p + 1


@njit(cache=True, nogil=True, inline="always")
def _common_prefix(data, a, b, m):
    """Length of the common prefix of ``data[a:a+m]`` and ``data[b:b+m]``: 8 bytes per step
    (one unaligned load each, the first differing byte from the XOR's trailing zeros), then
    byte by byte for the last < 8."""
    k = 0
    while k + 8 <= m:
        x = load_u64(data, a + k) ^ load_u64(data, b + k)
        if x != np.uint64(0):
            return k + np.int64(popcount64((x & (np.uint64(0) - x)) - np.uint64(1)) >> np.uint64(3))
        k += 8
    while k < m and data[a + k] == data[b + k]:
        k += 1
    return k


@njit(cache=True, nogil=True)
def encode_blocks(kdata, koff, trailers, vdata, voff, vidx, block_size, restart_interval, gap):
    """Encode sorted entries into data blocks, each followed by ``gap`` bytes left for its trailer.

    Entry ``i`` has user key ``kdata[koff[i]:koff[i+1]]``, trailer ``trailers[i]`` and value
    ``vdata[voff[j]:voff[j+1]]`` with ``j = vidx[i]`` (values are read where they lie: a flush's
    sort order or a compaction's kept entries need no gathered copy of them). A block ends once
    it holds ``>= block_size`` bytes, but never between two versions of one user key (so a
    point read looks in exactly one block). Returns ``(out, starts, sizes, lasts, value_bytes)``:
    block ``b`` is ``out[starts[b]:starts[b] + sizes[b]]`` (then ``gap`` zero bytes), ``lasts[b]``
    its last entry; ``value_bytes`` the values' total.
    Cost: one pass; the shared prefix is found on the packed keys (no key copy per entry).
    """
    n = koff.shape[0] - 1
    total = 0
    for i in range(n):
        j = vidx[i]
        total += (koff[i + 1] - koff[i]) + (voff[j + 1] - voff[j]) + 8 + 15
    nblocks_max = n + 1
    out = np.empty(total + 8 * (n // max(restart_interval, 1) + 2) + (8 + gap) * nblocks_max + 64, np.uint8)
    starts = np.empty(nblocks_max, np.int64)
    sizes = np.empty(nblocks_max, np.int64)
    lasts = np.empty(nblocks_max, np.int64)
    restarts = np.empty(n + 1, np.int64)
    nb = 0
    p = 0
    bstart = 0
    nr = 0
    count = 0
    vbytes = 0
    for i in range(n):
        ks = koff[i]
        uk = koff[i + 1] - ks
        klen = uk + 8
        tr = trailers[i]
        shared = 0
        if count % restart_interval == 0:
            restarts[nr] = p - bstart
            nr += 1
        else:  # shared prefix of the internal keys (user key, then the trailer's 8 bytes)
            ps = koff[i - 1]
            pk = ks - ps
            shared = _common_prefix(kdata, ps, ks, min(pk, uk))
            if shared == uk and pk == uk:  # same user key: the trailers' bytes may share too
                ptr = trailers[i - 1]
                t = 0
                while t < 8 and ((ptr >> np.uint64(8 * t)) & np.uint64(0xFF)) == ((tr >> np.uint64(8 * t)) & np.uint64(0xFF)):
                    t += 1
                shared += t
        j = vidx[i]
        vs = voff[j]
        vlen = voff[j + 1] - vs
        vbytes += vlen
        p = _put_varint(out, p, shared)
        p = _put_varint(out, p, klen - shared)
        p = _put_varint(out, p, vlen)
        if shared < uk:
            copy_bytes(out, p, kdata, ks + shared, uk - shared)  # one memmove (a slice copies byte by byte)
            p += uk - shared
            store_u64(out, p, tr)  # the whole trailer, little-endian, in one store
            p += 8
        else:
            for t in range(shared - uk, 8):
                out[p] = np.uint8((tr >> np.uint64(8 * t)) & np.uint64(0xFF))
                p += 1
        copy_bytes(out, p, vdata, vs, vlen)
        p += vlen
        count += 1
        same_next = False
        if i + 1 < n and p - bstart >= block_size:
            nk = koff[i + 2] - koff[i + 1]
            if nk == uk:
                same_next = True
                for t in range(uk):
                    if kdata[koff[i + 1] + t] != kdata[ks + t]:
                        same_next = False
                        break
        if i == n - 1 or (p - bstart >= block_size and not same_next):
            for r in range(nr):
                v = restarts[r]
                for t in range(4):
                    out[p + t] = np.uint8((v >> (8 * t)) & 0xFF)
                p += 4
            for t in range(4):
                out[p + t] = np.uint8((nr >> (8 * t)) & 0xFF)
            p += 4
            starts[nb] = bstart
            sizes[nb] = p - bstart
            lasts[nb] = i
            nb += 1
            for t in range(gap):
                out[p + t] = 0
            p += gap
            bstart = p
            nr = 0
            count = 0
    return out[:p], starts[:nb], sizes[:nb], lasts[:nb], vbytes


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
            out[i] = _common_prefix(kdata, a, b, la) != la
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
    kdata, koff, trailers, vdata, voff = packed_empty(n, kb, vb)
    decode_into(buf, offs, sizes, kdata, koff, trailers, vdata, voff, 0)
    return True, kdata, koff, trailers, vdata, voff


@njit(cache=True, nogil=True)
def packed_empty(n, kb, vb):
    """Room for ``n`` decoded entries of ``kb`` key and ``vb`` value bytes: ``(kdata, koff,
    trailers, vdata, voff)``, the offsets' first word 0 (exact sizes: no page touched in vain)."""
    koff = np.empty(n + 1, np.int64)
    voff = np.empty(n + 1, np.int64)
    koff[0] = 0
    voff[0] = 0
    return np.empty(kb, np.uint8), koff, np.empty(n, np.uint64), np.empty(vb, np.uint8), voff


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
            copy_bytes(scratch, shared, buf, p, unshared)  # scratch holds klen bytes
            p += unshared
            uk = klen - 8
            copy_bytes(kdata, kpos, scratch, 0, uk)
            kpos += uk
            trailers[i] = load_u64(scratch, uk)  # the 8 trailer bytes, little-endian (klen <= scratch size)
            copy_bytes(vdata, vpos, buf, p, vlen)  # in bounds: decoded_sizes checked p + vlen <= rpos
            vpos += vlen
            p += vlen
            i += 1
            koff[i] = kpos
            voff[i] = vpos


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
        copy_bytes(out, p, data, a, b - a)
        p += b - a
        o[j + 1] = p
    return out, o
