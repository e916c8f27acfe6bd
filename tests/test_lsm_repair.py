"""``bloomdb.lsm.repair`` (issue 15): a store whose manifest is lost or damaged, or whose tables
are damaged, rebuilt from its tables and logs (LevelDB's RepairDB, checked against plyvel's)."""

from __future__ import annotations

import os
import random

import pytest

from bloomdb.errors import BloomDBError, InvalidArgument
from bloomdb.lsm import DB, Options, WriteBatch, repair
from bloomdb.lsm.fs import RealFS


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    kw.setdefault("memtable_bytes", 4096)
    kw.setdefault("table_bytes", 8192)
    kw.setdefault("level0_trigger", 2)
    return Options(**kw)


def _workload(put, delete, n_ops=6000, seed=1):
    """Puts, overwrites and deletes over 500 keys; returns the model dict."""
    rng = random.Random(seed)
    model = {}
    for i in range(n_ops):
        k = b"key%04d" % rng.randrange(500)
        if rng.random() < 0.15:
            delete(k)
            model.pop(k, None)
        else:
            v = b"v%d-" % i + b"x" * rng.randrange(40)
            put(k, v)
            model[k] = v
    return model


def _contents(db):
    return dict(db.scan())


def _store(tmp_path, **kw):
    path = tmp_path / "s"
    db = DB.open(path, _opts(**kw))
    model = _workload(db.put, db.delete)
    st = db.stats()
    assert sum(1 for n in st["tables_per_level"][1:] if n) >= 1 and st["memtable_entries"] > 0
    db.close()
    return path, model


def test_lost_manifest_is_rebuilt_with_every_acknowledged_write(tmp_path):
    path, model = _store(tmp_path)
    os.remove(path / "MANIFEST")
    with pytest.raises(Exception):  # a store without its manifest does not open as itself
        with DB.open(path, _opts(create_if_missing=False)) as db:
            assert _contents(db) == model
    report = repair(path, _opts())
    assert "missing" in report.manifest and report.logs and report.tables
    with DB.open(path, _opts()) as db:
        assert _contents(db) == model
        assert all(db.get(k) == v for k, v in model.items())
        assert db.get(b"key9999") is None
        db.put(b"new", b"1")  # writable again; new numbers do not collide
        db.compact_range()
    with DB.open(path, _opts()) as db:
        assert db.get(b"new") == b"1" and len(_contents(db)) == len(model) + 1


def test_versions_from_every_level_resolve_by_sequence(tmp_path):
    """Tables from L1..L4 all land in L0, where a deep table can have the larger largest
    sequence yet an older version of a key (seed 0 has 8 such keys): point reads after the
    repair still give the newest version (the repair's final compaction merges by sequence)."""
    path = tmp_path / "s"
    db = DB.open(path, _opts(level1_bytes=4096, level_ratio=2.0))
    model = _workload(db.put, db.delete, 6000, seed=0)
    assert sum(1 for n in db.stats()["tables_per_level"][2:] if n) >= 2
    db.close()
    os.remove(path / "MANIFEST")
    repair(path, _opts())
    with DB.open(path, _opts(level0_trigger=1000, level0_stop=1000)) as db:  # no compaction at open
        assert [k for k, v in model.items() if db.get(k) != v] == []
        assert [i for i in range(500) if b"key%04d" % i not in model and db.get(b"key%04d" % i) is not None] == []


def test_damaged_manifest_is_kept_aside_and_rebuilt(tmp_path):
    path, model = _store(tmp_path)
    raw = bytearray((path / "MANIFEST").read_bytes())
    raw[30] ^= 0xFF
    (path / "MANIFEST").write_bytes(bytes(raw))
    report = repair(path, _opts())
    assert "damaged" in report.manifest
    assert (path / "lost" / "MANIFEST").read_bytes() == bytes(raw)  # never deleted
    with DB.open(path, _opts()) as db:
        assert _contents(db) == model


def test_readable_manifest_with_a_missing_table_uses_only_what_it_names(tmp_path):
    path, model = _store(tmp_path)
    with DB.open(path, _opts()) as db:
        victim = db._version.levels[db._version.deepest_nonempty()][0]
        lost_keys = {k for k, _ in db.scan(victim.info.min_key, victim.info.max_key + b"\0")}
    os.remove(path / ("%06d.sst" % victim.number))
    with pytest.raises(BloomDBError, match="missing"):
        DB.open(path, _opts())
    report = repair(path, _opts())
    assert "readable" in report.manifest
    assert any("missing" in why for _, why in report.set_aside)
    with DB.open(path, _opts()) as db:
        got = _contents(db)
    assert {k: v for k, v in model.items() if k not in lost_keys}.items() <= got.items()
    assert all(got[k] == model[k] for k in got if k in model)  # nothing older brought back
    assert set(got) <= set(model)


