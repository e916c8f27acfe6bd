"""``get_property`` / ``approximate_size`` (issue 15), with plyvel's names and LevelDB's answers
as the reference where they apply."""

from __future__ import annotations

import pytest

from bloomdb.errors import InvalidArgument, StoreClosed
from bloomdb.lsm import DB, Options
from bloomdb.lsm.fs import RealFS

plyvel = pytest.importorskip("plyvel")


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    return Options(**kw)


def _fill(put, n=2000):
    for i in range(n):
        put(b"k%05d" % i, b"v" * 100)


def test_properties_answer_like_plyvel(tmp_path):
    ref = plyvel.DB(str(tmp_path / "ldb"), create_if_missing=True)
    with DB.open(tmp_path / "s", _opts(max_flush_level=0)) as db:  # the flushed table stays in L0
        for name in (b"leveldb.num-files-at-level0", b"leveldb.num-files-at-level99", b"leveldb.nope", b"bogus"):
            assert type(db.get_property(name)) is type(ref.get_property(name))  # bytes in, bytes out; None
        assert db.get_property(b"leveldb.num-files-at-level0") == ref.get_property(b"leveldb.num-files-at-level0") == b"0"
        _fill(db.put)
        db.flush()
        db.put(b"k00000", b"again")
        assert db.get_property("bloomdb.num-files-at-level0") == "1"
        assert db.get_property("rocksdb.num-files-at-level0") == "1"
        assert db.get_property("bloomdb.estimate-num-keys") == "2001"
        assert db.get_property("bloomdb.num-entries-all-mem-tables") == "1"
        assert int(db.get_property("bloomdb.total-sst-files-size")) == db.stats()["bytes_per_level"][0]
        assert db.get_property("bloomdb.filter-memory-bytes") == "0"  # no lookup read a filter yet
        db.get(b"k00001x")  # in the table's key range: its filter is read
        fb = int(db.get_property("bloomdb.filter-memory-bytes"))
        assert fb == db.stats()["filter_bytes"] > 0
        text = db.get_property("bloomdb.stats")
        assert text.splitlines()[1].split()[:3] == ["Level", "Files", "Size(MB)"]
        assert text.splitlines()[3].split()[:2] == ["0", "1"] and "filter checks 1" in text
        assert "--- level 0 ---" in db.get_property("bloomdb.sstables")
        with pytest.raises(InvalidArgument):
            db.get_property(5)
    ref.close()


def test_approximate_size_follows_the_key_range_like_leveldb(tmp_path):
    ref = plyvel.DB(str(tmp_path / "ldb"), create_if_missing=True, compression=None)
    with DB.open(tmp_path / "s", _opts()) as db:
        _fill(db.put)
        _fill(ref.put)
        # data only in the memtable counts nothing (LevelDB's answer too)
        assert db.approximate_size(b"k00000", b"k99999") == ref.approximate_size(b"k00000", b"k99999") == 0
        db.compact_range()
        ref.compact_range()
        total, rtotal = db.approximate_size(), ref.approximate_size(b"", b"\xff")
        assert total == int(db.get_property("bloomdb.total-sst-files-size"))
        assert 200_000 < total < 400_000 and 200_000 < rtotal < 400_000  # ~2000 x 100 bytes
        for a, b in [(b"k00000", b"k01000"), (b"k00500", b"k00750"), (b"k01900", b"k99999")]:
            mine, theirs = db.approximate_size(a, b) / total, ref.approximate_size(a, b) / rtotal
            assert abs(mine - theirs) < 0.05, (a, b, mine, theirs)
        assert db.approximate_size(b"k00100", b"k00100") == 0
        assert db.approximate_size(b"z", None) == 0 and db.approximate_size("k00000", "k01000") > 0
    ref.close()


def test_properties_after_close_raise(tmp_path):
    db = DB.open(tmp_path / "s", _opts())
    db.close()
    with pytest.raises(StoreClosed):
        db.get_property("bloomdb.stats")
    with pytest.raises(StoreClosed):
        db.approximate_size()
