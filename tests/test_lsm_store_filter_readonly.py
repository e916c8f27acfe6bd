"""The store filter of a read-only open (:mod:`bloomdb.lsm.readonly`, :mod:`bloomdb.lsm.store_filter`):
the saved ``STOREFILTER`` used when it covers every table the open holds, else one built in memory
by the read-only store's thread; never trusted before it covers, never written. Every test compares
every answer with a model (the live writer's too), and the folder's listing, sizes and mtimes
before and after the read-only store's life."""

from __future__ import annotations

import gc
import os
import random
import shutil

import pytest

from bloomdb.lsm import DB
from bloomdb.lsm import store_filter as SFM
from bloomdb.lsm.background import Background
from bloomdb.lsm.probe import layout as L

from lsm_helpers import store_filter_from_the_first_table  # noqa: F401 (a fixture)
from lsm_helpers import store_filter_options as _opts


pytestmark = pytest.mark.usefixtures("store_filter_from_the_first_table")


NKEYS = 3000


def _keys(extra=()):
    return ([b"k%05d" % i for i in range(NKEYS)] + [b"k%05dz" % i for i in range(0, NKEYS, 7)]
            + [b"n%05d" % i for i in range(0, 2000, 3)] + list(extra))


def _check(db, model):
    """Every key of the key space (present or not) by get and multi_get, against ``model``."""
    keys = _keys()
    for k in keys:
        assert db.get(k) == model.get(k), k
    want = [model.get(k) for k in keys]
    assert db.multi_get(keys) == want


def _fill(db, model, rng, n, prefix=b"k", nkeys=NKEYS):
    for i in range(n):
        k = prefix + b"%05d" % rng.randrange(nkeys)
        if rng.random() < 0.1:
            db.delete(k)
            model.pop(k, None)
        else:
            model[k] = b"v%d" % i
            db.put(k, model[k])


def _listing(path) -> dict:
    """Every file of the folder: ``(size, mtime_ns, bytes of STOREFILTER)``."""
    out = {}
    for name in sorted(os.listdir(path)):
        st = os.stat(os.path.join(path, name))
        body = open(os.path.join(path, name), "rb").read() if name == SFM.NAME else None
        out[name] = (st.st_size, st.st_mtime_ns, body)
    return out


def _closed_store(path, seed=0):
    """A store written and closed (its ``STOREFILTER`` saved) and its model."""
    rng = random.Random(seed)
    model: dict = {}
    with DB.open(path, _opts()) as db:
        _fill(db, model, rng, 4000)
        db.flush()
        db.wait_for_compactions()
    assert os.path.exists(os.path.join(path, SFM.NAME))
    return model


def _read_only_session(path, model, expect_file=None):
    """Open read-only, check every answer while the build (if any) runs and after it, and that it
    ends covering the version with the filter in use; returns the stats. ``expect_file``: True when
    the saved file must cover at once (no build), False when it must not."""
    db = DB.open(path, _opts(), read_only=True)
    try:
        sf = db._vs.store_filter
        if expect_file:
            assert sf.covers(db._version) and db._bg.builder is None
        elif expect_file is not None:
            assert db._bg.builder is not None  # (a small build may have ended already)
        _check(db, model)
        db.wait_for_compactions()  # the build thread's end (read-only: nothing else runs)
        s = db.stats()
        assert s["store_filter_covers"] and s["store_filter_bytes"] > 0
        _check(db, model)
        s = db.stats()
        assert s["store_filter_checks"] > 0 and s["store_filter_negatives"] > 0  # it answered
        return s
    finally:
        db.close()


def test_a_valid_file_is_used_at_once_and_nothing_is_written(tmp_path):
    path = str(tmp_path / "db")
    model = _closed_store(path)
    before = _listing(path)
    s = _read_only_session(path, model, expect_file=True)
    assert 0 < s["store_filter_bytes"] < len(before[SFM.NAME][2])  # the saved filter's own bytes
    assert _listing(path) == before


