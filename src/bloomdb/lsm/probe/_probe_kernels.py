"""numba kernels of the probe layer: every table's key range and filter checked for one key in
one call, over the directory array laid out by :mod:`.layout` (see there) and built by
:mod:`.directory`. Each filter is checked by its own family's ``check_hash`` (the module
:data:`bloomdb.filters.probe.PROBE_KERNELS` names for its probe descriptor), on the family's own
hash of the key: XXH3-64 (computed once per key), XXH64 of the key bytes for ``sbbf``, LevelDB's
BloomHash for ``leveldb`` (computed when such a filter is reached). The store never
re-implements a filter's layout.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...filters import _blocked_kernels as BLK
from ...filters import _counting_kernels as CNT
from ...filters import _cuckoo_kernels as CKO
from ...filters import _fuse_kernels as FUS
from ...filters import _leveldb_kernels as LDB
from ...filters import _paired_kernels as PAI
from ...filters import _register_kernels as REG
from ...filters import _ribbon_kernels as RIB
from ...filters import _sbbf_kernels as SBB
from ...filters import _standard_kernels as STD
from ...checksum import HW_RANGES
from ...filters import probe as FP
from ...hashing._kernels import xxh3_64_bytes, xxh64_bytes
from ...hashing._leveldb_kernels import leveldb_hash_bytes
from ..sstable._block_kernels import _first_not_below, _tail_cmp, _wcmp, key_words
from .layout import (
    C_CHECKS, C_POSITIVE, C_USEFUL, F_BLOCKED, F_COUNTING, F_CUCKOO, F_FUSE8, F_FUSE16, F_LEVELDB,
    F_PAIRED, F_REGISTER, F_RIBBON, F_SBBF, F_STANDARD, FILTER, LAZY, LEVEL_COUNT, LEVEL_FIRST, N_L0, NONE,
    F_MAPPED, NUM_LEVELS, OTHER, P_DAMAGED, P_LOADED, P_REC, P_STATE, PARTITIONED, PSTRIDE, R_FAM, R_LEN, R_OFF, R_P0,
    RSTRIDE, S_KIND, S_MAX_LEN, S_MAX_OFF, S_MAX_W, S_MIN_LEN, S_MIN_OFF, S_MIN_W, S_REC, S_SEEKS, S_TBUF, S_TFW,
    S_TLEN, SEEK_DUE, SF, SLOTS, STRIDE, T_BYTES, T_FBUF, T_FBUFLEN, T_FOFF, T_FSIZE, TSTRIDE,
)
from ..._intrinsics import fenced_load, i64_view, prefetch, stack_i64, u8_view, u32_view

_LEVELDB_SEED = 0xBC9F1D34  # leveldb.BLOOM_HASH_SEED (a kernel takes no globals from a module)

if HW_RANGES:  # the SSE4.2 CRC32C instruction: a table's filter is read in the kernel
    from ...filters._descriptor_kernels import read_descriptor
    from ..sstable._open_kernels import block_ok as _filter_block_ok
else:

    @njit(cache=True, nogil=True)
    def _filter_block_ok(buf, off, size):
        """No CRC instruction on this host: the kernel reads no filter (Python does)."""
        return False

    @njit(cache=True, nogil=True)
    def read_descriptor(buf, off, size):
        return False, 0, 0, 0, 0, 0, 0


# the (family tag, format version) pairs of :data:`.directory.FAMILY_CODES` that the filters'
# descriptor kernel reads (:mod:`bloomdb.filters._descriptor_kernels`), as plain ints for numba
_BLOCKED_V1, _COUNTING_V1, _REGISTER_V1 = FP.BLOCKED_V1, FP.COUNTING_V1, FP.REGISTER_V1
_STANDARD_V1, _SBBF_V1 = FP.STANDARD_V1, FP.SBBF_V1


@njit(cache=True, nogil=True)
def _family_code(tag, version):
    """The probe kernel's family code (``F_*``) of a descriptor's ``(tag, version)`` read in the
    kernel, 0 for a pair it does not take from there (``directory.FAMILY_CODES`` maps the same
    pairs to the same codes; a test pins them)."""
    if tag == _BLOCKED_V1[0] and version == _BLOCKED_V1[1]:
        return F_BLOCKED
    if tag == _COUNTING_V1[0] and version == _COUNTING_V1[1]:
        return F_COUNTING
    if tag == _REGISTER_V1[0] and version == _REGISTER_V1[1]:
        return F_REGISTER
    if tag == _STANDARD_V1[0] and version == _STANDARD_V1[1]:
        return F_STANDARD
    if tag == _SBBF_V1[0] and version == _SBBF_V1[1]:
        return F_SBBF
    return 0


@njit(cache=True, nogil=True)
def _load_lazy(meta, base):
    """Read the filter of the ``LAZY`` slot at word ``base`` in the kernel: True when its record
    is in the slot now (kind ``FILTER``). The table's filter-load words (``S_TFW``) keep the
    record once made, so a table's filter block is checked once, whichever directory meets it
    first; they are made here from the table's mapped file (or, for a table not opened yet, from
    the block's copy in the store's filter file at ``T_FBUF``): the block's CRC32C
    (:func:`..sstable._open_kernels.block_ok`) and the envelope and family parameters read by
    the filter family's own kernel (:func:`bloomdb.filters._descriptor_kernels.read_descriptor`),
    the payload read in place (``F_MAPPED``). False: Python reads it (no words or no map, no CRC
    instruction, a damaged block -- Python fails it open and counts it --, a partitioned
    filter, a family or format this kernel does not read). Words are written before the word
    that publishes them (``R_FAM``, then the slot's kind; a fence between, so the compiler
    keeps that order), so a concurrent lookup sees a whole record or none; two lookups loading
    one table at once write the same words.
    Cost: one CRC32C pass over the filter block, once per table."""
    a = meta[base + S_TFW]
    if a == 0:
        return False
    w = i64_view(a, TSTRIDE)
    if w[R_FAM] == 0:
        addr = w[T_FBUF]  # a copy of the block in the store's filter file, or the table's own map
        blen = w[T_FBUFLEN]
        if addr == 0:
            addr = meta[base + S_TBUF]
            blen = meta[base + S_TLEN]
        if addr == 0:
            return False
        buf = u8_view(addr, blen)
        off = w[T_FOFF]
        size = w[T_FSIZE]
        if not _filter_block_ok(buf, off, size):
            return False
        ok, tag, ver, poff, n, s0, s1 = read_descriptor(buf, off, size)
        if not ok:
            return False
        code = _family_code(tag, ver)
        if code == 0:
            return False
        w[R_OFF] = addr + poff
        w[R_LEN] = n
        w[R_P0] = s0
        w[R_P0 + 1] = s1
        w[T_BYTES] = off + size - poff
        fenced_load(w, R_FAM)  # a fence: the words above are stored before the one publishing them
        w[R_FAM] = code + F_MAPPED
    rec = base + S_REC
    for i in range(1, RSTRIDE):
        meta[rec + i] = w[i]
    fenced_load(meta, rec)
    meta[rec + R_FAM] = w[R_FAM]
    fenced_load(meta, rec)
    meta[base + S_KIND] = FILTER
    return True


@njit(cache=True, nogil=True)
def _check(meta, u64, w32, u16, u8, r, h, key, kstart, klen):
    """Filter record ``r``'s answer for the key (XXH3 hash ``h``): its family's ``check_hash`` on
    the family's array inside the directory (byte offset ``meta[r + R_OFF]``, ``meta[r + R_LEN]``
    elements; with :data:`F_MAPPED` added to the code, at the address ``meta[r + R_OFF]``:
    :func:`_check_mapped`) and the descriptor's scalars. An unknown code answers "may contain"."""
    fam = meta[r + R_FAM]
    if fam >= F_MAPPED:
        return _check_mapped(meta, u64, r, fam - F_MAPPED, h, key, kstart, klen)
    off = meta[r + R_OFF]
    n = meta[r + R_LEN]
    p = r + R_P0
    if fam == F_BLOCKED:
        return BLK.check_hash(w32[off >> 2 : (off >> 2) + n], u64[p], meta[p + 1], h)
    if fam == F_REGISTER:
        return REG.check_hash(w32[off >> 2 : (off >> 2) + n], u64[p], meta[p + 1], h)
    if fam == F_SBBF:
        return SBB.check_hash(w32[off >> 2 : (off >> 2) + n], u64[p], xxh64_bytes(key, kstart, klen, np.uint64(0)))
    if fam == F_PAIRED:
        return PAI.check_hash(w32[off >> 2 : (off >> 2) + n], u64[p], u64[p + 1], meta[p + 2], u64[p + 3], u64[p + 4], h)
    if fam == F_RIBBON:
        return RIB.check_hash(u64[off >> 3 : (off >> 3) + n], u64[p], u64[p + 1], u64[p + 2], np.uint32(u64[p + 3]), h)
    if fam == F_FUSE8:
        return FUS.check_hash(u8[off : off + n], u64[p], u64[p + 1], u64[p + 2], u64[p + 3], h)
    if fam == F_FUSE16:
        return FUS.check_hash(u16[off >> 1 : (off >> 1) + n], u64[p], u64[p + 1], u64[p + 2], u64[p + 3], h)
    if fam == F_STANDARD:
        return STD.check_hash(u64[off >> 3 : (off >> 3) + n], u64[p], meta[p + 1], h)
    if fam == F_LEVELDB:
        return LDB.check_hash(u8[off : off + n], leveldb_hash_bytes(key, kstart, klen, np.uint64(_LEVELDB_SEED)))
    if fam == F_COUNTING:
        return CNT.check_hash(u8[off : off + n], u64[p], meta[p + 1], h)
    if fam == F_CUCKOO:
        return CKO.check_hash(u8[off : off + n], meta[p], u64[p + 1], h)
    return True


