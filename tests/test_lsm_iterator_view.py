"""An iterator registers no snapshot (issue 15's prefix seeks: a snapshot per seek cost ~6 us):
its view -- the memtables' entries in its range, copied at creation, and the version it holds --
is what keeps it consistent. Checked here against later overwrites, deletes, range deletes,
flushes and compactions that drop every older version."""

from __future__ import annotations

import itertools

import pytest

from bloomdb.lsm import DB, FixedPrefix, Options


@pytest.mark.parametrize("where", ["memtable", "tables"])
def test_an_iterator_sees_its_creation_point_after_compactions_drop_old_versions(tmp_path, where):
    o = Options(memtable_bytes=64 << 10, table_bytes=32 << 10, prefix_extractor=FixedPrefix(3))
    with DB.open(tmp_path / "db", o) as db:
        want = {}
        for i in range(3000):
            k, v = b"k%02d-%05d" % (i % 40, i), b"v%d" % i
            db.put(k, v)
            want[k] = v
        if where == "tables":
            db.compact_range()
        its = [db.iterator(), db.iterator(prefix=b"k07"), db.iterator(start=b"k10", stop=b"k30", reverse=True)]
        heads = [list(itertools.islice(its[0], 5)), [], []]
        assert not db._snapshots
        for i in range(3000):  # every key overwritten or deleted, then compacted away
            k = b"k%02d-%05d" % (i % 40, i)
            db.delete(k) if i % 3 == 0 else db.put(k, b"new")
        db.delete_range(b"k00", b"k99")
        db.compact_range()
        assert db.get(b"k07-00007") is None
        got = [heads[0] + list(its[0]), list(its[1]), list(its[2])]
        assert got[0] == sorted(want.items())
        assert got[1] == sorted((k, v) for k, v in want.items() if k.startswith(b"k07"))
        assert got[2] == sorted(((k, v) for k, v in want.items() if b"k10" <= k < b"k30"), reverse=True)
        for it in its:
            it.close()
