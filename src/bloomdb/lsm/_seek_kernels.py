"""numba kernel of an iterator's first round (:mod:`bloomdb.lsm.seek`): the entries of one table
from a key on, a few data blocks at most, decoded in one call straight from the mapped file.

Index array and block layout: :func:`bloomdb.lsm.sstable._table_kernels.parse_index` and
:mod:`bloomdb.lsm.sstable._block_kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._scan_kernels import count_below
from .sstable._block_kernels import _cmp, _first_not_below, decode_blocks, key_words

#: blocks decoded at most by one call
MAX_BLOCKS = 4


@njit(cache=True, nogil=True)
def seek_table(buf, index, checked, lo, hi, has_hi, limit):
    """The entries ``lo <= key < hi`` (``has_hi`` False: no upper bound) of the table whose file
    bytes are ``buf`` and index array ``index``: the blocks from the first whose last key is
    ``>= lo`` on, until at least ``limit`` entries are in range, the range or the table ends, or
    ``MAX_BLOCKS`` blocks are read. Returns ``(status, block, more, kdata, koff, trailers, vdata,
    voff)``: status 0 ok (``more``: the range goes on past the last block read -- every entry of
    the table in range up to the last one returned is returned), 1 block ``block`` must be
    checked first (its CRC32C: ``checked[block] == 0``), -1 a malformed block. Cost: one index
    search, one decode of the blocks."""
    n = index[0]
    k0, k1 = key_words(lo, 0, lo.shape[0])
    u8 = index.view(np.uint8)
    first = _first_not_below(index, index.view(np.uint64), u8, lo, 0, lo.shape[0], k0, k1, 1, 6, n)
    e8 = np.zeros(0, np.uint8)
    z1 = np.zeros(1, np.int64)
    if first >= n:
        return 0, 0, False, e8, z1, np.zeros(0, np.uint64), e8, z1
    last = first
    while True:
        if checked[last] == 0:
            return 1, last, False, e8, z1, np.zeros(0, np.uint64), e8, z1
        e = 1 + 6 * last
        # the block's last key >= hi: the range ends in this block
        more = not has_hi or _cmp(u8, index[e + 2], index[e + 3], hi, 0, hi.shape[0]) < 0
        offs = np.empty(last - first + 1, np.int64)
        sizes = np.empty(last - first + 1, np.int64)
        for b in range(first, last + 1):
            offs[b - first] = index[1 + 6 * b + 4]
            sizes[b - first] = index[1 + 6 * b + 5]
        ok, kd, ko, tr, vd, vo = decode_blocks(buf, offs, sizes)
        if not ok:
            return -1, last, False, e8, z1, np.zeros(0, np.uint64), e8, z1
        m = tr.shape[0]
        a = count_below(kd, ko, lo, False)
        b = count_below(kd, ko, hi, False) if has_hi and not more else m
        if not more or last == n - 1 or b - a >= limit or last - first + 1 >= MAX_BLOCKS:
            break
        last += 1
    if a == 0 and b == m:
        return 0, 0, more, kd, ko, tr, vd, vo
    return (0, 0, more, kd[ko[a] : ko[b]].copy(), ko[a : b + 1] - ko[a], tr[a:b].copy(),
            vd[vo[a] : vo[b]].copy(), vo[a : b + 1] - vo[a])