@njit(cache=True, nogil=True)
def _check_mapped(meta, u64, r, fam, h, key, kstart, klen):
    """:func:`_check` of a record whose array lies at the address ``meta[r + R_OFF]`` (the
    filter's own array, in place)."""
    a = meta[r + R_OFF]
    n = meta[r + R_LEN]
    p = r + R_P0
    if fam == F_BLOCKED:
        return BLK.check_hash(u8_view(a, 4 * n).view(np.uint32), u64[p], meta[p + 1], h)
    if fam == F_REGISTER:
        return REG.check_hash(u8_view(a, 4 * n).view(np.uint32), u64[p], meta[p + 1], h)
    if fam == F_SBBF:
        return SBB.check_hash(u8_view(a, 4 * n).view(np.uint32), u64[p], xxh64_bytes(key, kstart, klen, np.uint64(0)))
    if fam == F_PAIRED:
        return PAI.check_hash(u8_view(a, 4 * n).view(np.uint32), u64[p], u64[p + 1], meta[p + 2], u64[p + 3], u64[p + 4], h)
    if fam == F_RIBBON:
        return RIB.check_hash(u8_view(a, 8 * n).view(np.uint64), u64[p], u64[p + 1], u64[p + 2], np.uint32(u64[p + 3]), h)
    if fam == F_FUSE8:
        return FUS.check_hash(u8_view(a, n), u64[p], u64[p + 1], u64[p + 2], u64[p + 3], h)
    if fam == F_FUSE16:
        return FUS.check_hash(u8_view(a, 2 * n).view(np.uint16), u64[p], u64[p + 1], u64[p + 2], u64[p + 3], h)
    if fam == F_STANDARD:
        return STD.check_hash(u8_view(a, 8 * n).view(np.uint64), u64[p], meta[p + 1], h)
    if fam == F_LEVELDB:
        return LDB.check_hash(u8_view(a, n), leveldb_hash_bytes(key, kstart, klen, np.uint64(_LEVELDB_SEED)))
    if fam == F_COUNTING:
        return CNT.check_hash(u8_view(a, n), u64[p], meta[p + 1], h)
    if fam == F_CUCKOO:
        return CKO.check_hash(u8_view(a, n), meta[p], u64[p + 1], h)
    return True


