"""numba kernels of point lookups below the memtables: the probe of every candidate table's
filter (:func:`._probe_kernels._probe`) and the read of the data block of each table a filter
lets through, in ONE call per key (:func:`lookup`) or per batch (:func:`lookup_many`) -- LevelDB's
``Version::Get`` without a Python step between a table's filter and its block.

A table is read through the addresses its directory slot holds (``S_TBUF``, ``S_TIDX``,
``S_TCHK``: :func:`bloomdb._intrinsics.u8_view`), with :func:`bloomdb.lsm.sstable._table_kernels.table_get_hinted`
(a block's restart keys kept beside its checked flag after its first read). What
the kernel cannot finish it hands to Python with the slot: ``ASK`` (the slot's filter is not in
the directory yet, or of a family the kernel does not run: :meth:`.directory.Directory.check_many`)
``CHECK`` (the data block is raw but its CRC32C is not checked yet and the kernel could not check
it -- no CRC instruction on this host, or damage: :meth:`Table.check_block`
checks it without a copy, then the kernel resumes at the same slot) and ``READ`` (a compressed
or malformed block, or a slot without an address: :meth:`Table.get` reads it and raises on
damage). Python then resumes the kernel from the next slot.

Statuses: ``MISSING`` 0 (no table holds a version visible at ``snap``), ``VALUE`` 1 (value at
``table bytes[voff : voff + vlen]`` of the slot), ``DELETED`` 2, ``ASK`` 3, ``READ`` 4,
``CHECK`` 5 (the block's number in the value offset).
Counters (directory words ``C_LOOKUPS``, ``C_BLOCKS``, ``C_FOUND``): keys looked up (calls with
``start == 0``), tables searched by the kernel, lookups answered from a table.

The store filter (:mod:`bloomdb.lsm.store_filter`): when the directory's ``SF`` record is set
(a filter over the keys of every table of this version), a lookup from slot 0 checks it first,
with the family's own check on the key's XXH3 hash: "definitely not" is ``MISSING`` (no table's
filter checked; a ``blocked`` store filter's line is prefetched and checked after the level
searches of the screen, so its cache miss overlaps them -- a present key's get pays it in their
shadow); "may contain" goes on as without it (counters ``C_SF_CHECKS``,
``C_SF_NEG``; a "no" also counts as a filter check that was useful, ``C_CHECKS``/``C_USEFUL``,
so ``checks == useful + positive`` still holds). Cost: one filter line per lookup; a missing key's whole lookup then, whatever the
shape of the levels.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import box, intrinsic, models, register_model

from ...checksum import HW_RANGES
from ...hashing._kernels import xxh3_64_bytes
from ..sstable._block_kernels import _r32
from ..sstable._table_kernels import ST_UNCHECKED, hint_pos, table_get_hinted
from ..sstable.block import RAW, TRAILER
from ..._fastargs import address_value, key_view
from ..._intrinsics import i64_view, u8_view
from ._probe_kernels import SF_NO, _charge, _check, _probe, prescreen_sf, sf_line
from .layout import (C_BLOCKS, C_CHECKS, C_FOUND, C_LOOKUPS, C_POSITIVE, C_SF_CHECKS, C_SF_NEG, C_USEFUL, SF, F_BLOCKED, F_MAPPED, FILTER, R_FAM,
                     S_KIND, S_REC, SEEK_DUE, S_TBUF, S_TCHK, S_TIDX, S_TIDXLEN, S_TLEN, SLOTS, STRIDE, WORDS)

MISSING, VALUE, DELETED, ASK, READ, CHECK = 0, 1, 2, 3, 4, 5

if HW_RANGES:  # the SSE4.2 CRC32C instruction: a block's first read is checked in the kernel
    from ..._checksum_kernels import crc32c_range as _block_crc
else:

    @njit(cache=True, nogil=True)
    def _block_crc(buf, p, e):
        """No CRC instruction on this host: a value no stored CRC32C has, so the kernel hands
        the block to Python (``CHECK``), which checks it with the ``crc32c`` library."""
        return np.uint64(1) << np.uint64(32)


@njit(cache=True, nogil=True)
def _first_read(buf, idx, chk, blk):
    """Check raw data block ``blk``'s CRC32C on its first read, in the kernel: True when it is
    raw and intact (it is marked checked in ``chk``, the table's flags, as
    :meth:`Table.check_block` does); False when Python must look (compressed, out of the file,
    damaged -- Python raises naming the file -- or no CRC instruction on this host).
    Cost: one ``crc32`` instruction per 8 bytes of the block."""
    off = idx[1 + 6 * blk + 4]
    end = off + idx[1 + 6 * blk + 5]
    if off < 0 or end + TRAILER > buf.shape[0] or buf[end] != RAW:
        return False
    if _block_crc(buf, off, end + 1) != np.uint64(_r32(buf, end + 1)):
        return False
    chk[blk] = 1
    return True
SEEK = 8  #: or-ed into a status: a table's seek budget ran out (:mod:`.seeks`); the rest is unchanged
NEWEST = (1 << 56) - 1  #: :data:`bloomdb.lsm.rangedel.MAX_SEQ`: the snapshot of a read "as of now"


@njit(cache=True, nogil=True, inline="always")
def _sf_missing(d, charge):
    """The store filter said "definitely not": counted (also as a useful filter check, like a
    table filter's "no"), ``MISSING`` (with :data:`SEEK` when a budget ran out before)."""
    d[C_SF_NEG] += 1
    d[C_CHECKS] += 1
    d[C_USEFUL] += 1
    if charge and d[SEEK_DUE] != 0:
        return MISSING | SEEK, -1, 0, 0
    return MISSING, -1, 0, 0


@njit(cache=True, nogil=True, inline="always")
def _lookup(d, u64, w32, u16, u8, h, key, kstart, klen, kview, snap, start, charge):
    """``(status, slot, value offset, value length)`` for the key ``key[kstart:kstart+klen]``
    (``kview``: the same bytes as one array or bytes object), from slot ``start`` on.
    ``charge``: charge seeks (:mod:`.seeks`); then a ``SEEK_DUE`` word set by any lookup adds
    :data:`SEEK` to an answer (``MISSING``, ``VALUE``, ``DELETED``) for Python to act on."""
    s = start
    first = -1 if charge else -2
    probed = False  # slot s was probed already: read it without :func:`_probe`
    if start == 0:
        d[C_LOOKUPS] += 1
        sfa = sfk = np.int64(0)
        if d[SF + R_FAM] != 0:  # a store filter covers every table here: "no" ends the lookup
            d[C_SF_CHECKS] += 1
            sfa, sfk = sf_line(d, u64, h)  # a blocked one in place: checked inside the screen
            if sfa == 0 and not _check(d, u64, w32, u16, u8, SF, h, key, kstart, klen):
                return _sf_missing(d, charge)
        # the filters first (:func:`._probe_kernels.prescreen_sf`); it counts nothing, so here
        # the rejected tables are counted and the first one charged as _probe would have
        done, s, met = prescreen_sf(d, u64, u8, h, key, kstart, klen, sfa, sfk)
        if s == SF_NO:
            return _sf_missing(d, charge)
        d[C_CHECKS] += done
        d[C_USEFUL] += done
        if charge and (done >= 2 or (done == 1 and s >= 0)):  # a second table met
            _charge(d, met)
            first = -2
        if s < 0:
            if charge and d[SEEK_DUE] != 0:
                return MISSING | SEEK, -1, 0, 0
            return MISSING, -1, 0, 0
        b = SLOTS + s * STRIDE
        if d[b + S_KIND] == FILTER and d[b + S_REC + R_FAM] == F_BLOCKED + F_MAPPED:
            # prescreen's own check of this loaded ``blocked`` filter said "may contain": what
            # _probe from s would find again (range, level search, check), counted as it counts.
            # (Loaded by another thread after the screen met it lazy: read without its check --
            # a false positive at worst, the block gives the answer.)
            d[C_CHECKS] += 1
            d[C_POSITIVE] += 1
            if first == -1:
                first = s
            probed = True
    while True:
        if probed:
            probed = False
        else:
            s, first = _probe(d, u64, w32, u16, u8, h, key, kstart, klen, s, first)
        if s == -1:
            if charge and d[SEEK_DUE] != 0:
                return MISSING | SEEK, -1, 0, 0
            return MISSING, -1, 0, 0
        if s < -1:
            return ASK, -s - 2, 0, 0
        b = SLOTS + s * STRIDE
        addr = d[b + S_TBUF]
        if addr == 0:
            return READ, s, 0, 0
        idx = i64_view(d[b + S_TIDX], d[b + S_TIDXLEN])
        n = d[b + S_TLEN]
        buf = u8_view(addr, n)
        chk = u8_view(d[b + S_TCHK], hint_pos(idx[0], idx[0]))  # the read state: flags, then hints
        st, blk, vo, vl = table_get_hinted(buf, idx, chk, kview, snap)
        if st == ST_UNCHECKED and _first_read(buf, idx, chk, blk):
            st, blk, vo, vl = table_get_hinted(buf, idx, chk, kview, snap)
        if st == ST_UNCHECKED:
            end = idx[1 + 6 * blk + 4] + idx[1 + 6 * blk + 5]
            if 0 <= end < n and buf[end] == RAW:
                return CHECK, s, blk, 0
            return READ, s, 0, 0
        if st < 0:
            return READ, s, 0, 0
        d[C_BLOCKS] += 1
        if st != MISSING:
            d[C_FOUND] += 1
            if charge and d[SEEK_DUE] != 0:
                return st | SEEK, s, vo, vl
            return st, s, vo, vl
        s += 1


@njit(cache=True)  # keeps the GIL, as lookup_newest (see there)
def lookup(directory, key, snap, start):
    """The newest version of ``key`` (bytes) visible at ``snap`` in the tables of ``directory``,
    from slot ``start`` on: ``(status, slot, value offset, value length)``. One XXH3 hash, the
    filters of the candidate tables, one data block per table a filter lets through.
    Compiled without ``nogil``, as :func:`lookup_newest`: it resumes a get after a hand-over
    to Python (a seek budget spent, a table's first read) and serves snapshot gets; releasing
    the GIL for ~1-2 us let a busy compaction thread take it, and the get waited for it:
    ~180 us per call on average during db-bench's ``coldrandom`` (cProfile, 1,414 calls
    0.25 s of a 3.0 s pass; loaded machine)."""
    n = len(key)
    return _lookup(directory, directory.view(np.uint64), directory.view(np.uint32), directory.view(np.uint16),
                   directory.view(np.uint8), xxh3_64_bytes(key, 0, n), key, 0, n, key, snap, start, True)


class Answer(types.Type):
    """numba type of :func:`lookup_newest`'s answer, ``(status, slot, value offset, value length,
    value address)``, boxed as what a plain ``get`` needs: for ``VALUE`` the value itself (a new
    ``bytes`` of ``length`` bytes at ``address + offset``: the table's mapped file, which the
    caller holds through the directory), ``None`` for ``MISSING`` and ``DELETED``, else the
    4-tuple ``(status, slot, offset, length)`` for Python to finish (any status with
    :data:`SEEK`, ``ASK``, ``READ``, ``CHECK``). Boxing the value instead of a tuple saves the
    tuple, its four ints and Python's slice of the table's bytes (~70 ns per present key,
    docs/benchmarks.md "Per-call cost of a get")."""

    def __init__(self):
        super().__init__(name="GetAnswer")


_answer_type = Answer()


@register_model(Answer)
class _AnswerModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [(f, types.int64) for f in ("st", "s", "a", "n", "addr")])


