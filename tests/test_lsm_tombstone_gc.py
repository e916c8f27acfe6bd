"""Tombstones do not linger (issue 15): a table whose entries are mostly point deletions, or that
carries range tombstones, is compacted once nothing older needs them (deletion-triggered
compaction, :mod:`bloomdb.lsm.compaction.policy`): the tombstones and the data they hide go, and
every read still answers as a dict (and LevelDB) would."""

from __future__ import annotations

import random

import pytest

from bloomdb.lsm import DB, Options
from bloomdb.lsm.compaction.policy import TableShape, pick
from bloomdb.lsm.fs import RealFS


def _opts(**kw):
    base = dict(fs=RealFS(fsync=False), memtable_bytes=64 << 10,
                table_bytes=32 << 10, level1_bytes=256 << 10, block_size=1024)
    base.update(kw)
    return Options(**base)


def _tables(db):
    return [r for r in db._version.all_refs()]


def _shape(db):
    refs = _tables(db)
    return (sum(r.table.meta.entries for r in refs), sum(r.table.meta.deletions for r in refs),
            sum(len(r.table.meta.range_dels) for r in refs), sum(r.info.file_size for r in refs))


def _filled(path, n=3000, **kw):
    db = DB.open(path, _opts(**kw))
    model = {}
    for i in range(n):
        k, v = b"k%06d" % i, b"v%06d" % i * 8
        db.put(k, v)
        model[k] = v
    db.compact_range()
    return db, model


def _check(db, model):
    assert dict(db.scan()) == model
    keys = sorted(model) + [b"k%06d" % i for i in range(0, 4000, 7)]
    assert db.multi_get(keys) == [model.get(k) for k in keys]
    assert all(db.get(k) == model.get(k) for k in keys[::13])


def test_point_deletions_are_dropped_with_the_data_they_hide(tmp_path):
    db, model = _filled(tmp_path / "s")
    _, _, _, before = _shape(db)
    for i in range(0, 3000):
        if i % 10:
            db.delete(b"k%06d" % i)
            model.pop(b"k%06d" % i)
    db.flush()  # one L0 table of deletions: below every trigger of the size policy
    db.wait_for_compactions()
    entries, dels, _, size = _shape(db)
    assert dels == 0 and entries == len(model) == 300  # fails before: 2700 deletions lingered
    assert size < before / 4
    _check(db, model)
    db.close()
    with DB.open(tmp_path / "s", _opts()) as db:
        _check(db, model)


def test_range_tombstones_are_dropped_with_what_they_cover(tmp_path):
    db, model = _filled(tmp_path / "s")
    db.delete_range(b"k000100", b"k002900")
    for i in range(100, 2900):
        model.pop(b"k%06d" % i)
    db.flush()
    db.wait_for_compactions()
    entries, dels, rdels, _ = _shape(db)
    assert rdels == 0 and dels == 0 and entries == len(model) == 200  # fails before: nothing reclaimed
    _check(db, model)


def test_a_live_snapshot_keeps_the_tombstones_until_it_is_released(tmp_path):
    db, model = _filled(tmp_path / "s")
    old = dict(model)
    snap = db.snapshot()
    for i in range(3000):
        if i % 4:
            db.delete(b"k%06d" % i)
            model.pop(b"k%06d" % i)
    db.flush()
    db.wait_for_compactions()
    assert _shape(db)[1] > 0  # the snapshot still reads the deleted values
    assert dict(db.scan(snapshot=snap)) == old and dict(db.scan()) == model
    snap.close()
    db.wait_for_compactions()  # the released snapshot lets the compaction run (no hang)
    assert _shape(db)[1] == 0
    _check(db, model)


def test_inline_store_reclaims_at_its_next_compaction(tmp_path):
    db, model = _filled(tmp_path / "s", background_compaction=False)
    with db.snapshot():
        db.delete_range(b"k000000", b"k002000")
        db.flush()
    for i in range(2000):
        model.pop(b"k%06d" % i)
    for i in range(3000, 4000):  # the writes that fill the memtable run compactions inline
        db.put(b"k%06d" % i, b"x" * 100)
        model[b"k%06d" % i] = b"x" * 100
    assert _shape(db)[2] == 0
    _check(db, model)
    db.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_random_deletes_and_range_deletes_against_leveldb(tmp_path, seed):
    plyvel = pytest.importorskip("plyvel")
    rng = random.Random(seed)
    ref = plyvel.DB(str(tmp_path / "ldb"), create_if_missing=True)
    db = DB.open(tmp_path / "s", _opts())
    for _ in range(6):
        for _ in range(800):
            k = b"k%05d" % rng.randrange(5000)
            r = rng.random()
            if r < 0.5:
                v = rng.randbytes(30)
                db.put(k, v)
                ref.put(k, v)
            else:
                db.delete(k)
                ref.delete(k)
        a = rng.randrange(5000)
        lo, hi = b"k%05d" % a, b"k%05d" % (a + rng.randrange(1, 800))
        db.delete_range(lo, hi)
        with ref.write_batch() as wb:
            for k in list(ref.iterator(start=lo, stop=hi, include_value=False)):
                wb.delete(k)
        db.flush()
        db.wait_for_compactions()
        assert list(db.scan()) == list(ref.iterator())
    live = len(list(ref.iterator()))
    entries, dels, rdels, _ = _shape(db)
    assert rdels == 0 and entries - dels == live and dels * 2 < entries
    db.close()
    ref.close()


def test_policy_never_moves_a_tombstone_table_trivially_and_skips_the_last_level():
    t = TableShape(7, 100, b"a", b"b", entries=10, deletions=9, range_dels=0, max_seq=50)
    levels = [[], [], [t], [], [], [], []]
    task = pick(levels, {}, 4, 10 ** 9, 10, smallest_snapshot=60)
    assert task.level == 2 and task.inputs == (7,) and not task.trivial_move and task.bottom
    assert pick(levels, {}, 4, 10 ** 9, 10, smallest_snapshot=40) is None  # a snapshot needs them
    assert pick(levels, {}, 4, 10 ** 9, 10) is None  # no snapshot bound given: size policy only
    assert pick([[], [], [], [], [], [], [t]], {}, 4, 10 ** 9, 10, smallest_snapshot=60) is None
    few = TableShape(8, 100, b"a", b"b", entries=10, deletions=4, max_seq=50)
    assert pick([[], [few], [], [], [], [], []], {}, 4, 10 ** 9, 10, smallest_snapshot=60) is None