@njit(cache=True, nogil=True)
def _charge(meta, slot):
    """Charge one seek to ``slot``'s table (:mod:`.seeks`); its budget reaching zero goes into
    ``SEEK_DUE``, and again every 64 charges below zero (the store takes one such table at a time,
    as LevelDB's ``file_to_compact_``: a table passed over is reported again later)."""
    a = meta[SLOTS + slot * STRIDE + S_SEEKS]
    if a != 0:
        b = i64_view(a, 1)
        b[0] -= 1
        if b[0] <= 0 and (b[0] & 63) == 0:
            meta[SEEK_DUE] = slot + 1


@njit(cache=True, nogil=True)
def _in_range(meta, u64, bounds, base, key, kstart, klen, k0, k1):
    """True when the slot at word ``base`` has ``min key <= key <= max key``."""
    r = -_wcmp(u64[base + S_MIN_W], u64[base + S_MIN_W + 1], k0, k1)
    if r == -2:
        r = _tail_cmp(key, kstart, klen, bounds, meta[base + S_MIN_OFF], meta[base + S_MIN_LEN])
    if r < 0:
        return False
    r = -_wcmp(u64[base + S_MAX_W], u64[base + S_MAX_W + 1], k0, k1)
    if r == -2:
        r = _tail_cmp(key, kstart, klen, bounds, meta[base + S_MAX_OFF], meta[base + S_MAX_LEN])
    return r <= 0


