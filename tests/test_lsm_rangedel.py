"""``DB.delete_range`` (range tombstones, :mod:`bloomdb.lsm.rangedel`): every read path honours
them at every place they live (memtable, WAL after a reopen, table meta block, compaction
outputs), snapshots older than a tombstone still see what it hides, and compactions drop the
hidden entries and finally the tombstone. The random mixes are in the model test
(``bench.stress.model_check``), the LevelDB differential (``test_lsm_iterator.py``) and the
SIGKILL test (``bench.stress.kill_check``: a range delete in every batch)."""

from __future__ import annotations

import os

import pytest

from bloomdb.errors import CorruptionError, InvalidArgument, KeyTypeError
from bloomdb.lsm import DB, WriteBatch
from bloomdb.lsm import wal
from bloomdb.lsm.sstable.footer import Meta, decode_meta, encode_meta

from lsm_helpers import small_options

N = 600


def _k(i: int) -> bytes:
    return b"k%05d" % i


def _filled(path, n=N, **kw):
    db = DB.open(str(path), small_options(background_compaction=False, **kw))
    for i in range(n):
        db.put(_k(i), b"v%d" % i)
    return db


def _expect(db, gone, n=N, snapshot=None):
    """Every read form agrees: keys in ``gone`` are absent, the others hold their value."""
    want = [(_k(i), b"v%d" % i) for i in range(n) if i not in gone]
    assert list(db.iterator(snapshot=snapshot)) == want
    assert list(db.iterator(reverse=True, snapshot=snapshot)) == want[::-1]
    assert list(db.scan(_k(100), _k(300), snapshot=snapshot)) == [kv for kv in want if _k(100) <= kv[0] < _k(300)]
    keys = [_k(i) for i in range(0, n, 7)]
    assert db.multi_get(keys, snapshot=snapshot) == [None if i in gone else b"v%d" % i for i in range(0, n, 7)]
    for i in (0, 149, 150, 151, 249, 250, n - 1):
        assert db.get(_k(i), b"-", snapshot=snapshot) == (b"-" if i in gone else b"v%d" % i), i


def test_delete_range_in_memtable_tables_and_after_reopen(tmp_path):
    db = _filled(tmp_path / "db")
    db.flush()
    old = db.snapshot()
    db.delete_range(_k(150), _k(250))
    gone = set(range(150, 250))
    _expect(db, gone)
    _expect(db, set(), snapshot=old)  # the older snapshot still sees them
    db.flush()  # the tombstone now lives in a table's meta block
    _expect(db, gone)
    _expect(db, set(), snapshot=old)
    db.compact_range()
    _expect(db, set(), snapshot=old)  # a live snapshot keeps the hidden entries through compaction
    old.close()
    db.put(_k(200), b"v200")  # a newer write is not hidden
    gone.discard(200)
    _expect(db, gone)
    db.close()
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=False))
    _expect(db, gone)
    db.delete_range(_k(0), _k(10))  # only in the WAL: the reopen replays it
    db.close()
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=False))
    _expect(db, gone | set(range(10)))
    db.close()


def test_range_delete_in_a_batch_is_ordered_with_its_other_ops(tmp_path):
    db = _filled(tmp_path / "db")
    b = WriteBatch().put(_k(5), b"new").delete_range(_k(0), _k(10)).put(_k(7), b"v7")
    db.write(b)
    assert db.get(_k(5)) is None and db.get(_k(7)) == b"v7"
    assert [k for k in db.iterator(stop=_k(12), include_value=False)] == [_k(7), _k(10), _k(11)]
    db.close()


def test_bad_and_empty_ranges(tmp_path):
    db = _filled(tmp_path / "db", n=20)
    seq = db.stats()["last_sequence"]
    with pytest.raises(InvalidArgument):
        db.delete_range(_k(5), _k(4))
    with pytest.raises(InvalidArgument):
        WriteBatch().delete_range(b"b", b"a")
    db.delete_range(_k(5), _k(5))  # empty: deletes nothing, writes nothing
    assert db.stats()["last_sequence"] == seq
    assert len(list(db.iterator())) == 20
    with pytest.raises(KeyTypeError):
        db.delete_range(1, 2)
    assert db.stats()["last_sequence"] == seq
    db.close()


