"""The store filter (:mod:`bloomdb.lsm.store_filter`): one filter over every table's keys, checked
first by a point lookup. It may hold keys no table holds any more, never miss one a table holds:
every test compares every answer with a model, with the filter in use (its negatives counted),
through flushes, compactions, rebuilds, reopens, crash images, damaged/missing/stale/foreign
files, and readers beside a flushing writer."""

from __future__ import annotations

import os
import random
import shutil
import threading

import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm import store_filter as SFM
from bloomdb.lsm.probe import layout as L

from lsm_helpers import store_filter_from_the_first_table  # noqa: F401 (a fixture)
from lsm_helpers import store_filter_options as _opts


pytestmark = pytest.mark.usefixtures("store_filter_from_the_first_table")


def _check(db, model, nkeys, extra=()):
    """Every key of the model's key space (present or not), a few never-written keys, by get and
    by multi_get, against ``model``."""
    keys = [b"k%05d" % i for i in range(nkeys)] + [b"k%05dz" % i for i in range(0, nkeys, 7)] + list(extra)
    for k in keys:
        assert db.get(k) == model.get(k), k
    assert db.multi_get(keys) == [model.get(k) for k in keys]


def _random_ops(db, model, rng, n, nkeys):
    for _ in range(n):
        r = rng.random()
        k = b"k%05d" % rng.randrange(nkeys)
        if r < 0.6:
            v = b"v%d" % rng.randrange(10**9)
            db.put(k, v)
            model[k] = v
        elif r < 0.75:
            db.delete(k)
            model.pop(k, None)
        elif r < 0.9:
            b = WriteBatch()
            for _ in range(rng.randrange(1, 30)):
                k = b"k%05d" % rng.randrange(nkeys)
                if rng.random() < 0.8:
                    v = b"b%d" % rng.randrange(10**9)
                    b.put(k, v)
                    model[k] = v
                else:
                    b.delete(k)
                    model.pop(k, None)
            db.write(b)
        elif r < 0.93:
            db.flush()
        elif r < 0.94:
            db.compact_range()


def _in_use(db) -> dict:
    s = db.stats()
    assert s["store_filter_bytes"] > 0
    return s


@pytest.mark.parametrize("background", [True, False])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_answer_matches_a_model_through_flushes_compactions_and_reopens(tmp_path, background, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "db")
    opts = _opts(background_compaction=background)
    model: dict = {}
    nkeys = 1500
    db = DB.open(path, opts)
    negatives = 0
    try:
        for _ in range(6):
            _random_ops(db, model, rng, 1500, nkeys)
            _check(db, model, nkeys)
            db.wait_for_compactions()
            s = _in_use(db)
            assert s["store_filter_covers"]
            _check(db, model, nkeys)
            s = db.stats()
            negatives = max(negatives, s["store_filter_negatives"])
            assert s["filter_checks"] == s["filter_useful"] + s["filter_positive"]
            if rng.random() < 0.5:
                db.close()
                db = DB.open(path, opts)
                _check(db, model, nkeys)
        assert negatives > 0  # the filter answered: the model check went through it
    finally:
        db.close()


def test_the_lookup_kernel_trusts_the_record(tmp_path):
    """The check is really made: a version whose directory carries a filter without a present key
    answers MISSING for it (the directory never gets such a record from the store)."""
    from bloomdb.filters.blocked import BlockedBloom
    from bloomdb.lsm.probe.directory import kernel_record, record_words

    with DB.open(str(tmp_path / "db"), _opts()) as db:
        for i in range(500):
            db.put(b"k%05d" % i, b"v")
        db.flush()
        ver = db._version
        p = ver.probe()
        assert p[0][L.SF + L.R_FAM] != 0
        assert db.get(b"k00007") == b"v"
        empty = BlockedBloom(1000)
        ver.directory.set_store_filter(*record_words(kernel_record(empty)))
        assert db.get(b"k00007") is None
        assert db.multi_get([b"k00007", b"k00008"]) == [None, None]