@njit(cache=True, nogil=True, inline="always")
def below(w0, w1, k0, k1):
    """Prefix words ``(w0, w1) < (k0, k1)``, branch-free."""
    return (w0 < k0) | ((w0 == k0) & (w1 < k1))


@njit(cache=True, nogil=True, inline="always")
def min_ok(meta, u64, bounds, base, key, kstart, klen, k0, k1):
    """The slot at ``base`` has ``min key <= key`` (``key[kstart:kstart+klen]``, prefix words
    ``k0, k1``): the words decide, the key's tail only on a tie (inlined: no call)."""
    w0 = u64[base + S_MIN_W]
    w1 = u64[base + S_MIN_W + 1]
    if w0 == k0 and w1 == k1:
        return _tail_cmp(key, kstart, klen, bounds, meta[base + S_MIN_OFF], meta[base + S_MIN_LEN]) >= 0
    return below(w0, w1, k0, k1)


@njit(cache=True, nogil=True, inline="always")
def max_ok(meta, u64, bounds, base, key, kstart, klen, k0, k1):
    """The slot at ``base`` has ``key <= max key``."""
    w0 = u64[base + S_MAX_W]
    w1 = u64[base + S_MAX_W + 1]
    if w0 == k0 and w1 == k1:
        return _tail_cmp(key, kstart, klen, bounds, meta[base + S_MAX_OFF], meta[base + S_MAX_LEN]) <= 0
    return not below(w0, w1, k0, k1)


@njit(cache=True, nogil=True, inline="always")
def blocked_line(meta, u64, base, h):
    """``(address, k)`` of hash ``h``'s line in the ``blocked`` filter of the slot at ``base``
    (the family's own :func:`~bloomdb.filters._blocked_kernels.line_word`; the filter read in
    place, :data:`.layout.F_MAPPED`), the line prefetched; address 0 when the slot holds no
    loaded ``blocked`` filter."""
    rec = base + S_REC
    if meta[base + S_KIND] != FILTER or meta[rec + R_FAM] != F_BLOCKED + F_MAPPED:
        return np.int64(0), np.int64(0)
    a = meta[rec + R_OFF] + 4 * np.int64(BLK.line_word(h, u64[rec + R_P0]))
    prefetch(u8_view(a, 64), 0)
    return a, meta[rec + R_P0 + 1]


@njit(cache=True, nogil=True, inline="always")
def prescreen(meta, u64, bounds, h, key, kstart, klen):
    """:func:`prescreen_sf` without a store filter line (see there)."""
    return prescreen_sf(meta, u64, bounds, h, key, kstart, klen, np.int64(0), np.int64(0))


#: :func:`prescreen_sf`'s ``stop`` when the store filter said "definitely not"
SF_NO = -3


