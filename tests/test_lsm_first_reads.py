"""Reads right after a reopen (issue 14): a table's filter is read in place from its mapped file
and the probe directory points at it -- nothing copied, so the first lookup of a table touches no
new memory and the filters are held once (not once by the table and again in the directory)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from bloomdb import filters
from bloomdb.errors import CorruptionError, InvalidArgument, StaticFilterError
from bloomdb.lsm import DB
from bloomdb.lsm.probe import layout as L

from lsm_helpers import small_options

KEYS = [b"key%06d" % i for i in range(3000)]


def _store(tmp_path, **kw):
    p = str(tmp_path / "db")
    opts = small_options(background_compaction=False, memtable_bytes=1 << 16, **kw)
    with DB.open(p, opts) as db:
        for k in KEYS:
            db.put(k, b"v" * 50)
        db.flush()
    return p, opts


def test_the_directory_points_at_each_filter_inside_its_tables_mapped_file(tmp_path):
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        assert all(db.get(k) == b"v" * 50 for k in KEYS[::7])
        assert all(db.get(k + b"x") is None for k in KEYS[::7])
        ver = db._state[2]
        d = ver.directory.array
        checked = 0
        for s, ref in enumerate(ver.slots):
            b = L.SLOTS + L.STRIDE * s
            if d[b + L.S_KIND] != L.FILTER:
                continue
            rec = b + L.S_REC
            assert d[rec + L.R_FAM] >= L.F_MAPPED
            start = ref.table._arr.ctypes.data
            h = ref.table._handles
            addr = int(d[rec + L.R_OFF])
            assert start + h.filter_off <= addr < start + h.filter_off + h.filter_size  # in place, in the map
            checked += 1
        assert checked == len(ver.slots) > 1
        st = db.stats()
        # held once: the filters read (all of them here) are at most their bytes on disk
        assert 0 < st["filter_memory_bytes"] <= st["filter_bytes"]


def test_a_damaged_filter_read_in_place_still_fails_open_and_a_damaged_block_still_raises(tmp_path):
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        ref = db._state[2].slots[0]
        h = ref.table._handles
        path = ref.table.path
        first = ref.table.meta.min_key
    with open(path, "r+b") as f:  # flip a byte of the filter's payload (its block CRC then fails)
        f.seek(h.filter_off + h.filter_size - 8)
        b = f.read(1)
        f.seek(h.filter_off + h.filter_size - 8)
        f.write(bytes([b[0] ^ 0xFF]))
    with DB.open(p, opts) as db:
        assert all(db.get(k) == b"v" * 50 for k in KEYS)  # fail open: every key still found
        assert db.stats()["filters_damaged"] >= 1
    with open(path, "r+b") as f:  # now a data block: the first one
        f.seek(10)
        b = f.read(1)
        f.seek(10)
        f.write(bytes([b[0] ^ 0xFF]))
    with DB.open(p, opts) as db:
        with pytest.raises(CorruptionError, match=os.path.basename(path)):
            db.get(first)


def test_from_bytes_without_a_copy_reads_the_payload_in_place_and_is_read_only():
    f = filters.create("blocked:10", capacity=1000)
    f.add_many([b"a%d" % i for i in range(500)])
    data = bytearray(f.to_bytes())
    g = filters.from_bytes(data, copy=False)
    arr = g.probe_descriptor().args[0]
    assert np.shares_memory(arr, np.frombuffer(data, np.uint8))
    assert all(g.might_contain(b"a%d" % i) for i in range(500))
    assert g.might_contain_many([b"a%d" % i for i in range(500)]).all()
    with pytest.raises(StaticFilterError):
        g.add(b"x")
    with pytest.raises(InvalidArgument):
        filters.from_bytes(bytes(data), copy=False)  # read-only bytes: the kernels need writable arrays
    c = filters.from_bytes(bytes(data))  # the default still copies
    assert not np.shares_memory(c.probe_descriptor().args[0], np.frombuffer(data, np.uint8))