def test_beside_a_live_writer_the_stale_file_is_completed_in_memory(tmp_path):
    """The writer saved the file at its last close, then flushed and compacted more tables and keeps
    unflushed writes in its log: the read-only open does not trust the file (it misses tables),
    builds in memory, answers as the writer does (its replayed memtable included), writes nothing;
    a second read-only open does the same."""
    path = str(tmp_path / "db")
    model = _closed_store(path)
    rng = random.Random(3)
    with DB.open(path, _opts()) as w:
        _fill(w, model, rng, 3000, prefix=b"n", nkeys=2000)
        w.flush()
        w.wait_for_compactions()
        for i in range(0, 2000, 9):  # in the writer's log only (a memtable the reader replays)
            k = b"n%05d" % i
            model[k] = b"log"
            w.put(k, b"log")
        w.delete(b"k00003")
        model.pop(b"k00003", None)
        _check(w, model)  # the writer's answers (its reads may start a seek compaction: before the listing)
        w.wait_for_compactions()
        w._bg.wait_released()  # replaced versions dropped, their tables' files deleted: the folder is still now
        gc.collect()
        assert len(w._mem.latest) > 0
        before = _listing(path)
        for _ in range(2):
            _read_only_session(path, model, expect_file=False)
        assert _listing(path) == before
        _check(w, model)


@pytest.mark.parametrize("damage", ["missing", "header", "body", "short", "foreign"])
def test_a_missing_damaged_or_foreign_file_is_never_trusted(tmp_path, damage, monkeypatch):
    path = str(tmp_path / "db")
    model = _closed_store(path)
    f = os.path.join(path, SFM.NAME)
    if damage == "missing":
        os.remove(f)
    elif damage == "foreign":  # the file of another store with the same table numbers
        other = str(tmp_path / "other")
        _closed_store(other, seed=9)
        shutil.copy(os.path.join(other, SFM.NAME), f)
    else:
        data = bytearray(open(f, "rb").read())
        if damage == "header":
            data[9] ^= 0xFF
        elif damage == "body":
            data[-100] ^= 0x10
        else:
            data = data[: len(data) // 2]
        open(f, "wb").write(bytes(data))
    before = _listing(path)
    with monkeypatch.context() as m:  # no build: the file alone is what the open has
        m.setattr(Background, "start_read_only", lambda self: None)
        with DB.open(path, _opts(), read_only=True) as db:
            assert not db._vs.store_filter.covers(db._version)
            assert db._version.probe()[0][L.SF + L.R_FAM] == 0
            _check(db, model)
            assert db.stats()["store_filter_checks"] == 0
    _read_only_session(path, model, expect_file=False)
    assert _listing(path) == before


def test_a_read_only_build_is_sized_for_the_distinct_keys(tmp_path):
    """Overwrites make the tables' entries several times the distinct keys: a read-only build with
    no file holds at least ``bits_per_key`` per distinct key and no growth headroom (capacity at
    most the entries, from which the distinct estimate is taken when a file's filter exists)."""
    path = str(tmp_path / "db")
    model: dict = {}
    rng = random.Random(4)
    with DB.open(path, _opts(background_compaction=False)) as db:
        for _ in range(4):
            _fill(db, model, rng, 2500, nkeys=1000)
            db.flush()
    os.remove(os.path.join(path, SFM.NAME))
    with DB.open(path, _opts(), read_only=True) as db:
        db.wait_for_compactions()
        f, _ = db._vs.store_filter.state
        entries = SFM._entries(db._version)
        assert f.capacity == max(SFM.MIN_CAPACITY, entries)
        _check(db, model)


def test_close_during_a_build_stops_it_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(SFM, "STEP_ENTRIES", 50)
    path = str(tmp_path / "db")
    model = _closed_store(path)
    os.remove(os.path.join(path, SFM.NAME))
    before = _listing(path)
    for _ in range(3):
        db = DB.open(path, _opts(), read_only=True)
        assert db._bg.builder is not None
        assert db.get(b"k00001") == model.get(b"k00001")
        db.close()
        assert not db._bg.builder.is_alive()
    assert _listing(path) == before


def test_a_small_store_or_the_option_off_keeps_none(tmp_path, monkeypatch):
    path = str(tmp_path / "db")
    model = _closed_store(path)
    os.remove(os.path.join(path, SFM.NAME))
    before = _listing(path)
    with DB.open(path, _opts(store_filter=False), read_only=True) as db:
        assert db._vs.store_filter is None and db._bg.builder is None
        s = db.stats()
        assert s["store_filter_bytes"] == 0 and not s["store_filter_covers"]
        _check(db, model)
    monkeypatch.setattr(SFM, "MIN_ENTRIES", 1 << 30)
    with DB.open(path, _opts(), read_only=True) as db:
        assert db._bg.builder is None and db._vs.store_filter.state[0] is None
        _check(db, model)
        assert db.stats()["store_filter_checks"] == 0
    assert _listing(path) == before