@njit(cache=True, nogil=True, inline="always")
def sf_line(meta, u64, h):
    """``(address, k)`` of hash ``h``'s line in the directory's store filter (header record
    ``SF``, :mod:`bloomdb.lsm.store_filter`) when it is a ``blocked`` filter read in place (the
    family's own :func:`~bloomdb.filters._blocked_kernels.line_word`), the line prefetched;
    ``(0, 0)`` otherwise."""
    if meta[SF + R_FAM] != F_BLOCKED + F_MAPPED:
        return np.int64(0), np.int64(0)
    a = meta[SF + R_OFF] + 4 * np.int64(BLK.line_word(h, u64[SF + R_P0]))
    prefetch(u8_view(a, 64), 0)
    return a, meta[SF + R_P0 + 1]


@njit(cache=True, nogil=True, inline="always")
def _sf_says_no(sfa, g, sfk):
    """The store filter's line at ``sfa`` (0: none) says "definitely not" for upper hash ``g``."""
    return sfa != 0 and not BLK.check_bits_inline(u32_view(sfa, 16), 0, g, sfk)


@njit(cache=True, nogil=True, inline="always")
def prescreen_sf(meta, u64, bounds, h, key, kstart, klen, sfa, sfk):
    """The filters of a lookup from slot 0, screened before :func:`_probe`: ``(rejected, stop,
    first)``. ``stop`` -1: every table that may hold the key (by range: the ones :func:`_probe`
    meets from slot 0, ``first`` the first of them, -1 if none) holds a loaded ``blocked``
    filter that says "definitely not" -- the key is missing, ``rejected`` of them. Else
    ``stop`` is the first of those tables whose filter says "may contain" or is not a loaded
    ``blocked`` one (lazy, partitioned, another family, none), and ``rejected`` the number of
    tables before it (all rejected): :func:`_probe` goes on from ``stop``. Pure (no counter, no
    seek charge): the caller counts and charges what :func:`_probe` would have.

    A missing key's probe without its dependent chains, in two passes: first every candidate
    table is found (the level searches branch-free on the prefix words, the exact search on a
    tie) and its filter line requested (prefetched) and noted in scratch on the stack; then the
    noted lines are checked in slot order (the family's own check, inlined). So the filter lines'
    cache misses (at 5M keys, ~2 random lines in ~7 MB of filters per missing key) overlap each
    other and the searches, instead of each check waiting for its line before the next level is
    searched (a missing key's ``db.get`` on a 5M-key store, thread CPU: ~50-90 ns less, 1M:
    ~35; docs/benchmarks.md, "Missing gets at 5M").
    A table the screen cannot check ends the first pass (nothing after it matters); more than
    :data:`_SCREEN` candidates are checked :data:`_SCREEN` at a time.

    ``sfa``, ``sfk``: the store filter's line (prefetched, :func:`sf_line`; 0: none), checked
    after the first pass, before the tables' lines: "definitely not" returns ``stop``
    :data:`SF_NO` (nothing rejected, nothing met). So its cache miss overlaps the level
    searches instead of coming before them (a present key's get pays it in their shadow)."""
    k0, k1 = key_words(key, kstart, klen)
    n0 = meta[N_L0]
    nlev = meta[NUM_LEVELS]
    g = h >> np.uint64(32)
    noted = stack_i64(_SCREEN_WORDS)  # per candidate: slot, line address (0: not checkable here), k
    m = 0
    cnt = 0
    first = -1
    for s in range(n0 + nlev):
        if s < n0:
            base = SLOTS + s * STRIDE
            if not (min_ok(meta, u64, bounds, base, key, kstart, klen, k0, k1)
                    and max_ok(meta, u64, bounds, base, key, kstart, klen, k0, k1)):
                continue
            slot = s
        else:
            s0 = meta[LEVEL_FIRST + 2 * (s - n0)]
            c = meta[LEVEL_COUNT + 2 * (s - n0)]
            if c == 0:
                continue
            fw = SLOTS + s0 * STRIDE + S_MAX_W
            lo = 0
            w = c
            while w > 1:
                half = w >> 1
                e = fw + (lo + half - 1) * STRIDE
                lo += half if below(u64[e], u64[e + 1], k0, k1) else 0
                w -= half
            e = fw + lo * STRIDE
            cand = lo + 1 if below(u64[e], u64[e + 1], k0, k1) else lo
            if cand >= c:
                continue
            e = fw + cand * STRIDE
            if u64[e] == k0 and u64[e + 1] == k1:  # a tie on the prefix words: the exact search
                cand = _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, fw, STRIDE, c)
                if cand >= c:
                    continue
            slot = s0 + cand
            base = SLOTS + slot * STRIDE
            if not min_ok(meta, u64, bounds, base, key, kstart, klen, k0, k1):
                continue
        if first < 0:
            first = slot
        a, k = blocked_line(meta, u64, base, h)
        noted[3 * m] = slot
        noted[3 * m + 1] = a
        noted[3 * m + 2] = k
        m += 1
        if a == 0:
            break
        if 3 * m == _SCREEN_WORDS:
            if _sf_says_no(sfa, g, sfk):
                return 0, SF_NO, -1
            sfa = 0
            stop, cnt = _check_noted(noted, m, g, cnt)
            if stop >= 0:
                return cnt, stop, first
            m = 0
    if _sf_says_no(sfa, g, sfk):
        return 0, SF_NO, -1
    stop, cnt = _check_noted(noted, m, g, cnt)
    return cnt, stop, first