def test_a_memtable_of_only_a_tombstone_flushes_and_compaction_drops_the_tombstone(tmp_path):
    db = _filled(tmp_path / "db")
    db.compact_range()
    db.delete_range(b"a", b"z")  # covers every table; the memtable holds nothing else
    db.flush()
    assert db._version.range_dels and list(db.iterator()) == []
    db.put(b"a0", b"x")
    db.put(b"y9", b"y")  # a table spanning every older table: its compaction meets them all
    db.compact_range()
    assert db.get(_k(3)) is None and list(db.iterator()) == [(b"a0", b"x"), (b"y9", b"y")]
    assert db._version.range_dels == ()  # nothing older is left under it
    assert sum(r.info.entries for r in db._version.all_refs()) == 2
    db.close()


def test_wal_and_meta_block_round_trips():
    ops = [(b"a", b"1"), (b"b", None), (b"c", wal.RangeEnd(b"f")), (b"", wal.RangeEnd(b"\x00"))]
    rec = wal.encode_batch(7, ops)
    assert list(wal.read_log(rec, "x")) == [(7, ops)]
    assert list(wal.read_log(wal.encode_put(9, b"q", wal.RangeEnd(b"r")), "x")) == [(9, [(b"q", wal.RangeEnd(b"r"))])]
    m = Meta(3, 1, 1, 9, 3, 3, 1, b"a", b"c", "blocked:10", ((b"a", b"b", 5), (b"", b"\xff", 9)))
    assert decode_meta(encode_meta(m), "t") == m
    plain = Meta(3, 1, 1, 9, 3, 3, 1, b"a", b"c", None)
    assert decode_meta(encode_meta(plain), "t").range_dels == ()  # format-1 meta blocks read as before
    assert encode_meta(plain) == encode_meta(Meta(3, 1, 1, 9, 3, 3, 1, b"a", b"c", None, ()))
    with pytest.raises(CorruptionError):
        decode_meta(encode_meta(m)[:-3], "t")
    with pytest.raises(CorruptionError):
        decode_meta(encode_meta(plain) + b"junk", "t")


@pytest.mark.parametrize("where", ["log", "table"])
def test_repair_keeps_range_tombstones(tmp_path, where):
    """A repaired store (lost manifest) still hides what a range delete removed, whether the
    tombstone was still in the log or already in a table (LevelDB's RepairDB keeps deletions)."""
    from bloomdb.lsm import repair

    db = _filled(tmp_path / "db")
    db.flush()
    db.delete_range(_k(150), _k(250))  # alone in its memtable: a table of only the tombstone
    if where == "table":
        db.flush()
    db.close()
    os.remove(tmp_path / "db" / "MANIFEST")
    repair(str(tmp_path / "db"))
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=False))
    _expect(db, set(range(150, 250)))
    db.close()


def test_many_tombstones_are_fragmented(tmp_path):
    """Thousands of overlapping tombstones: every read agrees with the model (reads check a key
    against non-overlapping fragments, :class:`bloomdb.lsm.compaction.tombstones.Fragments`)."""
    from bloomdb.lsm.compaction.tombstones import Fragments

    f = Fragments([(b"a", b"m", 5), (b"c", b"e", 9), (b"d", b"z", 7), (b"x", b"y", 2)])
    assert [f.covering(k) for k in (b"", b"a", b"c", b"d", b"e", b"m", b"x", b"y", b"z")] == [0, 5, 9, 9, 7, 7, 7, 7, 0]
    db = _filled(tmp_path / "db", n=3000)
    gone = set()
    for i in range(0, 3000, 3):
        db.delete_range(_k(i), _k(i + 2 + (i % 7 == 0) * 40))
        gone |= set(range(i, min(3000, i + 2 + (i % 7 == 0) * 40)))
        if i % 600 == 0:
            db.flush()
    want = [(_k(i), b"v%d" % i) for i in range(3000) if i not in gone]
    assert list(db.iterator()) == want
    assert db.multi_get([_k(i) for i in range(0, 3000, 11)]) == [None if i in gone else b"v%d" % i for i in range(0, 3000, 11)]
    db.compact_range()
    assert list(db.iterator(reverse=True)) == want[::-1]
    db.close()