@intrinsic
def _make_answer(typingctx, st, s, a, n, addr):
    """The :class:`Answer` of these five integers."""
    if not all(isinstance(t, types.Integer) for t in (st, s, a, n, addr)):
        return None
    sig = _answer_type(st, s, a, n, addr)

    def codegen(context, builder, signature, args):
        v = cgutils.create_struct_proxy(_answer_type)(context, builder)
        v.st, v.s, v.a, v.n, v.addr = [context.cast(builder, x, t, types.int64) for x, t in zip(args, signature.args)]
        return v._getvalue()

    return sig, codegen


@box(Answer)
def _box_answer(typ, val, c):
    v = cgutils.create_struct_proxy(typ)(c.context, c.builder, value=val)
    i64 = ir.IntType(64)
    out = cgutils.alloca_once(c.builder, c.pyapi.pyobj)
    with c.builder.if_else(c.builder.icmp_signed("==", v.st, i64(VALUE))) as (value, other):
        with value:
            ptr = c.builder.inttoptr(c.builder.add(v.addr, v.a), c.pyapi.cstring)
            c.builder.store(c.pyapi.bytes_from_string_and_size(ptr, v.n), out)  # NULL: the error propagates
        with other:
            none = c.builder.or_(c.builder.icmp_signed("==", v.st, i64(MISSING)),
                                 c.builder.icmp_signed("==", v.st, i64(DELETED)))
            with c.builder.if_else(none) as (no_value, handed):
                with no_value:
                    c.builder.store(c.pyapi.make_none(), out)
                with handed:
                    items = [c.pyapi.long_from_longlong(x) for x in (v.st, v.s, v.a, v.n)]
                    c.builder.store(c.pyapi.tuple_pack(items), out)
                    for x in items:
                        c.pyapi.decref(x)
    return c.builder.load(out)


