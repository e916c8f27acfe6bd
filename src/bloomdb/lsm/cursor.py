"""A forward cursor's first round in one kernel call: what ``iterator(prefix=p)`` and
``seek(key)`` then a few ``next()`` pay.

:func:`.seek.first_round` found the tables in Python (per level a binary search, the prefix
filters asked in one call, then one :func:`._seek_kernels.seek_table` call per table, one merge
call, several small numpy steps): ~26 us for a present prefix on a 1M-key store, most of it the
Python between the kernels and the arrays each call returns. Here one call of
:func:`._cursor_kernels.first_round` does all of it on a :class:`Plan` of the version (built once
per version and prefix extractor) and returns the round's visible entries packed in one array
and the ``struct`` format that cuts them: one ``struct.unpack_from`` makes the keys and values.

Taken when the view has no range tombstones, at most one memtable holds entries of the range and
the host runs the SSE4.2 CRC32C kernel (blocks read for the first time are checked in the call);
otherwise (and when the kernel hands the round back: a table read through Python, a filter family
the kernel does not check, a compressed or damaged block) :func:`.seek.first_round` runs as
before. A block whose CRC32C is not checked yet is checked by :meth:`Table.check_block` (which
raises on damage) and the call is made again.
"""

from __future__ import annotations

from struct import unpack_from

import numpy as np

from ..checksum import HW_RANGES
from . import _cursor_kernels as CK
from .probe.fastcall import direct

_E8 = np.zeros(0, np.uint8)
_Z1 = np.zeros(1, np.int64)
_NO_MEM = (_E8, _Z1, np.zeros(0, np.uint64), _E8, _Z1)
_NO_FILTERS = np.zeros(1, np.int64)


class Plan:
    """A version's tables laid out for :func:`._cursor_kernels.first_round` (see its module):
    ``tab`` (``T_STRIDE`` words per table, level order), ``lv`` (per level: first table, count),
    ``kb`` (the tables' key bounds), ``pbuf`` (the prefix filters' records, extractor ``name``),
    ``tables`` (in ``tab`` order) and ``pins`` (the arrays ``tab`` addresses: kept referenced)."""

    __slots__ = ("tab", "lv", "kb", "pbuf", "tables", "pins")

    def __init__(self, version, name: str | None):
        self.tables = [r.table for level in version.levels for r in level]
        where = version.prefix_filters(name).where if name is not None else None
        bounds = b"".join(x for t in self.tables for x in (t.min_key, t.max_key))
        self.kb = np.frombuffer(bounds, np.uint8).copy() if bounds else np.zeros(1, np.uint8)
        tab = np.zeros(max(1, len(self.tables)) * CK.T_STRIDE, np.int64)
        self.pins = []
        off = 0
        for i, t in enumerate(self.tables):
            w = i * CK.T_STRIDE
            tab[w + CK.T_MIN_OFF], tab[w + CK.T_MIN_LEN] = off, len(t.min_key)
            off += len(t.min_key)
            tab[w + CK.T_MAX_OFF], tab[w + CK.T_MAX_LEN] = off, len(t.max_key)
            off += len(t.max_key)
            arrs = t.lookup_arrays()
            if arrs is not None:
                self.pins.append(arrs)
                tab[w + CK.T_BUF], tab[w + CK.T_BUFLEN] = arrs[0].ctypes.data, arrs[0].shape[0]
                tab[w + CK.T_IDX], tab[w + CK.T_IDXLEN] = arrs[1].ctypes.data, arrs[1].shape[0]
                tab[w + CK.T_CHK] = arrs[2].ctypes.data
            f = CK.F_MAYBE if where is None else where[t.number]
            if type(f) is bool:
                f = CK.F_MAYBE if f else CK.F_NONE
            elif type(f) is not int:
                f = CK.F_PYTHON
            tab[w + CK.T_FILTER] = f
        self.tab = tab
        self.lv = np.array([x for level, first in _firsts(version.levels) for x in (first, len(level))], np.int64)
        self.pbuf = version.prefix_filters(name).buf if name is not None else _NO_FILTERS


def _firsts(levels):
    s = 0
    for level in levels:
        yield level, s
        s += len(level)


def plan(version, name: str | None) -> Plan:
    """The version's :class:`Plan` for prefix extractor ``name`` (None: no prefix filters asked),
    built on first use and kept by the version."""
    plans = version.__dict__.setdefault("_cursor_plans", {})
    p = plans.get(name)
    if p is None:
        p = plans[name] = Plan(version, name)
    return p


_entry = None  #: ``(dispatcher, its compiled entry)`` of :func:`_kernel`


def _kernel(*args):
    """:func:`._cursor_kernels.first_round` through its compiled entry
    (:func:`.probe.fastcall.direct`: its 16 arguments' types are not resolved again on every
    seek, ~1.5 us). Every argument's type is fixed by construction: the plan's arrays (int64,
    int64, uint8, int64), ``keys`` read-only uint8 (``np.frombuffer`` of bytes), Python bools and
    ints, and the memtable run's arrays (:meth:`.memtable.MemTable.range_packed`'s dtypes, or
    ``_NO_MEM``'s). ``CK.first_round`` is looked up on each call, so a wrapper put in its place
    (a test counting statuses) is called as it is."""
    global _entry
    k = CK.first_round
    e = _entry
    if e is None or e[0] is not k:
        if not hasattr(k, "overloads"):  # not a numba dispatcher
            return k(*args)
        e = _entry = (k, direct(k, args))
    return e[1](*args)


def first_round(view, a, b, values: bool, limit: int):
    """``(keys, values, bound)`` as :func:`.seek.first_round` returns them (``limit``: entries a
    table decodes at least, visible entries returned at most), from one kernel call; ``None``
    when this path does not apply (the caller takes the Python round)."""
    if view.hide is not None or len(view.mem) > 1 or not HW_RANGES:
        return None
    prefix = view.prefix
    name = None if prefix is None else prefix[0]
    pl = plan(view.version, name)
    a = a or b""
    hb = b or b""
    keys = np.frombuffer(b"".join((a, hb, prefix[1])) if prefix is not None else a + hb, np.uint8)
    mem = view.mem[0] if view.mem else _NO_MEM
    while True:
        st, t, blk, checks, skips, out, offs, m, has_bound, fmt = _kernel(
            pl.tab, pl.lv, pl.kb, pl.pbuf, prefix is not None, keys, len(a), len(hb), b is not None, view.snap,
            limit, *mem)
        if st != CK.CHECK:
            break
        if not pl.tables[t // CK.T_STRIDE].check_block(blk):
            return None  # compressed: the Python round decompresses
    if st != CK.OK:
        return None
    if prefix is not None and not view.counted:
        view.counted = True
        c = prefix[2]
        c["prefix_checks"] += checks
        c["prefix_skips"] += skips
    if m == 0 and not has_bound:  # nothing in range (an absent prefix)
        return [], ([] if values else None), None
    raw = out.tobytes()
    cut = unpack_from(raw[fmt:], raw)  # every bytes object made in C: m keys, m values, the bound
    return list(cut[:m]), (list(cut[m : 2 * m]) if values else None), (cut[2 * m] if has_bound else None)
