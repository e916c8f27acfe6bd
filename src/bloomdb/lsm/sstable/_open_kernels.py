"""numba kernel of a table open in ONE call (:meth:`.reader.Table.__init__`): the footer, the
meta block's and the index block's CRC32C, and the index parsed into the array
:func:`._table_kernels.table_get` searches -- straight from the mapped file, no copy of a block
and no Python object per block.

The Python open this replaces (``decode_footer``, two ``unframe`` calls that copy the block out
of the map to checksum it, ``parse_index`` whose per-entry helpers and slice copies cost ~50 ns
an entry, two ``tolist`` of the offsets) took ~90 us for a 2 MB table of 443 blocks; a 5M-key
store opens ~310 of them. This kernel checks the same things; whatever it does not accept (a
short or damaged file, a compressed or malformed meta/index block, keys out of order) it hands
back with ``ST_SLOW``, and the Python path runs and raises the exact error naming the file.

CRC32C is the SSE4.2 kernel of :mod:`bloomdb._checksum_kernels`: callers use this module only
where it runs (:data:`bloomdb.checksum.HW_RANGES`). The byte helpers are local; the CRC and the
unaligned loads come from other files, whose edits reach this file's cache stamp through
:mod:`bloomdb._jit_cache` (it hashes every bloomdb module a kernel file imports).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._checksum_kernels import crc32c_range
from ..._intrinsics import load_u64, store_u64

ST_OK = 0
ST_SLOW = 1  #: not accepted here: the Python path decides (and raises on damage)

MAGIC = 0x0031544253424442  # footer.MAGIC ("BDBSBT1\0")
FOOTER_SIZE = 64
FORMAT_VERSION = 1
TRAILER = 5
RAW = 0


@njit(cache=True, nogil=True, inline="always")
def _le(b, p, width):
    v = np.uint64(0)
    for t in range(width):
        v |= np.uint64(b[p + t]) << np.uint64(8 * t)
    return v


@njit(cache=True, nogil=True, inline="always")
def _bswap(x):
    """``x`` with its 8 bytes in reverse order (LLVM makes it one ``bswap``)."""
    x = ((x & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | ((x >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
    x = ((x & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | ((x >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF))
    return (x << np.uint64(32)) | (x >> np.uint64(32))


@njit(cache=True, nogil=True, inline="always")
def _be_word(b, p, n, end):
    """Bytes ``b[p:p+min(n, 8)]`` as a big-endian uint64, zero-padded to 8 bytes (``end``: the
    bytes may be read up to there)."""
    if n >= 8:
        return _bswap(load_u64(b, p)) if p + 8 <= end else _be_bytes(b, p, 8)
    if n <= 0:
        return np.uint64(0)
    return _be_bytes(b, p, n)


@njit(cache=True, nogil=True, inline="always")
def _be_bytes(b, p, m):
    w = np.uint64(0)
    for t in range(m):
        w = (w << np.uint64(8)) | np.uint64(b[p + t])
    return w << np.uint64(8 * (8 - m)) if m < 8 else w


@njit(cache=True, nogil=True)
def block_ok(buf, off, size):
    """Block ``[off, off + size)`` lies inside the file, is stored raw and its CRC32C (of the
    bytes and the type byte) matches its trailer."""
    n = buf.shape[0]
    if off < 0 or size < 0 or off + size + TRAILER > n:
        return False
    if buf[off + size] != RAW:
        return False
    return crc32c_range(buf, off, off + size + 1) == _le(buf, off + size + 1, 4)


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
def open_table(buf):
    """``(status, handles, index)`` of the table whose whole file is ``buf`` (uint8): handles
    ``[filter off, filter size, meta off, meta size, index off, index size, last key's offset in
    the file, its length]`` (int64: the caller checks the last key against the meta block) and the
    index array of :func:`._table_kernels.parse_index` (``n``, then per block the last key's two
    big-endian prefix words, its byte offset and length in the array, the block's offset and
    size; then the keys' bytes). ``ST_SLOW``: the file is not accepted here (see the module)."""
    handles = np.zeros(8, np.int64)
    empty = np.zeros(1, np.int64)
    n = buf.shape[0]
    if n < FOOTER_SIZE:
        return ST_SLOW, handles, empty
    f = n - FOOTER_SIZE
    if _le(buf, n - 8, 8) != np.uint64(MAGIC):
        return ST_SLOW, handles, empty
    if crc32c_range(buf, f, n - 12) != _le(buf, n - 12, 4) or _le(buf, n - 16, 4) != FORMAT_VERSION:
        return ST_SLOW, handles, empty
    for j in range(6):
        v = _le(buf, f + 8 * j, 8)
        if v > np.uint64(n):
            return ST_SLOW, handles, empty
        handles[j] = np.int64(v)
    if not block_ok(buf, handles[2], handles[3]) or not block_ok(buf, handles[4], handles[5]):
        return ST_SLOW, handles, empty
    p = handles[4]
    end = p + handles[5]
    if handles[5] < 4:
        return ST_SLOW, handles, empty
    nb = np.int64(_le(buf, p, 4))
    p += 4
    q = p
    total = 0
    for i in range(nb):  # first pass: the entries fit the block; the keys' total length
        if q + 16 > end:
            return ST_SLOW, handles, empty
        klen = np.int64(load_u64(buf, q + 8) >> np.uint64(32))
        q += 16 + klen
        if q > end:
            return ST_SLOW, handles, empty
        total += klen
    if q != end or nb == 0:
        return ST_SLOW, handles, empty
    head = 1 + 6 * nb
    a = np.empty(head + (total + 7) // 8, np.int64)
    a[-1] = 0  # the keys' padding
    u64 = a.view(np.uint64)
    u8 = a.view(np.uint8)
    a[0] = nb
    q = p
    kpos = 8 * head
    for i in range(nb):
        e = 1 + 6 * i
        a[e + 4] = np.int64(load_u64(buf, q))
        v = load_u64(buf, q + 8)
        a[e + 5] = np.int64(v & np.uint64(0xFFFFFFFF))
        klen = np.int64(v >> np.uint64(32))
        q += 16
        w0 = _be_word(buf, q, klen, end)
        w1 = _be_word(buf, q + 8, klen - 8, end)
        u64[e] = w0
        u64[e + 1] = w1
        a[e + 2] = kpos
        a[e + 3] = klen
        t = 0
        while t + 8 <= klen:  # 8 bytes at a time (the array has room: keys end 8-aligned)
            store_u64(u8, kpos + t, load_u64(buf, q + t))
            t += 8
        while t < klen:
            u8[kpos + t] = buf[q + t]
            t += 1
        if i > 0:
            pw0 = u64[e - 6]
            pw1 = u64[e - 5]
            if pw0 > w0 or (pw0 == w0 and (pw1 > w1 or (pw1 == w1 and _tail_greater(u8, a[e - 4], a[e - 3], kpos, klen)))):
                return ST_SLOW, handles, empty  # keys out of order: the Python path says so
        handles[6] = q
        handles[7] = klen
        kpos += klen
        q += klen
    return ST_OK, handles, a