@njit(cache=True)  # keeps the GIL: see the docstring
def lookup_newest(at, key):
    """:func:`lookup` from slot 0 as of now (``snap`` :data:`NEWEST`): a plain ``get``'s call.
    ``at``: the ADDRESS of a probe directory array (``ndarray.ctypes.data``; the array's
    :data:`.layout.WORDS` word gives its length), ``key``: the key, compiled for
    (:data:`bloomdb._fastargs.address`, :data:`bloomdb._fastargs.key_bytes`)
    (:mod:`bloomdb._fastargs`: no meminfo for either, no atomic reference counting in the
    kernel; ``int`` and ``bytes`` through the dispatcher work too).
    The caller keeps the directory array referenced for the whole call
    (:meth:`bloomdb.lsm.version.Version.probe`'s tuple holds both).
    Two arguments instead of four: numba's dispatch costs ~35 ns per argument, a third of a
    missing key's kernel time (measured, docs/benchmarks.md). Returns the value (``bytes``) for
    ``VALUE``, ``None`` for a key with no value (``MISSING`` or ``DELETED`` without
    :data:`SEEK`), else the 4-tuple of :func:`lookup` (:class:`Answer`). A value whose bytes
    would not lie inside its table's file is handed over as ``READ`` (Python's read raises).
    Compiled without ``nogil``: a missing key's call is ~0.2 us, and releasing the GIL around
    it cost ~30 ns per get (thread CPU, 1M-key store, loaded machine) and hands the GIL to any
    thread waiting for it (a flush, a compaction) on every get, the reader then waiting to take
    it back; other threads' gets wait at most one lookup."""
    st, s, a, vl, addr = newest_answer(address_value(at), key_view(key))
    return _make_answer(st, s, a, vl, addr)


