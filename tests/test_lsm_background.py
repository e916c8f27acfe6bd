"""The background threads (issue 14 part 2, the write phases): a flush never queues behind a
compaction, flushes and compactions installed side by side keep every answer, and a failure in
either thread stops the writes."""

from __future__ import annotations

import os
import threading

import pytest

from bloomdb.errors import BloomDBError
from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm import background
from bloomdb.lsm.fs import RealFS
from lsm_helpers import ManifestHookFS


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("memtable_bytes", 16 << 10)
    kw.setdefault("table_bytes", 16 << 10)
    kw.setdefault("level0_trigger", 2)
    kw.setdefault("level1_bytes", 64 << 10)
    return Options(**kw)


def _held_compactions(monkeypatch):
    """Make every compaction wait for the returned event once it has started (``started``)."""
    release, started = threading.Event(), threading.Event()
    real = background.executor.run

    def held(task, version, ctx):
        started.set()
        assert release.wait(120), "the test never released the compaction"
        return real(task, version, ctx)

    monkeypatch.setattr(background.executor, "run", held)
    return release, started


def test_a_flush_does_not_wait_for_a_running_compaction(tmp_path, monkeypatch):
    release, started = _held_compactions(monkeypatch)
    db = DB.open(tmp_path / "s", _opts())
    try:
        i = 0
        while not started.is_set():  # fill until the compaction thread is inside a task
            db.put(b"k%06d" % i, b"v" * 100)
            i += 1
            if i % 200 == 0:
                db.flush()
            assert i < 200_000, "no compaction started"
        l0 = len(db._version.levels[0])
        db.put(b"after", b"x")
        done = threading.Event()
        t = threading.Thread(target=lambda: (db.flush(), done.set()), daemon=True)
        t.start()
        finished = done.wait(60)  # generous: this checks order, not speed
        still_running = not release.is_set()
        release.set()
        t.join(60)
        assert finished and still_running, "flush() waited for the compaction running beside it"
        assert len(db._version.levels[0]) >= 1  # the compaction held its lock: the flush went to L0
        db.wait_for_compactions()
        assert db.get(b"after") == b"x"
        assert all(db.get(b"k%06d" % j) == b"v" * 100 for j in range(0, i, 97))
    finally:
        release.set()
        db.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_flushes_and_compactions_side_by_side_answer_like_a_dict(tmp_path, seed):
    import random

    rng = random.Random(seed)
    model = {}
    with DB.open(tmp_path / "s", _opts()) as db:
        for i in range(6000):
            k = b"k%05d" % rng.randrange(3000)
            if rng.random() < 0.1:
                db.delete(k)
                model.pop(k, None)
            else:
                v = b"%d" % i * rng.randrange(1, 40)
                db.put(k, v)
                model[k] = v
        db.wait_for_compactions()
        assert dict(db.scan()) == model
    with DB.open(tmp_path / "s", _opts()) as db:
        assert dict(db.scan()) == model
        assert all(db.get(k) == v for k, v in model.items())


def test_a_failed_flush_stops_writes_while_a_compaction_runs(tmp_path, monkeypatch):
    release, started = _held_compactions(monkeypatch)
    db = DB.open(tmp_path / "s", _opts())
    try:
        i = 0
        while not started.is_set():
            db.put(b"k%06d" % i, b"v" * 100)
            i += 1
            if i % 200 == 0:
                db.flush()
        db.flush()  # nothing queued for the flush thread: only the flush below meets the fault
        boom = OSError(5, "injected flush failure")

        def fail(*a, **k):
            raise boom

        monkeypatch.setattr(db, "_write_table", fail)
        db.put(b"x", b"y")
        with pytest.raises(BloomDBError):
            db.flush()
        with pytest.raises(BloomDBError):
            for j in range(100_000):
                db.put(b"z%06d" % j, b"v" * 100)
        assert db.get(b"x") == b"y"  # reads keep working
    finally:
        release.set()
        db.close()


class _HeldManifestFS(ManifestHookFS):
    """Manifest writes (replaces or appends) wait for ``release`` once ``armed`` (and say so in
    ``entered``)."""

    def __init__(self):
        super().__init__()
        self.armed, self.entered, self.release = False, threading.Event(), threading.Event()

    def before_manifest_write(self, path):
        if self.armed:
            self.entered.set()
            assert self.release.wait(120), "the test never released the manifest write"


