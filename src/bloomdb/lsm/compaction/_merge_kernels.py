"""numba kernels of compaction: the inputs' blocks checked and decoded in one call, the k-way
merge of sorted runs (dropping versions no snapshot sees) and the split of the merged run into
output tables. Pure: arrays in, arrays out (the inputs' mapped files reached by address,
:func:`decode_inputs`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._checksum_kernels import crc32c_range
from ..._intrinsics import copy_bytes, i64_view, u8_view
from ..sstable._block_kernels import _cmp, decode_into, decoded_sizes, key_words, packed_empty


@njit(cache=True, nogil=True)
def merge_runs(kdata, koff, trailers, run_starts, smallest_snapshot, bottom):
    """k-way merge of sorted runs (entries ``run_starts[r]..run_starts[r+1]``) with the
    compaction drop rules; returns the indexes of the kept entries in merged order.

    A version is dropped when a newer version of its key has sequence ``<= smallest_snapshot``;
    a deletion with sequence ``<= smallest_snapshot`` is dropped when ``bottom``.
    Cost: one pass making each key's two 8-byte big-endian prefix words, then per entry a
    scan of the live runs' heads comparing words (bytes past 16 only when two keys' first 16
    agree): ~25 ns per entry with 9 runs, where a byte loop per comparison took ~200
    (docs/benchmarks.md, "LSM fills, twelfth session"). Runs are few (L0's tables and one
    level), so a linear scan of the heads beats a heap.
    """
    nruns = run_starts.shape[0] - 1
    n = run_starts[nruns]
    out = np.empty(n, np.int64)
    if n == 0:
        return out
    p0 = np.empty(n, np.uint64)
    p1 = np.empty(n, np.uint64)
    for i in range(n):
        p0[i], p1[i] = key_words(kdata, koff[i], koff[i + 1] - koff[i])
    heads = np.empty(nruns, np.int64)  # the live runs' next entry and end, compacted to the front
    ends = np.empty(nruns, np.int64)
    live = 0
    for r in range(nruns):
        if run_starts[r] < run_starts[r + 1]:
            heads[live] = run_starts[r]
            ends[live] = run_starts[r + 1]
            live += 1
    m = 0
    last = -1
    last_seq = np.uint64(0)
    snap = np.uint64(smallest_snapshot)
    sh = np.uint64(8)
    while live > 0:
        b = 0
        x = heads[0]
        for r in range(1, live):
            y = heads[r]
            # y before x: smaller key (words, then the bytes past 16), or same key and newer
            if p0[y] != p0[x]:
                less = p0[y] < p0[x]
            elif p1[y] != p1[x]:
                less = p1[y] < p1[x]
            else:
                c = _tail(kdata, koff[y], koff[y + 1], koff[x], koff[x + 1])
                less = c < 0 or (c == 0 and (trailers[y] >> sh) > (trailers[x] >> sh))
            if less:
                b = r
                x = y
        heads[b] = x + 1
        if x + 1 == ends[b]:  # run exhausted: the last live run takes its slot
            live -= 1
            heads[b] = heads[live]
            ends[b] = ends[live]
        same = (last >= 0 and p0[x] == p0[last] and p1[x] == p1[last]
                and _tail(kdata, koff[x], koff[x + 1], koff[last], koff[last + 1]) == 0)
        seq = trailers[x] >> sh
        drop = same and last_seq <= snap
        if not drop and bottom and (trailers[x] & np.uint64(0xFF)) == np.uint64(0) and seq <= snap:
            drop = True
        last = x
        last_seq = seq
        if not drop:
            out[m] = x
            m += 1
    return out[:m]


@njit(cache=True, nogil=True, inline="always")
def _tail(kdata, a, ae, b, be):
    """Compare keys ``kdata[a:ae]`` and ``kdata[b:be]`` whose first 16 bytes' prefix words agree
    (zero-padded): -1, 0, 1 (:func:`..sstable._table_kernels.cmp_tail` on offsets)."""
    la = ae - a
    lb = be - b
    if la <= 16 or lb <= 16:
        return 0 if la == lb else (-1 if la < lb else 1)
    return _cmp(kdata, a + 16, la - 16, kdata, b + 16, lb - 16)


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


@njit(cache=True, nogil=True)
def not_covered(kdata, koff, trailers, idx, bdata, boff, fseq):
    """For the entries ``idx``: False where a range tombstone hides the entry. The tombstones
    come as non-overlapping fragments: sorted bound keys ``0..m`` (packed ``bdata/boff``),
    fragment ``j`` = ``[bound j, bound j + 1)`` hiding entries with a sequence below ``fseq[j]``
    (0: none). Cost: one binary search over the bounds per entry."""
    n = idx.shape[0]
    m = fseq.shape[0]
    keep = np.ones(n, np.bool_)
    for x in range(n):
        i = idx[x]
        a = koff[i]
        la = koff[i + 1] - a
        lo = 0
        hi = m + 1
        while lo < hi:  # bounds <= key
            mid = (lo + hi) >> 1
            if _cmp(bdata, boff[mid], boff[mid + 1] - boff[mid], kdata, a, la) <= 0:
                lo = mid + 1
            else:
                hi = mid
        j = lo - 1
        if 0 <= j < m and (trailers[i] >> np.uint64(8)) < fseq[j]:
            keep[x] = False
    return keep


@njit(cache=True, nogil=True)
def _blocks(idx):
    """The data blocks' offsets and sizes from a table's index array (``n``, then 6 words per
    block: two key words, key position and length, block offset and size)."""
    nb = idx[0]
    offs = np.empty(nb, np.int64)
    sizes = np.empty(nb, np.int64)
    for b in range(nb):
        offs[b] = idx[5 + 6 * b]
        sizes[b] = idx[6 + 6 * b]
    return offs, sizes


@njit(cache=True, nogil=True)
def decode_inputs(tables):
    """Every entry of a compaction's input tables, one table after the other, in ONE call (one
    GIL release; it was four kernel calls per table): ``(ok, kdata, koff, trailers, vdata, voff,
    counts)``. ``tables``: int64, per table four words -- its mapped file's address and length,
    its index array's address and length in words (``Table.lookup_arrays``; the caller keeps
    them referenced). Every block must lie in the file, be stored raw and match its CRC32C (the
    SSE4.2 instruction: only on a host with it) and parse; else ``ok`` is False and nothing
    else is meaningful (the caller's step-by-step path then names the damage, or decodes
    compressed blocks). Cost: one CRC pass and two decode passes over the inputs."""
    nt = tables.shape[0] // 4
    counts = np.zeros(nt, np.int64)
    n = 0
    kb = 0
    vb = 0
    e8 = np.zeros(0, np.uint8)
    z = np.zeros(1, np.int64)
    fail = (False, e8, z, np.zeros(0, np.uint64), e8, z, counts)
    for t in range(nt):
        buf = u8_view(tables[4 * t], tables[4 * t + 1])
        offs, sizes = _blocks(i64_view(tables[4 * t + 2], tables[4 * t + 3]))
        for b in range(offs.shape[0]):
            e = offs[b] + sizes[b]  # the type byte, then the CRC
            if offs[b] < 0 or sizes[b] < 0 or e + 5 > buf.shape[0] or buf[e] != 0:
                return fail
            stored = np.uint64(buf[e + 1]) | (np.uint64(buf[e + 2]) << np.uint64(8)) | (
                np.uint64(buf[e + 3]) << np.uint64(16)) | (np.uint64(buf[e + 4]) << np.uint64(24))
            if crc32c_range(buf, offs[b], e + 1) != stored:
                return fail
        m, k, v = decoded_sizes(buf, offs, sizes)
        if m < 0:
            return fail
        counts[t] = m
        n += m
        kb += k
        vb += v
    kdata, koff, trailers, vdata, voff = packed_empty(n, kb, vb)
    first = 0
    for t in range(nt):
        buf = u8_view(tables[4 * t], tables[4 * t + 1])
        offs, sizes = _blocks(i64_view(tables[4 * t + 2], tables[4 * t + 3]))
        decode_into(buf, offs, sizes, kdata, koff, trailers, vdata, voff, first)
        first += counts[t]
    return True, kdata, koff, trailers, vdata, voff, counts


@njit(cache=True, nogil=True)
def merge_and_split(kdata, koff, trailers, voff, run_starts, smallest_snapshot, bottom, table_bytes):
    """:func:`merge_runs`, the kept keys gathered and the output tables' :func:`split_points`,
    in one call: ``(idx, kd, ko, kept trailers, cuts)`` (entry ``i`` kept is input ``idx[i]``;
    no range tombstone may hide any entry: the caller checks). Cost: as the three steps."""
    idx = merge_runs(kdata, koff, trailers, run_starts, smallest_snapshot, bottom)
    m = idx.shape[0]
    ko = np.zeros(m + 1, np.int64)
    vsizes = np.zeros(m + 1, np.int64)
    tr = np.empty(m, np.uint64)
    for j in range(m):
        i = idx[j]
        ko[j + 1] = ko[j] + koff[i + 1] - koff[i]
        vsizes[j + 1] = vsizes[j] + voff[i + 1] - voff[i]
        tr[j] = trailers[i]
    kd = np.empty(ko[m], np.uint8)
    for j in range(m):
        i = idx[j]
        copy_bytes(kd, ko[j], kdata, koff[i], ko[j + 1] - ko[j])
    cuts = split_points(kd, ko, vsizes, table_bytes) if m > 0 else np.zeros(0, np.int64)
    return idx, kd, ko, tr, cuts