@njit(cache=True, inline="always")
def newest_answer(a0, kv):
    """:func:`lookup_newest`'s lookup of the key bytes ``kv`` (a uint8 array) in the directory at
    address ``a0``: ``(status, slot, value offset, value length, table address)``, the address 0
    unless ``VALUE`` (a value outside its table's file is ``READ``). Also the body of
    :func:`._find_kernels.find`."""
    d = i64_view(a0, i64_view(a0, SLOTS)[WORDS])
    n = len(kv)
    st, s, a, vl = _lookup(d, d.view(np.uint64), d.view(np.uint32), d.view(np.uint16),
                           d.view(np.uint8), xxh3_64_bytes(kv, 0, n), kv, 0, n, kv, NEWEST, 0, True)
    if st != VALUE:
        return st, s, a, vl, 0
    b = SLOTS + s * STRIDE
    if a < 0 or vl < 0 or a + vl > d[b + S_TLEN]:
        return READ, s, 0, 0, 0
    return st, s, a, vl, d[b + S_TBUF]


@njit(cache=True, nogil=True)
def lookup_many(directory, data, offsets, snap, status, slot, voff, vlen):
    """:func:`lookup` from slot 0 of each key ``data[offsets[i]:offsets[i+1]]``, into the
    output arrays."""
    u64 = directory.view(np.uint64)
    w32 = directory.view(np.uint32)
    u16 = directory.view(np.uint16)
    u8 = directory.view(np.uint8)
    for i in range(offsets.shape[0] - 1):
        a = offsets[i]
        n = offsets[i + 1] - a
        st, s, vo, vl = _lookup(directory, u64, w32, u16, u8, xxh3_64_bytes(data, a, n), data, a, n,
                                data[a : a + n], snap, 0, False)
        status[i] = st
        slot[i] = s
        voff[i] = vo
        vlen[i] = vl