def test_writes_and_reads_go_on_while_a_flush_writes_the_manifest(tmp_path):
    fs = _HeldManifestFS()
    db = DB.open(tmp_path / "s", _opts(fs=fs, memtable_bytes=1 << 20))
    try:
        for i in range(300):
            db.put(b"k%04d" % i, b"v%04d" % i)
        fs.armed = True
        t = threading.Thread(target=db.flush, daemon=True)
        t.start()
        assert fs.entered.wait(60)
        done = threading.Event()

        def writer():
            db.put(b"during", b"the manifest write")
            db.write(WriteBatch().put(b"batch", b"b"))
            done.set()

        w = threading.Thread(target=writer, daemon=True)
        w.start()
        finished = done.wait(60)  # generous: this checks that the writer is not blocked, not speed
        fs.armed = False
        fs.release.set()
        t.join(60)
        w.join(60)
        assert finished, "a put waited for the manifest write of a flush"
        assert db.get(b"during") == b"the manifest write" and db.get(b"k0007") == b"v0007"
    finally:
        fs.release.set()
        db.close()
    with DB.open(tmp_path / "s", _opts()) as db:
        assert db.get(b"during") == b"the manifest write" and db.get(b"batch") == b"b"
        assert len(dict(db.scan())) == 302


def test_reservations_running_out_while_edits_are_written(tmp_path, monkeypatch):
    """Tiny reservations: memtable switches and compaction outputs need manifest writes of their
    own while flushes and compactions write theirs; every number stays provably the store's."""
    import random

    from bloomdb.lsm import version_set

    monkeypatch.setattr(version_set, "RESERVE", 2)
    rng = random.Random(7)
    model = {}
    with DB.open(tmp_path / "s", _opts()) as db:
        for i in range(5000):
            k = b"k%05d" % rng.randrange(2500)
            v = b"%d" % i * rng.randrange(1, 40)
            db.put(k, v)
            model[k] = v
        db.wait_for_compactions()
    with DB.open(tmp_path / "s", _opts()) as db:
        assert dict(db.scan()) == model
    names = set(os.listdir(tmp_path / "s"))
    assert not any(n.endswith(".tmp") for n in names)


@pytest.mark.parametrize("seed", range(6))
def test_the_flush_sorts_a_memtable_like_the_per_entry_reference(seed):
    """``MemTable.table_arrays`` lays out in one kernel call (sort, key gather, trailers, value
    offsets) exactly what sorting the entries one by one in Python gives."""
    import random

    import numpy as np

    from bloomdb.lsm.memtable import MemTable

    rng = random.Random(seed)
    m = MemTable()
    for i in range(rng.randrange(1, 2000)):
        k = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
        v = None if rng.random() < 0.25 * (seed % 2) else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        m.add(i + 1, k, v, False)
    ref = sorted((k, *m.get(k, None)) for k in m.latest)
    kd, ko, tr, vd, vo, vidx = m.table_arrays(indexed=True)
    got = [(kd[ko[i] : ko[i + 1]].tobytes(), int(tr[i]) >> 8,
            vd[vo[vidx[i]] : vo[vidx[i] + 1]].tobytes() if int(tr[i]) & 0xFF else None) for i in range(len(tr))]
    assert got == ref
    kd2, ko2, tr2, vd2, vo2 = m.table_arrays()
    assert np.array_equal(kd2, kd) and np.array_equal(ko2, ko) and np.array_equal(tr2, tr)
    assert [vd2[vo2[i] : vo2[i + 1]].tobytes() for i in range(len(tr))] == [v or b"" for _, _, v in ref]


def test_the_tables_a_compaction_replaced_are_dropped_in_the_release_thread_and_by_close(tmp_path):
    # dropping the replaced version unmaps its tables (a system call that gives the GIL up and a
    # wait to take it back): done in the release thread, never in the compacting thread; close
    # waits for it, so no input table is left mapped after close
    import weakref

    from lsm_helpers import small_options

    dropped_in = []
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=False))
    try:
        for i in range(3000):
            db.put(b"k%06d" % (i * 7919 % 3000), b"v" * 40)
        db.flush()
        olds = {r.number for r in db._version.all_refs()}
        assert olds
        for r in db._version.all_refs():  # no strong reference kept: the version's drop is the last
            weakref.finalize(r.table, lambda: dropped_in.append(threading.current_thread().name))
        del r
        db.compact_range()  # inline store: the compaction runs in this thread
        assert not {r.number for r in db._version.all_refs()} & olds
    finally:
        db.close()
    assert dropped_in and all(n.startswith("bloomdb-lsm-release") for n in dropped_in), set(dropped_in)
