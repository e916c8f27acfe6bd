"""Filters of the tables a store wrote copied side by side (:func:`bloomdb.lsm.probe.directory._copy_filters_together`):
the filter blocks of the flushed and compacted tables a directory first holds go into one buffer
(on transparent huge pages when large, plain memory when the system has none), and the lookup
kernel reads them there; tables opened from files already there read their filters in place.
Pinned: the copies are the tables' own filter blocks byte for byte, every directory record points
into one, the family's check on that memory answers exactly as the family's own ``might_contain``,
and every get answers as a model -- with huge pages and with the advice refused."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from bloomdb.checksum import HW_RANGES
from bloomdb.filters import _blocked_kernels as BLK, scratch
from bloomdb.hashing import xxh3_64
from bloomdb.lsm import DB
from bloomdb.lsm.probe import layout as L
from bloomdb.lsm.sstable.block import TRAILER

from lsm_helpers import small_options

pytestmark = pytest.mark.skipif(not HW_RANGES, reason="the kernel reads filters itself only with the CRC instruction")

KEYS = [b"key%06d" % i for i in range(0, 12000, 2)]


def _fill(path, **kw):
    opts = small_options(background_compaction=False, memtable_bytes=1 << 15, filter="blocked:10", **kw)
    model = {}
    db = DB.open(path, opts)
    for n, k in enumerate(KEYS):
        db.put(k, b"v%d" % n)
        model[k] = b"v%d" % n
    db.flush()
    return db, model


def _check_copies_and_answers(db, model, copied=True):
    queries = [q for k in KEYS[::3] for q in (k, k + b".", k[:-1] + b"x")]
    for q in queries:  # the first directory copies, the kernel reads every filter from its copy
        assert db.get(q) == model.get(q), q
    ver = db._state[2]
    d = ver.probe()[0]
    copies = [r.table.probe_filter_copy for r in ver.slots]
    assert len(copies) > 4
    if copied:
        assert all(c is not None for c in copies)
        assert len({id(c.base) for c in copies}) == 1  # one buffer for the tables of one directory
    else:
        assert all(c is None for c in copies)
    for s, r in enumerate(ver.slots):
        t, c = r.table, copies[s]
        off, size = t.filter_block
        b = L.SLOTS + s * L.STRIDE
        assert d[b + L.S_KIND] == L.FILTER and d[b + L.S_REC + L.R_FAM] == L.F_BLOCKED + L.F_MAPPED
        a, n = int(d[b + L.S_REC + L.R_OFF]), int(d[b + L.S_REC + L.R_LEN])
        if copied:
            assert bytes(c) == bytes(t.lookup_arrays()[0][off : off + size + TRAILER])
            assert c.ctypes.data <= a and a + 4 * n <= c.ctypes.data + c.shape[0] and a % 64 == 0
        else:  # read in place from the table's map
            m = t.lookup_arrays()[0]
            assert m.ctypes.data + off <= a and a + 4 * n <= m.ctypes.data + off + size
        w32 = np.ctypeslib.as_array((ctypes.c_uint32 * n).from_address(a))
        lines, k = np.uint64(d[b + L.S_REC + L.R_P0]), np.int64(d[b + L.S_REC + L.R_P0 + 1])
        f = t.filter()
        for q in queries[:600]:
            assert bool(BLK.check_hash(w32, lines, k, np.uint64(xxh3_64(q)))) == bool(f.might_contain(q)), (s, q)
    for k in KEYS[1::7]:  # and again, every filter read from its copy
        assert db.get(k + b"?") is None
    assert sum(db.get(k) is not None for k in KEYS[::5]) == len(KEYS[::5])


def test_opened_tables_filters_are_read_from_copies_side_by_side(tmp_path):
    db, model = _fill(tmp_path / "db")
    try:
        _check_copies_and_answers(db, model)
    finally:
        db.close()


@pytest.mark.parametrize("advice", ["huge", "refused"])
def test_a_mapped_copy_buffer_with_or_without_huge_pages(tmp_path, monkeypatch, advice):
    """The copies' buffer from an anonymous map (forced here: small stores stay under
    ``scratch.MIN_MAPPED``), advised onto huge pages, or the advice refused by the system (an
    advice value it does not know: ``madvise`` fails, 4 KiB pages): the same answers."""
    monkeypatch.setattr(scratch, "MIN_MAPPED", 0)
    if advice == "refused":
        monkeypatch.setattr(scratch, "_HUGE", 0x7FFF)
    db, model = _fill(tmp_path / "db")
    try:
        _check_copies_and_answers(db, model)
        base = db._state[2].slots[0].table.probe_filter_copy.base
        assert not isinstance(base, np.ndarray) or base.base is not None  # a view of the map, not np.zeros
    finally:
        db.close()


def test_tables_opened_from_files_already_there_read_their_filters_in_place(tmp_path):
    db, model = _fill(tmp_path / "db")
    db.close()
    with DB.open(tmp_path / "db", small_options(background_compaction=False, memtable_bytes=1 << 15,
                                                filter="blocked:10", filter_file=False)) as db:
        _check_copies_and_answers(db, model, copied=False)