def test_damaged_table_blocks_are_salvaged_and_the_original_kept(tmp_path):
    path = tmp_path / "s"
    with DB.open(path, _opts(memtable_bytes=1 << 20)) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"v%05d" % i)
        db.flush()
        (ref,) = db._version.all_refs()
        off, size = ref.table.offsets[5], ref.table.sizes[5]
    name = "%06d.sst" % ref.number
    raw = bytearray((path / name).read_bytes())
    original = bytes(raw)
    raw[off + size // 2] ^= 0xFF  # one data block damaged
    (path / name).write_bytes(bytes(raw))
    report = repair(path, _opts())
    assert report.salvaged == [(name, report.salvaged[0][1], 1)] and 2500 < report.salvaged[0][1] < 3000  # one block of ~220 lost
    assert (path / "lost" / name).read_bytes() != original  # the damaged file, kept as it was
    assert (path / "lost" / name).read_bytes() == bytes(raw)
    with DB.open(path, _opts()) as db:
        got = _contents(db)
    assert len(got) == report.salvaged[0][1]
    assert all(v == b"v" + k[1:] for k, v in got.items())


def test_foreign_and_unreadable_files_are_set_aside_never_deleted(tmp_path):
    path, model = _store(tmp_path)
    os.remove(path / "MANIFEST")
    (path / "000999.sst").write_bytes(b"not a table at all" * 10)
    (path / "000998.log").write_bytes(b"\x01\x02\x03 garbage" * 10)
    (path / "000997.sst.tmp").write_bytes(b"half")
    report = repair(path, _opts())
    aside = dict(report.set_aside)
    assert {"000999.sst", "000998.log", "000997.sst.tmp"} <= set(aside)
    assert (path / "lost" / "000999.sst").read_bytes() == b"not a table at all" * 10
    assert (path / "lost" / "000998.log").exists() and (path / "lost" / "000997.sst.tmp").exists()
    with DB.open(path, _opts()) as db:
        assert _contents(db) == model
    assert "set aside lost/000999.sst" in str(report)
    repair(path, _opts())  # again: safe, same contents
    with DB.open(path, _opts()) as db:
        assert _contents(db) == model


def test_repair_refuses_what_is_not_a_closed_store(tmp_path):
    with pytest.raises(InvalidArgument):
        repair(tmp_path / "nothing")
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "a.jpg").write_bytes(b"jpg")
    with pytest.raises(InvalidArgument):
        repair(tmp_path / "photos")
    assert os.listdir(tmp_path / "photos") == ["a.jpg"]
    with DB.open(tmp_path / "s", _opts()) as db:
        db.put(b"k", b"v")
        with pytest.raises(BloomDBError, match="another process"):
            repair(tmp_path / "s", _opts())
        assert db.get(b"k") == b"v"


def test_repair_agrees_with_leveldb_repairdb(tmp_path):
    """The same workload on both stores, both manifests removed, both repaired: same contents."""
    plyvel = pytest.importorskip("plyvel")
    ref_path = str(tmp_path / "ldb")
    ref = plyvel.DB(ref_path, create_if_missing=True, write_buffer_size=8192)
    path = tmp_path / "s"
    db = DB.open(path, _opts())
    ops = []
    model = _workload(lambda k, v: ops.append((k, v)), lambda k: ops.append((k, None)), 4000, seed=7)
    for i in range(0, len(ops), 50):
        b = WriteBatch()
        with ref.write_batch() as rb:
            for k, v in ops[i : i + 50]:
                if v is None:
                    b.delete(k)
                    rb.delete(k)
                else:
                    b.put(k, v)
                    rb.put(k, v)
        db.write(b)
    db.close()
    ref.close()
    for n in os.listdir(ref_path):
        if n == "CURRENT" or n.startswith("MANIFEST"):
            os.remove(os.path.join(ref_path, n))
    os.remove(path / "MANIFEST")
    plyvel.repair_db(ref_path)
    repair(path, _opts())
    ref = plyvel.DB(ref_path)
    with DB.open(path, _opts()) as db:
        assert _contents(db) == dict(ref.iterator()) == model
    ref.close()