def test_a_flush_adds_before_install_and_readers_never_miss_a_key_just_written(tmp_path):
    path = str(tmp_path / "db")
    db = DB.open(path, _opts(memtable_bytes=2000))
    done = [0]
    stop = threading.Event()
    errors: list = []

    def reader(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            n = done[0]
            if n == 0:
                continue
            i = rng.randrange(n)
            k = b"w%07d" % i
            if db.get(k) != b"x%d" % i:
                errors.append(("get", i, n))
            if db.multi_get([k, k + b"?"]) != [b"x%d" % i, None]:
                errors.append(("multi_get", i, n))
            if db.get(b"w%07d?" % i) is not None:
                errors.append(("absent", i))

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(6000):
            db.put(b"w%07d" % i, b"x%d" % i)
            done[0] = i + 1
            if i % 1500 == 1499:
                db.flush()
    finally:
        stop.set()
        for t in threads:
            t.join()
    s = _in_use(db)
    db.close()
    assert not errors, errors[:5]
    assert s["store_filter_negatives"] > 0


def _fill(path, opts, n=3000, seed=0):
    rng = random.Random(seed)
    model = {}
    with DB.open(path, opts) as db:
        for i in range(n):
            k = b"k%05d" % rng.randrange(n)
            model[k] = b"v%d" % i
            db.put(k, model[k])
        db.flush()
        db.wait_for_compactions()
    return model


def _reopened_uses_it(path, opts, model, nkeys):
    with DB.open(path, opts) as db:
        _check(db, model, nkeys)
        db.wait_for_compactions()
        s = _in_use(db)
        assert s["store_filter_covers"]
        _check(db, model, nkeys)
        assert db.stats()["store_filter_negatives"] > 0


def test_the_file_is_written_at_close_and_a_reopen_covers_at_once(tmp_path):
    path = str(tmp_path / "db")
    opts = _opts()
    model = _fill(path, opts)
    assert os.path.exists(os.path.join(path, SFM.NAME))
    with DB.open(path, opts) as db:
        assert db._vs.store_filter.covers(db._version)  # from the file, before any background step
        _check(db, model, 3000)
        assert db.stats()["store_filter_negatives"] > 0


def test_a_failed_write_at_close_leaves_no_file_and_the_next_open_rebuilds(tmp_path, monkeypatch):
    from bloomdb.lsm import filter_file

    path = str(tmp_path / "db")
    opts = _opts()
    real = os.replace

    def refuse(src, dst):
        if os.path.basename(dst) == SFM.NAME:
            raise OSError("disk full")
        return real(src, dst)

    monkeypatch.setattr(filter_file.os, "replace", refuse)
    model = _fill(path, opts)
    assert not os.path.exists(os.path.join(path, SFM.NAME))
    assert not os.path.exists(os.path.join(path, SFM.NAME + ".tmp"))
    monkeypatch.setattr(filter_file.os, "replace", real)
    with DB.open(path, opts) as db:
        _check(db, model, 3000)
        db.wait_for_compactions()  # the flush thread's rebuild (steps run in that thread only)
        assert db._vs.store_filter.covers(db._version)
        _check(db, model, 3000)


@pytest.mark.parametrize("damage", ["missing", "header", "entries", "body", "short", "empty", "foreign_version"])
def test_a_missing_or_damaged_file_is_ignored_and_rebuilt(tmp_path, damage):
    path = str(tmp_path / "db")
    opts = _opts()
    model = _fill(path, opts)
    f = os.path.join(path, SFM.NAME)
    data = bytearray(open(f, "rb").read())
    if damage == "missing":
        os.remove(f)
    else:
        if damage == "header":
            data[9] ^= 0xFF
        elif damage == "entries":
            data[SFM._HEAD.size + 3] ^= 0x01
        elif damage == "body":
            data[-100] ^= 0x10
        elif damage == "short":
            data = data[: len(data) // 2]
        elif damage == "empty":
            data = bytearray()
        elif damage == "foreign_version":
            data[8] = 99
        open(f, "wb").write(bytes(data))
    with DB.open(path, opts) as db:
        assert not db._vs.store_filter.covers(db._version)  # never trusted
        _check(db, model, 3000)
    _reopened_uses_it(path, opts, model, 3000)


def test_a_stale_file_covers_only_the_tables_it_names(tmp_path):
    """The file of an earlier close does not cover tables written since (a crash before close
    leaves such a file): the reopened store scans them before the lookup uses the filter."""
    path = str(tmp_path / "db")
    opts = _opts()
    model = _fill(path, opts)
    old = open(os.path.join(path, SFM.NAME), "rb").read()
    with DB.open(path, opts) as db:
        for i in range(2000):
            k = b"n%05d" % i
            model[k] = b"new"
            db.put(k, b"new")
        db.flush()
        db.wait_for_compactions()
        live = {r.number for r in db._version.slots}
    open(os.path.join(path, SFM.NAME), "wb").write(old)
    with DB.open(path, opts) as db:
        f, cov = db._vs.store_filter.state
        assert f is not None and cov and not (live <= cov)
        _check(db, model, 3000, extra=[b"n%05d" % i for i in range(2000)])
    _reopened_uses_it(path, opts, model, 3000)


def test_a_file_of_another_store_covers_nothing(tmp_path):
    """Two stores with the same table numbers: the file of one is not trusted by the other."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    opts = _opts()
    _fill(a, opts, seed=1)
    model = _fill(b, opts, seed=2)
    shutil.copy(os.path.join(a, SFM.NAME), os.path.join(b, SFM.NAME))
    with DB.open(b, opts) as db:
        assert not db._vs.store_filter.covers(db._version)
        _check(db, model, 3000)


def test_a_store_written_without_it_is_covered_after_a_rebuild(tmp_path):
    path = str(tmp_path / "db")
    model = _fill(path, _opts(store_filter=False))
    assert not os.path.exists(os.path.join(path, SFM.NAME))
    _reopened_uses_it(path, _opts(), model, 3000)


def test_option_off_keeps_no_filter_and_is_validated(tmp_path):
    path = str(tmp_path / "db")
    with DB.open(path, _opts(store_filter=False)) as db:
        db.put(b"a", b"1")
        db.flush()
        s = db.stats()
        assert s["store_filter_bytes"] == 0 and not s["store_filter_covers"]
        assert db._version.probe()[0][L.SF + L.R_FAM] == 0
    assert not os.path.exists(os.path.join(path, SFM.NAME))
    with pytest.raises(InvalidArgument, match="store_filter"):
        Options(store_filter="yes").validated()


def test_a_small_store_keeps_none_until_its_tables_hold_min_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(SFM, "MIN_ENTRIES", 2000)
    path = str(tmp_path / "db")
    with DB.open(path, _opts()) as db:
        for i in range(1500):
            db.put(b"k%05d" % i, b"v")
        db.flush()
        db.wait_for_compactions()
        assert db.stats()["store_filter_bytes"] == 0 and db._vs.store_filter.state[0] is None
        for i in range(1500, 3000):
            db.put(b"k%05d" % i, b"v")
        db.flush()
        db.wait_for_compactions()
        s = _in_use(db)
        assert s["store_filter_covers"]
        model = {b"k%05d" % i: b"v" for i in range(3000)}
        _check(db, model, 3000)
        assert db.stats()["store_filter_negatives"] > 0
    assert os.path.exists(os.path.join(path, SFM.NAME))


def test_compaction_outputs_follow_their_inputs():
    f = frozenset({1, 2, 3})
    assert SFM._follow(f, {1, 2}, [7]) == {3, 7}  # inputs covered: outputs covered
    assert SFM._follow(f, {3, 4}, [8]) == {1, 2}  # an input not covered: its output is not
    assert SFM._follow(f, set(), [9]) == f  # a table added with nothing deleted: not covered here


def test_rebuilds_and_uncovered_tables_in_small_steps_beside_flushes(tmp_path, monkeypatch):
    """A tiny capacity and small steps: the filter is rebuilt bigger many times while flushes and
    compactions go on between the steps; every answer matches, and it ends covering."""
    monkeypatch.setattr(SFM, "MIN_CAPACITY", 64)
    monkeypatch.setattr(SFM, "STEP_ENTRIES", 40)
    monkeypatch.setattr(SFM, "GROW", 1.2)
    path = str(tmp_path / "db")
    rng = random.Random(5)
    model: dict = {}
    caps = set()
    with DB.open(path, _opts()) as db:
        for _ in range(8):
            _random_ops(db, model, rng, 800, 4000)
            caps.add(db._vs.store_filter.state[0].capacity)
            _check(db, model, 4000)
        db.wait_for_compactions()
        s = _in_use(db)
        assert s["store_filter_covers"] and s["store_filter_negatives"] > 0
        _check(db, model, 4000)
    assert len(caps) >= 2  # rebuilt bigger at least once while the ops ran


def test_crash_images_reopen_with_every_key(tmp_path):
    """SIGKILL cycles of the stress tool (acknowledged batches present after every kill), with the
    store filter on (the default), then the last image's answers against a scan of it."""
    from bloomdb.bench import stress

    problems: list[str] = []
    path = str(tmp_path / "db")
    bad = stress.kill_check(path, 12, seed=7, report=problems.append)
    assert bad == 0 and not problems, problems[:10]
    with DB.open(path, _opts()) as db:
        items = dict(db.scan())
        db.wait_for_compactions()
        assert db._vs.store_filter.covers(db._version)
        for k, v in items.items():
            assert db.get(k) == v
        assert db.multi_get(list(items)) == list(items.values())


def test_a_rebuild_is_sized_from_the_distinct_keys_not_the_entries():
    """``_capacity``: GROW x (the old filter's distinct estimate + the entries of the tables it does
    not cover), at most the entries; the entries alone (an upper bound) when there is no filter."""
    import numpy as np
    from types import SimpleNamespace as NS
    from bloomdb.filters.blocked import BlockedBloom

    f = BlockedBloom(20000, bits_per_key=12)
    h = np.random.default_rng(1).integers(0, 2**63, 5000, dtype=np.int64).astype(np.uint64)
    for _ in range(4):  # every key added 4 times (overwrites): count 20000, distinct 5000
        f.add_hashes(h)
    todo = [NS(table=NS(entries=700)), NS(table=NS(entries=300))]
    cap = SFM._capacity(f, todo, 100000, 2)
    assert 2 * 5900 <= cap <= 2 * 6200
    assert SFM._capacity(f, todo, 3000, 2) == 6000  # at most the entries
    assert SFM._capacity(None, [], 3000, 2) == 6000
    full = BlockedBloom(10, bits_per_key=12)
    full.on_full = "ignore"
    full.add_hashes(np.random.default_rng(2).integers(0, 2**63, 20000, dtype=np.int64).astype(np.uint64))
    assert full.estimated_count() == float("inf")  # every bit set
    assert SFM._capacity(full, [], 3000, 1) == 3000


def test_overwrites_do_not_grow_the_rebuilt_filter(tmp_path, monkeypatch):
    """A store whose keys are overwritten again and again (entries several times the distinct keys):
    the filter is rebuilt bigger while the distinct keys grow, sized from them, so it ends far below
    GROW x the entries a size from the entries would give; every answer still matches."""
    monkeypatch.setattr(SFM, "MIN_CAPACITY", 64)
    path = str(tmp_path / "db")
    model: dict = {}
    caps = []
    with DB.open(path, _opts(background_compaction=False, level0_trigger=500, level0_stop=1000)) as db:
        for r in range(6):
            for i in range(1000 * min(r + 1, 3)):  # 1000, 2000, then 3000 distinct keys, each round
                k = b"k%05d" % i
                model[k] = b"v%d" % r
                db.put(k, model[k])
            db.flush()
            caps.append(db._vs.store_filter.state[0].capacity)
        entries = SFM._entries(db._version)
        _check(db, model, 3000)
        assert db.stats()["store_filter_negatives"] > 0
    assert entries > 2 * 3000, entries  # the overwrites are still in the tables
    assert len(set(caps)) >= 2  # rebuilt bigger as the distinct keys grew
    assert caps[-1] <= SFM.GROW * 3000 * 1.2 < SFM.GROW * entries / 2, (caps, entries)
