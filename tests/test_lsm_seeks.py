"""Seek-triggered compaction (LevelDB's ``allowed_seeks``, :mod:`bloomdb.lsm.probe.seeks`): reads
that keep meeting a table they do not need charge it, and a table charged often enough is
compacted into the next level; answers never change."""

from __future__ import annotations

import pytest

from bloomdb.bench import stress
from bloomdb.lsm import DB, Options
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.probe import seeks

from lsm_helpers import small_options

VALUE = b"v" * 20


def _l0_store(path, tables=3, n=6000, **kw) -> dict:
    """A store whose ``tables`` L0 tables each hold every ``tables``-th key of ``n`` (so each
    covers the whole key range) and nothing below; returns the model."""
    model = {}
    with DB.open(path, Options(fs=RealFS(fsync=False), max_flush_level=0, memtable_bytes=1 << 20, **kw)) as db:
        for t in range(tables):
            for i in range(t, n, tables):
                k = b"k%08d" % i
                db.put(k, VALUE + k)
                model[k] = VALUE + k
            db.flush()
        db.wait_for_compactions()
        assert db.stats()["tables_per_level"][:2] == [tables, 0]
    return model


def test_missing_reads_compact_the_l0_tables_they_keep_meeting(tmp_path):
    """Every missing key in range meets 3 L0 tables (3 filter checks); after the newest one's
    budget is spent the L0 tables go to L1, and a missing key costs one check."""
    p = str(tmp_path / "db")
    model = _l0_store(p)
    with DB.open(p, Options(fs=RealFS(fsync=False), max_flush_level=0)) as db:
        before = db.stats()
        for i in range(seeks.MIN_SEEKS + 50):
            assert db.get(b"k%08d." % (i * 7)) is None
        db.wait_for_compactions()
        st = db.stats()
        assert st["tables_per_level"][0] == 0 and st["tables_per_level"][1] >= 1
        assert st["compactions"] > before["compactions"]
        checks = st["filter_checks"]
        for i in range(100):
            assert db.get(b"k%08d." % (i * 11)) is None
        assert db.stats()["filter_checks"] - checks <= 100 * len([n for n in st["tables_per_level"] if n])
        assert dict(db.scan()) == model
        assert db.multi_get(list(model)[:500]) == [model[k] for k in list(model)[:500]]


def test_only_a_read_that_meets_two_tables_charges_the_first(tmp_path):
    p = str(tmp_path / "db")
    _l0_store(p, tables=2)
    # tables opened by the open (filter_file=False): a table opened lazily by a false positive is
    # read in Python, which resumes the kernel after it without charging it for that read
    with DB.open(p, Options(fs=RealFS(fsync=False), max_flush_level=0, filter_file=False)) as db:
        keys = [b"k%08d." % i for i in range(60)]
        for k in keys[:4]:  # first reads load both tables' filters (they may charge: measured below)
            db.get(k)
        ver = db._state[2]
        newest, older = (r.table.seek_budget[0] for r in ver.slots)
        # the loop below must not spend the budget: a seek compaction would then install a new
        # version mid-loop and the count would depend on when the background thread ran
        assert newest > len(keys), newest
        for k in keys:
            db.get(k)  # missing: both tables met (a filter check, or a false positive's read), the newest charged
            db.get(b"a" + k)  # below every table's range: no table met, nothing charged
        db.multi_get(keys)  # the batch read charges nothing
        after = [r.table.seek_budget[0] for r in ver.slots]
        met_both = sum(all(r.info.min_key <= k <= r.info.max_key for r in ver.slots) for k in keys)
        assert met_both == len(keys) - 1  # k00000000. is below the newest table (odd keys)
        assert after == [newest - met_both, older]
        assert older == seeks.allowed_seeks(ver.slots[1].table.file_size)


def test_a_single_table_is_never_charged(tmp_path):
    p = str(tmp_path / "db")
    _l0_store(p, tables=1)
    with DB.open(p, Options(fs=RealFS(fsync=False), max_flush_level=0)) as db:
        for i in range(300):
            assert db.get(b"k%08d." % i) is None
        (ref,) = db._state[2].slots
        assert ref.table.seek_budget[0] == seeks.allowed_seeks(ref.table.file_size)
        assert db.stats()["tables_per_level"][0] == 1


def _one_seek_store(tmp_path, monkeypatch):
    """``(model, path)`` of a 2-table L0 store whose tables' seek budgets are one charge each."""
    monkeypatch.setattr(seeks, "MIN_SEEKS", 1)
    monkeypatch.setattr(seeks, "BYTES_PER_SEEK", 1 << 40)
    p = str(tmp_path / "db")
    return _l0_store(p, tables=2), p


def _read_filters(db) -> None:
    """Every table's filter read without a lookup (a table's first read hands over to Python and
    charges nothing), so the next lookups charge at once."""
    ver = db._state[2]
    ver.probe()
    for s in range(len(ver.slots)):
        ver.directory.check(s, b"k")


