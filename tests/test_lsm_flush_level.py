"""A flushed memtable whose keys overlap nothing goes straight to a deeper level (LevelDB's
``PickLevelForMemTableOutput``, :func:`bloomdb.lsm.compaction.policy.flush_level`): the choice
itself, a sequential fill that makes no trivial move, a store killed after such flushes that
reopens with every key, and mixed fills (deep flushes beside L0 flushes and compactions) that
answer like a dict and keep every level's tables disjoint."""

from __future__ import annotations

import os
import random
import struct

import pytest

from bloomdb.bench.stress import run_and_kill
from bloomdb.lsm import DB, Options
from bloomdb.lsm.compaction.policy import TableShape, flush_level
from bloomdb.lsm.fs import RealFS


def _t(n, lo, hi, size=100):
    return TableShape(n, size, lo, hi)


def test_flush_level_choice():
    empty = [[] for _ in range(7)]
    assert flush_level(empty, b"a", b"z", 1000) == 2  # LevelDB's kMaxMemCompactLevel
    assert flush_level(empty, b"a", b"z", 1000, max_level=1) == 1
    l0 = [list(x) for x in empty]
    l0[0] = [_t(1, b"m", b"p")]
    assert flush_level(l0, b"a", b"n", 1000) == 0  # overlaps an L0 table
    assert flush_level(l0, b"q", b"z", 1000) == 2  # beside it: down
    l1 = [list(x) for x in empty]
    l1[1] = [_t(2, b"c", b"d")]
    assert flush_level(l1, b"a", b"c", 1000) == 0  # the next level overlaps: stays in L0
    l2 = [list(x) for x in empty]
    l2[2] = [_t(3, b"c", b"d")]
    assert flush_level(l2, b"d", b"e", 1000) == 1  # stops above the level it overlaps
    assert flush_level(l2, b"e", b"f", 1000) == 2
    gp = [list(x) for x in empty]
    gp[2] = [_t(4, b"a", b"b", 600), _t(5, b"c", b"d", 600)]
    assert flush_level(gp, b"a", b"z", 1000) == 0  # would overlap too many bytes two levels down
    assert flush_level(gp, b"a", b"z", 1200) == 1  # L2's 1200 bytes allowed under L1; L2 itself overlaps
    gp[3] = gp[2]
    gp[2] = []
    assert flush_level(gp, b"a", b"z", 1000) == 1  # L3's 1200 bytes under L2: stop at L1
    assert flush_level(gp, b"a", b"z", 1200) == 2


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("memtable_bytes", 8 << 10)
    kw.setdefault("table_bytes", 8 << 10)
    kw.setdefault("level0_trigger", 2)
    kw.setdefault("level1_bytes", 64 << 20)  # L2 never fills: no compaction in a sequential fill
    return Options(**kw)


def _disjoint_levels(db) -> bool:
    for level in db._version.levels[1:]:
        refs = sorted(level, key=lambda r: r.info.min_key)
        if any(a.info.max_key >= b.info.min_key for a, b in zip(refs, refs[1:])):
            return False
    return True


@pytest.mark.parametrize("threaded", [True, False])
def test_a_sequential_fill_flushes_into_l2_without_moves(tmp_path, threaded):
    keys = [b"k%07d" % i for i in range(6000)]
    with DB.open(tmp_path / "s", _opts(background_compaction=threaded)) as db:
        for k in keys:
            db.put(k, k * 4)
        db.flush()
        db.wait_for_compactions()
        shape = db.stats()["tables_per_level"]
        assert shape[0] == 0 and shape[1] == 0 and shape[2] >= 10, shape
        assert db.stats()["compactions"] == 0  # no trivial move, nothing rewritten
        assert _disjoint_levels(db)
    with DB.open(tmp_path / "s", _opts(background_compaction=threaded)) as db:
        assert db.stats()["tables_per_level"] == shape
        assert [k for k, _ in db.scan()] == keys
        assert all(db.get(k) == k * 4 for k in keys[::7])


def _seq_child(path, w):  # pragma: no cover - runs in a forked child, killed
    with DB.open(path, _opts()) as db:
        i = 0
        while True:
            db.put(b"k%07d" % i, b"v%07d" % i)
            i += 1
            if i % 50 == 0:
                os.write(w, struct.pack("<I", i))  # every key below i is acknowledged
            if i % 1500 == 0:
                db.flush()  # a table in L2 for sure before the kill


@pytest.mark.parametrize("delay", [0.3, 0.9])
def test_a_store_killed_after_deep_flushes_reopens_with_every_key(tmp_path, delay):
    path = str(tmp_path / "s")
    data = run_and_kill(lambda w: (_seq_child(path, w), os._exit(0)), delay)
    assert len(data) >= 4, "the child acknowledged nothing"
    acked = struct.unpack_from("<I", data, len(data) - 4)[0]
    with DB.open(path, _opts()) as db:
        got = dict(db.scan())
        assert all(got.get(b"k%07d" % i) == b"v%07d" % i for i in range(acked))
        assert all(db.get(b"k%07d" % i) == b"v%07d" % i for i in range(0, acked, 13))
        assert _disjoint_levels(db)
        deep = db.stats()["tables_per_level"]
    if acked >= 1500:
        assert sum(deep[1:]) >= 1, deep  # the kill came after tables went deep


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("threaded", [True, False])
def test_deep_flushes_beside_l0_flushes_and_compactions_answer_like_a_dict(tmp_path, seed, threaded):
    """Runs of ascending new keys (their flushes go deep) mixed with overwrites and deletions of
    older keys (L0 flushes, L0 -> L1 compactions merging across the gaps), small levels so
    compactions run beside the flushes; every level's tables stay disjoint."""
    rng = random.Random(seed)
    model = {}
    opts = _opts(level1_bytes=32 << 10, background_compaction=threaded)
    with DB.open(tmp_path / "s", opts) as db:
        nxt = 0
        for step in range(40):
            if rng.random() < 0.6:
                for _ in range(rng.randrange(50, 400)):
                    k = b"k%07d" % nxt
                    nxt += rng.randrange(1, 4)
                    model[k] = v = b"n%d" % step * rng.randrange(1, 8)
                    db.put(k, v)
            else:
                for _ in range(rng.randrange(20, 200)):
                    k = b"k%07d" % rng.randrange(max(1, nxt))
                    if rng.random() < 0.2:
                        db.delete(k)
                        model.pop(k, None)
                    else:
                        model[k] = v = b"o%d" % step * rng.randrange(1, 8)
                        db.put(k, v)
            if rng.random() < 0.3:
                db.flush()
        db.wait_for_compactions()
        assert _disjoint_levels(db)
        assert dict(db.scan()) == model
    with DB.open(tmp_path / "s", opts) as db:
        assert _disjoint_levels(db)
        assert dict(db.scan()) == model
        assert all(db.get(k) == v for k, v in model.items())
        assert all(db.get(b"k%07d" % i) == model.get(b"k%07d" % i) for i in range(0, nxt, 5))