#: candidate tables a screen notes before checking them (:func:`prescreen`); words of its scratch
_SCREEN = 16
_SCREEN_WORDS = 3 * _SCREEN


@njit(cache=True, nogil=True, inline="always")
def _check_noted(noted, m, g, cnt):
    """The ``m`` candidates of ``noted`` (slot, line address, k) checked in order: ``(slot, cnt)``
    of the first whose filter says "may contain" or that holds no loaded ``blocked`` filter
    (address 0), ``cnt`` counting the ones rejected before it; ``(-1, cnt)`` when all say no."""
    for i in range(m):
        a = noted[3 * i + 1]
        if a == 0 or BLK.check_bits_inline(u32_view(a, 16), 0, g, noted[3 * i + 2]):
            return noted[3 * i], cnt
        cnt += 1
    return np.int64(-1), cnt


@njit(cache=True, nogil=True)
def _probe(meta, u64, w32, u16, bounds, h, key, kstart, klen, start, first):
    """The probe loop; the bound searches share :func:`_first_not_below` (measured: no slower
    than inline at 1M keys).

    Key comparisons go by the two big-endian prefix words first (``k0``, ``k1`` of the key
    against the words stored per bound): one or two integer compares instead of a byte loop.

    A ``blocked`` filter (the store's default family) is checked by its ``check_hash`` called
    here, where LLVM inlines it; other families go through :func:`_check`, a call that passes
    five array structs: 260 -> 155 ns per missing key with 4-5 candidate tables (measured,
    docs/benchmarks.md, branch ``lsmmiss``).

    Returns ``(slot, first)``. Seek charges (:mod:`.seeks`): ``first`` is -2 (do not charge, or
    charged already), -1 (no table met yet) or the slot of the first table met; when the lookup
    meets another table, that first one's budget is charged once (a budget reaching zero is
    reported in ``SEEK_DUE``). The returned ``first`` goes into the next call of the same lookup
    (after a false positive), so the first table is charged as in LevelDB."""
    n0 = meta[N_L0]
    nlev = meta[NUM_LEVELS]
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
                return -1, first
            s0 = meta[LEVEL_FIRST + 2 * j]
            c = meta[LEVEL_COUNT + 2 * j]
            j += 1
            if c == 0 or s0 + c <= start:
                continue
            # first table whose max key >= key
            cand = s0 + _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, SLOTS + s0 * STRIDE + S_MAX_W, STRIDE, c)
            if cand < start or cand >= s0 + c:
                continue
        base = SLOTS + cand * STRIDE
        if not _in_range(meta, u64, bounds, base, key, kstart, klen, k0, k1):
            continue
        if first != -2:
            if first == -1:
                first = cand
            else:
                _charge(meta, first)
                first = -2
        kind = meta[base + S_KIND]
        if kind == NONE:
            return cand, first  # no usable filter (none, or damaged: fail open)
        if kind == LAZY and not _load_lazy(meta, base):
            return -cand - 2, first  # Python reads the filter first
        if kind == OTHER:
            return -cand - 2, first  # Python asks a family the kernel does not know
        rec = base + S_REC
        if kind == PARTITIONED:
            pt = meta[rec + R_OFF]
            count = meta[rec + R_LEN]
            # first partition whose last key >= key
            lo = _first_not_below(meta, u64, bounds, key, kstart, klen, k0, k1, pt, PSTRIDE, count)
            if lo == count:  # beyond the last partition: not here
                meta[C_CHECKS] += 1
                meta[C_USEFUL] += 1
                continue
            e = pt + lo * PSTRIDE
            st = meta[e + P_STATE]
            if st == P_DAMAGED:
                return cand, first
            if st != P_LOADED:
                return -cand - 2, first
            rec = e + P_REC
        meta[C_CHECKS] += 1
        if meta[rec + R_FAM] == F_BLOCKED + F_MAPPED:  # the default family's check_hash inline (see the docstring)
            ok = BLK.check_hash(u8_view(meta[rec + R_OFF], 4 * meta[rec + R_LEN]).view(np.uint32), u64[rec + R_P0], meta[rec + R_P0 + 1], h)
        else:
            ok = _check(meta, u64, w32, u16, bounds, rec, h, key, kstart, klen)
        if ok:
            meta[C_POSITIVE] += 1
            return cand, first
        meta[C_USEFUL] += 1


