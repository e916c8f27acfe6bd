"""A version's tables' prefix filters (:mod:`bloomdb.lsm.prefix`) asked for one prefix in one
kernel call (:func:`._prefix_kernels.check_records`), the way point gets ask whole-key filters.

Each table's prefix filter goes through the filters' public probe contract
(:func:`.directory.kernel_record`: its probe descriptor's family code, array and scalars) into
one int64 buffer: a filter record per table, then the arrays (8-byte aligned). A table whose
prefix filter the kernel cannot check (a family without a known descriptor, e.g. ``scalable``)
is asked in Python (``might_contain``); a table with no usable prefix filter answers "may
match", one whose keys have no prefix answers "no" (:meth:`Table.prefix_filter`).

Cost: building reads every table's prefix filter once (kept by the table) and copies the arrays;
a check is one kernel call for all the candidate tables.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from ._prefix_kernels import check_records
from .directory import _put_record, _round8, kernel_record


class PrefixFilters:
    """The prefix filters of ``tables`` for extractor ``name``, laid out for one kernel call."""

    __slots__ = ("buf", "where")

    def __init__(self, tables, name: str):
        #: table number -> record word index (int), or the answer itself (bool), or a filter
        #: Python asks
        self.where: dict = {}
        recs = []
        for t in tables:
            f = t.prefix_filter(name)
            rec = None if f is True or f is False else kernel_record(f)
            if rec is None:
                self.where[t.number] = f
            else:
                self.where[t.number] = len(recs) * L.RSTRIDE
                recs.append(rec)
        off = len(recs) * L.RSTRIDE * 8
        offs = []
        for rec in recs:
            offs.append(off)
            off += _round8(rec[1].nbytes)
        self.buf = np.zeros(max(1, _round8(off) // 8), np.int64)
        for i, rec in enumerate(recs):
            _put_record(self.buf, i * L.RSTRIDE, rec, offs[i])

    def may_match(self, tables, prefix: bytes) -> list[bool]:
        """Whether each of ``tables`` (tables this was built over) may hold a key with prefix
        ``prefix``: the kernel-checked ones in one call, the others as their filter says."""
        ans = [self.where[t.number] for t in tables]
        ks = [i for i, a in enumerate(ans) if type(a) is int]
        if ks:
            out = np.empty(len(ks), np.bool_)
            check_records(self.buf, np.array([ans[i] for i in ks], np.int64), np.frombuffer(prefix, np.uint8), out)
            for i, v in zip(ks, out.tolist()):
                ans[i] = v
        return [a if type(a) is bool else bool(a.might_contain(prefix)) for a in ans]
