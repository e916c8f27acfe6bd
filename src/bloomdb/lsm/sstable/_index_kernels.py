"""numba kernels that read a table's index block into the one int64 array
:func:`._table_kernels.table_get` searches. Both table-open paths use them: the one-call open of
:mod:`._open_kernels` (straight from the mapped file) and :func:`._table_kernels.parse_index`
(the checked Python path that names the damage).

The index block is ``u32 n`` then per data block ``u64 offset, u32 size, u32 key length, key``
(docs/formats.md). The array is ``n``, then per block six words -- the last key's two big-endian
16-byte prefix words, its byte offset and length in the array, the block's offset and size --
then the keys' bytes, zero-padded to a whole word. Cost: two passes over the entries, one
unaligned 8-byte load per 8 key bytes, no Python object per block.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._intrinsics import load_u64, store_u64

ENTRY = 6  #: int64 words per block in the index array, after the count


@njit(cache=True, nogil=True, inline="always")
def _bswap(x):
    """``x`` with its 8 bytes in reverse order (LLVM makes it one ``bswap``)."""
    x = ((x & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | ((x >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
    x = ((x & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | ((x >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF))
    return (x << np.uint64(32)) | (x >> np.uint64(32))


@njit(cache=True, nogil=True, inline="always")
def _be_bytes(b, p, m):
    w = np.uint64(0)
    for t in range(m):
        w = (w << np.uint64(8)) | np.uint64(b[p + t])
    return w << np.uint64(8 * (8 - m)) if m < 8 else w


@njit(cache=True, nogil=True, inline="always")
def _be_word(b, p, n, end):
    """Bytes ``b[p:p+min(n, 8)]`` as a big-endian uint64, zero-padded to 8 bytes (``end``: the
    bytes may be read up to there)."""
    if n >= 8:
        return _bswap(load_u64(b, p)) if p + 8 <= end else _be_bytes(b, p, 8)
    if n <= 0:
        return np.uint64(0)
    return _be_bytes(b, p, n)


@njit(cache=True, nogil=True)
def _tail_greater(u8, a, la, b, lb):
    """Whether key ``a`` (``la`` bytes at ``u8[a:]``) sorts after key ``b``, their 16-byte prefix
    words being equal."""
    if la <= 16 or lb <= 16:
        return la > lb
    m = min(la, lb)
    for t in range(16, m):
        x = u8[a + t]
        y = u8[b + t]
        if x != y:
            return x > y
    return la > lb


@njit(cache=True, nogil=True)
def index_key_bytes(b, p, n, end):
    """``(total key bytes, end of the last entry)`` of the ``n`` entries starting at byte ``p``
    of ``b``; ``(-1, -1)`` when an entry runs past ``end`` (``end <= len(b)``)."""
    q = p
    total = 0
    for i in range(n):
        if q + 16 > end:
            return -1, -1
        klen = np.int64(load_u64(b, q + 8) >> np.uint64(32))
        q += 16 + klen
        if q > end:
            return -1, -1
        total += klen
    return total, q


@njit(cache=True, nogil=True)
def fill_index(b, p, n, total, end):
    """The index array of the ``n`` entries from byte ``p`` of ``b`` whose keys hold ``total``
    bytes (:func:`index_key_bytes` has checked that they end by ``end``). Returns ``(array,
    ok)``: ``ok`` is False when a key sorts before the one above it (equal neighbours are
    allowed; the array is then incomplete and must not be used)."""
    head = 1 + ENTRY * n
    a = np.empty(head + (total + 7) // 8, np.int64)
    a[-1] = 0  # the keys' padding
    u64 = a.view(np.uint64)
    u8 = a.view(np.uint8)
    a[0] = n
    q = p
    kpos = 8 * head
    for i in range(n):
        e = 1 + ENTRY * i
        a[e + 4] = np.int64(load_u64(b, q))
        v = load_u64(b, q + 8)
        a[e + 5] = np.int64(v & np.uint64(0xFFFFFFFF))
        klen = np.int64(v >> np.uint64(32))
        q += 16
        w0 = _be_word(b, q, klen, end)
        w1 = _be_word(b, q + 8, klen - 8, end)
        u64[e] = w0
        u64[e + 1] = w1
        a[e + 2] = kpos
        a[e + 3] = klen
        t = 0
        while t + 8 <= klen:  # 8 bytes at a time (the array has room: keys end 8-aligned)
            store_u64(u8, kpos + t, load_u64(b, q + t))
            t += 8
        while t < klen:
            u8[kpos + t] = b[q + t]
            t += 1
        if i > 0:
            pw0 = u64[e - ENTRY]
            pw1 = u64[e - ENTRY + 1]
            if pw0 > w0 or (pw0 == w0 and (pw1 > w1 or (pw1 == w1 and _tail_greater(u8, a[e - 4], a[e - 3], kpos, klen)))):
                return a, False
        kpos += klen
        q += klen
    return a, True
