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
where it runs (:data:`bloomdb.checksum.HW_RANGES`). The index is read by :mod:`._index_kernels`, as
the checked path's ``parse_index`` reads it. The CRC and the index kernels come from other files, whose edits reach this file's cache stamp through
:mod:`bloomdb._jit_cache` (it hashes every bloomdb module a kernel file imports).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._checksum_kernels import crc32c_range
from ..._intrinsics import le_uint as _le
from ._index_kernels import ENTRY, fill_index, index_key_bytes

ST_OK = 0
ST_SLOW = 1  #: not accepted here: the Python path decides (and raises on damage)

MAGIC = 0x0031544253424442  # footer.MAGIC ("BDBSBT1\0")
FOOTER_SIZE = 64
FORMAT_VERSION = 1
TRAILER = 5
RAW = 0




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


#: the meta block's fixed part (``footer._META_FIXED``: six u64 -- entries, deletions, min and
#: max sequence, key and value bytes -- and u32 block count), then ``u32 len, min key``
META_FIXED = 52
RDEL = 0x4C454452  # footer.RDEL_MARK (b"RDEL") little-endian


@njit(cache=True, nogil=True)
def _meta_facts(buf, mo, ms, ko, kl):
    """``(ok, entries, deletions, block count, has range tombstones)`` of the meta block
    ``buf[mo : mo + ms]``, ``ok`` only when its max key equals the ``kl`` bytes at ``ko`` (the
    index's last key): its fixed part, its two keys and its filter spec are walked (the rest --
    range tombstones, prefix filter -- is :func:`.footer.decode_meta`'s, when the table's meta is
    first asked for); range tombstones are there when the ``RDEL`` mark follows the spec, as
    ``decode_meta`` reads it."""
    me = mo + ms
    if ms < META_FIXED + 4:
        return False, 0, 0, 0, False
    p = mo + META_FIXED
    p += 4 + np.int64(_le(buf, p, 4))  # past the min key
    if p + 4 > me:
        return False, 0, 0, 0, False
    n = np.int64(_le(buf, p, 4))
    x = p + 4
    p = x + n  # past the max key
    if p + 2 > me or n != kl:
        return False, 0, 0, 0, False
    for t in range(n):
        if buf[x + t] != buf[ko + t]:
            return False, 0, 0, 0, False
    p += 2 + np.int64(_le(buf, p, 2))  # past the filter spec
    if p > me:
        return False, 0, 0, 0, False
    rdel = p + 4 <= me and _le(buf, p, 4) == np.uint64(RDEL)
    return True, np.int64(_le(buf, mo, 8)), np.int64(_le(buf, mo + 8, 8)), np.int64(_le(buf, mo + 48, 4)), rdel


@njit(cache=True, nogil=True)
def open_table(buf):
    """``(status, handles, index)`` of the table whose whole file is ``buf`` (uint8): handles
    ``[filter off, filter size, meta off, meta size, index off, index size, entries, deletions,
    has range tombstones]`` (int64; the last three from the meta block, whose block count and
    max key are checked against the index here: :func:`_meta_facts`) and the index array of
    :func:`._table_kernels.parse_index` (``n``, then per block the last key's two big-endian
    prefix words, its byte offset and length in the array, the block's offset and size; then
    the keys' bytes). ``ST_SLOW``: the file is not accepted here (see the module)."""
    handles = np.zeros(9, np.int64)
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
    total, q = index_key_bytes(buf, p + 4, nb, end)
    if q != end or nb == 0:
        return ST_SLOW, handles, empty
    a, ordered = fill_index(buf, p + 4, nb, total, end)
    if not ordered:
        return ST_SLOW, handles, empty  # keys out of order: the Python path says so
    klen = a[1 + ENTRY * (nb - 1) + 3]
    ok, entries, deletions, blocks, rdel = _meta_facts(buf, handles[2], handles[3], end - klen, klen)
    if not ok or blocks != nb:
        return ST_SLOW, handles, empty  # the Python path names the mismatch
    handles[6] = entries
    handles[7] = deletions
    handles[8] = 1 if rdel else 0
    return ST_OK, handles, a
