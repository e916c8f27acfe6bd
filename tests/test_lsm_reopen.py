"""Reopening a store cheaply (issue 14's "right after reopen"): a store closed cleanly reopens by
reading -- its newest log is appended to again (LevelDB's ``reuse_logs``), no table, manifest or
fsync is written -- and its background thread starts only when there is work. Every write stays
as durable as before: acknowledged writes survive a kill after any number of reopens, a torn log
is never appended to."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from bloomdb.lsm import DB, Options
from bloomdb.lsm.fs import FaultyFS

SRC = os.path.join(os.path.dirname(__file__), "..", "src")


def _files(p) -> dict[str, bytes]:
    """Every file of the store but its lock, with its bytes."""
    return {n: (p / n).read_bytes() for n in sorted(os.listdir(p)) if n != "LOCK"}


def _count_fsyncs(monkeypatch) -> list:
    calls: list = []
    real = os.fsync

    def counting(fd):
        calls.append(fd)
        return real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_a_clean_reopen_writes_and_syncs_nothing(tmp_path, monkeypatch):
    p = tmp_path / "db"
    with DB.open(p) as db:
        for i in range(500):
            db.put(b"k%05d" % i, b"v%d" % i)
        db.delete(b"k00003")
    before = _files(p)
    calls = _count_fsyncs(monkeypatch)
    db = DB.open(p)
    try:
        assert calls == []  # used to be 4: two manifest writes at every open
        assert _files(p) == before  # no new log, no table, no manifest
        assert db.get(b"k00007") == b"v7" and db.get(b"k00003") is None
        db.put(b"new", b"x", sync=True)  # a durable write still syncs its log
        assert calls
    finally:
        db.close()
    with DB.open(p) as db:
        assert db.get(b"new") == b"x" and db.get(b"k00499") == b"v499" and db.get(b"k00003") is None
        assert sorted(n for n in os.listdir(p) if n.endswith(".log")) == [n for n in before if n.endswith(".log")]


def test_a_torn_log_is_not_appended_to(tmp_path):
    """A log whose last record is torn (nonzero bytes after the last intact record) is replayed
    into a table and a new log is started, as before: records appended after the torn bytes
    would read as damage in the middle of the log."""
    p = tmp_path / "db"
    with DB.open(p) as db:
        for i in range(100):
            db.put(b"k%03d" % i, b"v%d" % i)
        log = db._log.path
        end = db._log.bytes
    with open(log, "r+b") as f:  # half a record after the last one (a write cut by a crash)
        f.seek(end)
        f.write(b"\x07\x00\x00\x00\x40\x00\x00\x00torn")
    with DB.open(p) as db:
        assert db._log.path != log
        assert db.get(b"k042") == b"v42"
        db.put(b"after", b"1")
    with DB.open(p) as db:  # reads its logs without a CorruptionError
        assert db.get(b"after") == b"1" and db.get(b"k099") == b"v99"


@pytest.mark.parametrize("inline", [False, True])
def test_a_big_log_is_flushed_at_reopen_not_appended_to(tmp_path, inline):
    """A log with many writes is not replayed at every open: its writes go to a table (by the
    flush thread while the store serves reads, or inline) and a new log is started."""
    p = tmp_path / "db"
    o = Options(memtable_bytes=64 << 10, background_compaction=not inline)
    with DB.open(p, Options(memtable_bytes=4 << 20)) as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v" * 60)
        log = db._log.path
    with DB.open(p, o) as db:
        assert db.get(b"k01999") == b"v" * 60  # served at once, before or after the flush
        db.wait_for_compactions()
        assert db._log.path != log  # switched out (by the flush thread when there is one)
        assert not os.path.exists(log) and sum(db.stats()["tables_per_level"]) >= 1
        db.put(b"after", b"1")
    with DB.open(p, o) as db:
        assert db.get(b"after") == b"1" and db.get(b"k00000") == b"v" * 60


def test_a_big_log_is_switched_out_by_the_flush_thread_not_by_the_open(tmp_path, monkeypatch):
    """The open of a store whose log holds many writes syncs and writes nothing: the flush
    thread switches that memtable out (a new log, one manifest write) and flushes it. Until it
    does, writes are appended to the replayed log, and a crash image taken then (the folder
    copied while the store is open, its threads held back) reopens with every write."""
    import shutil

    from bloomdb.lsm.background import Background

    p = tmp_path / "db"
    with DB.open(p, Options(memtable_bytes=4 << 20)) as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v" * 60)
        log = db._log.path
    before = _files(p)
    start = Background.ensure_started
    gate = threading.Event()
    monkeypatch.setattr(Background, "ensure_started", lambda self: start(self) if gate.is_set() else None)
    calls = _count_fsyncs(monkeypatch)
    db = DB.open(p, Options(memtable_bytes=1 << 20))  # ~230 KB of writes: big (> 1/16) but not full
    try:
        assert calls == [] and _files(p) == before  # no new log, no table, no manifest at open
        assert db._switch_due is db._mem and db._imm is None
        db.put(b"after-open", b"1", sync=True)  # into the replayed log
        assert db._log.path == log
        shutil.copytree(p, tmp_path / "image", ignore=shutil.ignore_patterns("LOCK"))
        gate.set()
        db.wait_for_compactions()  # starts the threads: the switch, then the flush
        assert db._log.path != log and not os.path.exists(log)
        assert sum(db.stats()["tables_per_level"]) >= 1 and len(db._mem) == 0 and db._switch_due is None
        db.put(b"after-switch", b"2")
    finally:
        gate.set()
        db.close()
    monkeypatch.undo()
    for folder, want in ((p, [b"1", b"2"]), (tmp_path / "image", [b"1", None])):
        with DB.open(folder) as db:
            assert [db.get(b"after-open"), db.get(b"after-switch")] == want
            assert all(db.get(b"k%05d" % i) == b"v" * 60 for i in range(0, 2000, 7))


def test_plain_append_logs_are_resumed_too(tmp_path):
    """A file system without mapped logs (here the fault injector, with no fault) appends to the
    log again when its records end at the file's end."""
    p = tmp_path / "db"
    fs = FaultyFS()
    with DB.open(p, Options(fs=fs)) as db:
        for i in range(50):
            db.put(b"k%02d" % i, b"v%d" % i, sync=i % 7 == 0)
        log = db._log.path
    for round_ in range(3):
        with DB.open(p, Options(fs=fs)) as db:
            assert db._log.path == log
            assert db.get(b"k49") == b"v49"
            db.put(b"r%d" % round_, b"x")
    with DB.open(p, Options(fs=fs)) as db:
        assert [db.get(b"r%d" % i) for i in range(3)] == [b"x"] * 3
    assert fs.faults == 0