@njit(cache=True, nogil=True)
def probe(directory, key, start):
    """First slot ``>= start`` that may hold ``key`` (range and filter), ``-1`` when none, or
    ``-slot - 2`` when Python must read ``slot``'s filter (or partition) first
    (:meth:`directory.Directory.check_many`). One XXH3 hash per call.

    ``directory`` is the whole probe structure in one int64 array (fewer arguments: numba's
    dispatch costs ~0.1 us per array argument): the ``meta`` words, then the filters' arrays
    from byte ``directory[ARRAY_BASE]``, then the key bounds from byte ``directory[BYTE_BASE]``;
    the offsets stored in ``meta`` are already absolute.
    """
    n = len(key)
    return _probe(directory, directory.view(np.uint64), directory.view(np.uint32), directory.view(np.uint16),
                  directory.view(np.uint8), xxh3_64_bytes(key, 0, n), key, 0, n, start, -2)[0]


@njit(cache=True, nogil=True)
def probe_many(directory, data, offsets, out):
    """``out[i]`` = :func:`probe` of key ``i`` (Arrow layout) from slot 0."""
    u64 = directory.view(np.uint64)
    w32 = directory.view(np.uint32)
    u16 = directory.view(np.uint16)
    bounds = directory.view(np.uint8)
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        n = offsets[i + 1] - s
        out[i] = _probe(directory, u64, w32, u16, bounds, xxh3_64_bytes(data, s, n), data, s, n, 0, -2)[0]


@njit(cache=True, nogil=True)
def table_words(buf, index, checked, budget, fwords, row):
    """Write a table's read-state words of its directory slot (``S_TBUF`` .. ``S_TFW``, the order
    of :data:`.directory._READ_COLS`) into ``row``: the addresses and lengths of its mapped file
    (uint8), its index array (int64) and its checked-block flags (uint8), then the addresses of
    its seek budget and its filter-load words (int64; an empty array: 0, not charged / Python
    reads the filter). One call instead of five ``.ctypes.data`` (~1.4 us each from Python);
    nothing returned (a returned array costs its boxing)."""
    row[0] = buf.ctypes.data
    row[1] = buf.shape[0]
    row[2] = index.ctypes.data
    row[3] = index.shape[0]
    row[4] = checked.ctypes.data
    row[5] = budget.ctypes.data if budget.shape[0] != 0 else 0
    row[6] = fwords.ctypes.data if fwords.shape[0] != 0 else 0
