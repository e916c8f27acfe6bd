"""numba kernel of the flush: a memtable's writes read back from its write-ahead log's bytes and
laid out as one sorted run (the table builder's input), in one call that releases the GIL.

A memtable holds exactly the writes of its log (:mod:`.wal`'s record format), so the newest
version of each key -- what the memtable's dict holds -- is also the first version of each key
in the log's operations taken newest first and sorted stably by key. Doing that here instead of
packing the dict in Python keeps the flush thread off the GIL for the whole step (the packing
held it for ~0.3-0.5 us per key, each microsecond taken from the writer). Pure: arrays in,
arrays out.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import copy_bytes
from .sstable._table_kernels import argsort_packed

#: bytes a memtable counts per entry besides its key and value (``memtable.ENTRY_OVERHEAD``)
_OVERHEAD = 48


@njit(cache=True, nogil=True, inline="always")
def _u32(b, p):
    return np.int64(b[p]) | (np.int64(b[p + 1]) << 8) | (np.int64(b[p + 2]) << 16) | (np.int64(b[p + 3]) << 24)


@njit(cache=True, nogil=True)
def _u64(b, p):
    v = np.uint64(0)
    for j in range(8):
        v |= np.uint64(b[p + j]) << np.uint64(8 * j)
    return v


@njit(cache=True, nogil=True)
def _walk(data, fill, ks, kls, vs, vls, seqs, live):
    """One pass over the records (stopping at the zero bytes of the reserved tail): ``(ok, ops,
    key bytes, value bytes, memtable bytes, range ops)``. ``fill``: also record each point op
    (key/value position and length, sequence, put or delete), newest first, into the arrays
    (sized by a first pass). ``ok`` is False for anything but well-formed records."""
    end = data.shape[0]
    pos = 0
    nops = 0
    kbytes = 0
    vbytes = 0
    mbytes = 0
    nranges = 0
    while pos + 8 <= end:
        L = _u32(data, pos + 4)
        if L == 0:
            break
        q = pos + 8 + L
        if L < 12 or q > end:
            return False, 0, 0, 0, 0, 0
        p = pos + 8
        first = _u64(data, p)
        count = _u32(data, p + 8)
        p += 12
        for c in range(count):
            if p + 5 > q:
                return False, 0, 0, 0, 0, 0
            typ = data[p]
            kl = _u32(data, p + 1)
            p += 5
            kp = p
            p += kl
            vp = p
            vl = 0
            if typ == 1 or typ == 2:
                if p + 4 > q:
                    return False, 0, 0, 0, 0, 0
                vl = _u32(data, p)
                vp = p + 4
                p = vp + vl
            elif typ != 0:
                return False, 0, 0, 0, 0, 0
            if p > q:
                return False, 0, 0, 0, 0, 0
            mbytes += kl + vl + _OVERHEAD
            if typ == 2:
                nranges += 1
                continue
            if fill:
                r = ks.shape[0] - 1 - nops  # newest first
                ks[r] = kp
                kls[r] = kl
                vs[r] = vp
                vls[r] = vl
                seqs[r] = first + np.uint64(c)
                live[r] = typ
            nops += 1
            kbytes += kl
            vbytes += vl
        if p != q:
            return False, 0, 0, 0, 0, 0
        pos = q
    return True, nops, kbytes, vbytes, mbytes, nranges


@njit(cache=True, nogil=True)
def log_run(data):
    """The newest version of every key written in the log bytes ``data``, in table order:
    ``(ok, kdata, koff, trailers, vdata, voff, memtable bytes, range ops)`` -- keys ascending
    (bytewise), one entry per key, trailer ``seq << 8 | type`` (deletions: type 0, empty value),
    values gathered in that order. ``memtable bytes`` is what a memtable holding these writes
    counts (``MemTable.bytes``), ``range ops`` the range deletions (not in the run: the memtable
    keeps them). ``ok`` False: the bytes are not well-formed records (nothing else is valid).
    Cost: two passes over the log, one sort of the keys, one copy of each kept key and value."""
    e64 = np.empty(0, np.int64)
    ok, n, kbytes, vbytes, mbytes, nranges = _walk(data, False, e64, e64, e64, e64, np.empty(0, np.uint64),
                                                   np.empty(0, np.uint8))
    if not ok:
        z = np.zeros(1, np.int64)
        return False, np.empty(0, np.uint8), z, np.empty(0, np.uint64), np.empty(0, np.uint8), z, 0, 0
    ks = np.empty(n, np.int64)
    kls = np.empty(n, np.int64)
    vs = np.empty(n, np.int64)
    vls = np.empty(n, np.int64)
    seqs = np.empty(n, np.uint64)
    live = np.empty(n, np.uint8)
    _walk(data, True, ks, kls, vs, vls, seqs, live)
    kd = np.empty(kbytes, np.uint8)  # every op's key, newest first, packed for the sort
    ko = np.zeros(n + 1, np.int64)
    p = 0
    for i in range(n):
        copy_bytes(kd, p, data, ks[i], kls[i])  # one memmove (a slice copies byte by byte)
        p += kls[i]
        ko[i + 1] = p
    order = argsort_packed(kd, ko)  # stable: a key's versions stay newest first
    keep = np.empty(n, np.int64)
    m = 0
    prev = -1
    for j in range(n):
        i = order[j]
        if prev >= 0 and kls[i] == kls[prev]:
            a = ko[i]
            b = ko[prev]
            same = True
            for t in range(kls[i]):
                if kd[a + t] != kd[b + t]:
                    same = False
                    break
            if same:
                continue
        keep[m] = i
        m += 1
        prev = i
    okd = np.empty(kbytes, np.uint8)
    oko = np.zeros(m + 1, np.int64)
    tr = np.empty(m, np.uint64)
    ovd = np.empty(vbytes, np.uint8)
    ovo = np.zeros(m + 1, np.int64)
    kp = 0
    vp = 0
    for j in range(m):
        i = keep[j]
        copy_bytes(okd, kp, kd, ko[i], kls[i])
        kp += kls[i]
        oko[j + 1] = kp
        tr[j] = (seqs[i] << np.uint64(8)) | np.uint64(live[i])
        copy_bytes(ovd, vp, data, vs[i], vls[i])
        vp += vls[i]
        ovo[j + 1] = vp
    return True, okd[:kp], oko, tr, ovd[:vp], ovo, mbytes, nranges