_CHILD = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from bloomdb.lsm import DB
db = DB.open(sys.argv[2])
r, size = int(sys.argv[3]), int(sys.argv[4])
for i in range(200):
    db.put(b"r%02d-%03d" % (r, i), b"v%d-" % i + bytes(size), sync=(i == 199))
print("acked", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("size", [10, 1000], ids=["appended-to", "flushed-at-open"])
def test_acknowledged_writes_survive_kills_across_reopens(tmp_path, size):
    """Killed writers after cheap reopens, again and again: every acknowledged write of every
    round is there after each kill (the child's last put is synced; SIGKILL keeps the rest, which
    reached the OS). Small writes: the log is appended to at every open; big ones: the log the
    last child left is flushed by the next open's flush thread (which a kill may interrupt)."""
    p = str(tmp_path / "db")
    DB.open(p).close()
    for r in range(6):
        out = subprocess.run([sys.executable, "-c", _CHILD, SRC, p, str(r), str(size)], capture_output=True, timeout=120)
        assert out.returncode == -signal.SIGKILL and b"acked" in out.stdout, out.stderr[-2000:]
        with DB.open(p) as db:
            for rr in range(r + 1):
                got = [db.get(b"r%02d-%03d" % (rr, i)) for i in (0, 100, 199)]
                assert got == [b"v%d-" % i + bytes(size) for i in (0, 100, 199)], (r, rr)


def _lsm_threads(p) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in (f"bloomdb-lsm:{p}", f"bloomdb-lsm-flush:{p}")]


def test_the_background_thread_starts_with_the_first_work(tmp_path):
    p = str(tmp_path / "db")
    o = Options(memtable_bytes=32 << 10)
    with DB.open(p, o) as db:
        for i in range(20):  # few: appended to at the reopen (memtable_bytes // RESUME_SHARE)
            db.put(b"k%03d" % i, b"v")
    with DB.open(p, o) as db:
        assert _lsm_threads(p) == []  # nothing to flush or compact: no thread yet
        assert db.get(b"k005") == b"v"
        for i in range(2000):  # fills memtables: the first switch starts the thread
            db.put(b"w%05d" % i, b"x" * 40)
        assert len(_lsm_threads(p)) == 2  # the flush thread and the compaction thread
        db.wait_for_compactions()
        assert sum(db.stats()["tables_per_level"]) >= 1
        assert db.get(b"w01999") == b"x" * 40
    assert _lsm_threads(p) == []
    with DB.open(p, o) as db:  # closed before any work: nothing to join
        pass


@pytest.mark.parametrize("inline", [False, True])
def test_wait_and_flush_work_before_the_thread_started(tmp_path, inline):
    p = str(tmp_path / "db")
    o = Options(background_compaction=not inline)
    with DB.open(p, o) as db:
        db.put(b"a", b"1")
    with DB.open(p, o) as db:
        db.wait_for_compactions()
        db.flush()  # wakes the thread (threaded) and waits for the flush
        assert sum(db.stats()["tables_per_level"]) == 1
        assert db.get(b"a") == b"1"


def test_the_log_reader_fast_path_decodes_like_the_general_one():
    """Single puts are decoded inline by :func:`wal.read_log`; every record must read back as
    the general decoder reads it (empty keys and values, deletes, batches, range deletes), and
    the clean end is reported after the last record."""
    import random

    from bloomdb.lsm import wal

    rng = random.Random(5)
    recs, want, seq = [], [], 1
    for _ in range(400):
        kind = rng.choice(["put", "put", "delete", "batch", "range"])
        k = rng.randbytes(rng.choice([0, 1, 16, 300]))
        v = rng.randbytes(rng.choice([0, 1, 100, 5000]))
        if kind == "put":
            ops = [(k, v)]
            recs.append(wal.encode_put(seq, k, v))
        elif kind == "delete":
            ops = [(k, None)]
            recs.append(wal.encode_put(seq, k, None))
        elif kind == "range":
            ops = [(k, wal.RangeEnd(v))]
            recs.append(wal.encode_put(seq, k, wal.RangeEnd(v)))
        else:
            ops = [(k, v), (v, None), (k + b"x", b"")]
            recs.append(wal.encode_batch(seq, ops))
        want.append((seq, ops))
        seq += len(ops)
    data = b"".join(recs)
    for tail in (b"", bytes(4096)):
        ends: list = []
        assert list(wal.read_log(data + tail, "x", ends=ends)) == want
        assert ends == [len(data)]
    ends = []
    assert list(wal.read_log(data + recs[0][:10], "x", ends=ends)) == want and ends == [None]  # torn tail