@pytest.mark.parametrize("present", [True, False])
def test_the_read_that_spends_a_budget_still_answers(tmp_path, monkeypatch, present):
    """The lookup that brings a budget to zero returns its status flagged; the answer (a value
    found in the older table, or missing) is the same as without the flag."""
    model, p = _one_seek_store(tmp_path, monkeypatch)
    with DB.open(p, Options(fs=RealFS(fsync=False), max_flush_level=0)) as db:
        _read_filters(db)
        k = b"k%08d" % 4 if present else b"k%08d." % 4  # key 4: in the older table only
        assert db.get(k) == model.get(k)
        db.wait_for_compactions()
        assert db.stats()["tables_per_level"][0] == 0
        assert db.get(k) == model.get(k)


def test_a_read_only_store_never_compacts(tmp_path, monkeypatch):
    monkeypatch.setattr(seeks, "MIN_SEEKS", 1)
    monkeypatch.setattr(seeks, "BYTES_PER_SEEK", 1 << 40)
    p = str(tmp_path / "db")
    model = _l0_store(p)
    with DB.open(p, Options(fs=RealFS(fsync=False), max_flush_level=0), read_only=True) as db:
        for i in range(50):
            assert db.get(b"k%08d." % i) is None
            k = b"k%08d" % i
            assert db.get(k) == model[k]
        assert db.stats()["tables_per_level"][:2] == [3, 0]


@pytest.mark.parametrize("bg", [False, True])
def test_model_with_a_seek_compaction_on_nearly_every_read(tmp_path, monkeypatch, bg):
    """The store against a dict (gets, snapshot gets, multi_get, scans, deletes, range deletes)
    while tables are compacted after one or two wasted seeks each."""
    monkeypatch.setattr(seeks, "MIN_SEEKS", 2)
    monkeypatch.setattr(seeks, "BYTES_PER_SEEK", 1 << 40)
    problems: list[str] = []
    bad = stress.model_check(str(tmp_path / "db"), 8000, 21 + bg, report=problems.append,
                             options=small_options(background_compaction=bg, max_flush_level=0))
    assert bad == 0, problems[:10]


def test_a_spent_budget_is_reported_again_every_64_charges(tmp_path):
    """A table passed over (the store compacts one spent table at a time) is reported again
    later, as LevelDB re-reports it on every charge; only every 64th charge, so a read path
    never takes the slow step on each get."""
    from bloomdb.lsm.probe import _get_kernels as G, layout

    p = str(tmp_path / "db")
    _l0_store(p, tables=2)
    with DB.open(p, Options(fs=RealFS(fsync=False), max_flush_level=0), read_only=True) as db:
        key = b"k%08d." % 101  # in both tables' ranges; missing
        for _ in range(3):
            db.get(key)  # filters read, blocks checked: the kernel answers alone from now on
        ver = db._state[2]
        d = ver.refresh_probe()[0]
        ver.slots[0].table.seek_budget[0] = 1
        flags = []
        for _ in range(200):
            d[layout.SEEK_DUE] = 0
            st = G.lookup(d, key, G.NEWEST, 0)[0]
            flags.append(bool(st & G.SEEK))
            assert st & ~G.SEEK == G.MISSING
        assert [i for i, f in enumerate(flags) if f] == [0, 64, 128, 192]
        assert ver.slots[1].table.seek_budget[0] == seeks.allowed_seeks(ver.slots[1].table.file_size)


def test_a_read_that_spends_a_budget_never_waits_for_the_store_lock(tmp_path, monkeypatch):
    """The hand-over of a spent table to the compaction side does not block a get while another
    thread holds the store's lock (a writer waiting for room, an install): the report is dropped
    and made again by a later read (every 64 charges), which schedules the compaction."""
    import threading

    model, p = _one_seek_store(tmp_path, monkeypatch)
    with DB.open(p, Options(fs=RealFS(fsync=False), max_flush_level=0)) as db:
        _read_filters(db)
        held, release = threading.Event(), threading.Event()

        def hold():
            with db._lock:
                held.set()
                release.wait(30)

        t = threading.Thread(target=hold)
        t.start()
        try:
            held.wait(10)
            answers = []
            reader = threading.Thread(target=lambda: answers.extend(db.get(b"k%08d." % i) for i in range(40)))
            reader.start()
            reader.join(10)
            assert not reader.is_alive(), "a get blocked on the store's lock"
            assert answers == [None] * 40
            assert db._bg.seek_due is None  # dropped while the lock was held
        finally:
            release.set()
            t.join()
        for i in range(200):  # later reports reach the compaction side
            assert db.get(b"k%08d." % (i % 40)) is None
        db.wait_for_compactions()
        assert db.stats()["tables_per_level"][0] == 0
        assert dict(db.scan()) == model
