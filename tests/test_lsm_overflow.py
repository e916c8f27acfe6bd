"""While the flush thread writes the previous memtable, the writer goes on filling the current one
up to ``OVERFLOW`` times ``memtable_bytes`` instead of waiting (:meth:`bloomdb.lsm.writer.WritePath._room`);
past that it waits. Nothing acknowledged is lost: the store answers every key meanwhile, after
the flush, after a reopen, and after a SIGKILL of a child whose flush never finished."""

from __future__ import annotations

import os
import struct
import threading

import pytest

import bloomdb.lsm.db as dbm
from bloomdb.lsm.writer import OVERFLOW
from bloomdb.bench.stress import run_and_kill
from bloomdb.lsm import DB, Options
from bloomdb.lsm.fs import RealFS

MEM = 32 << 10


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("memtable_bytes", MEM)
    return Options(**kw)


def _hold_flushes(monkeypatch):
    """Every flush waits for the returned event before writing its table (``entered``: one did)."""
    release, entered = threading.Event(), threading.Event()
    real = dbm.DB._write_table

    def held(self, mem, level, place=None):
        entered.set()
        assert release.wait(120), "the test never released the flush"
        return real(self, mem, level, place)

    monkeypatch.setattr(dbm.DB, "_write_table", held)
    return release, entered


def _key(i):
    return b"k%07d" % i


def test_the_writer_fills_past_the_limit_while_a_flush_runs_then_waits(tmp_path, monkeypatch):
    release, entered = _hold_flushes(monkeypatch)
    db = DB.open(tmp_path / "s", _opts())
    try:
        i = 0
        while db._imm is None:  # until the first memtable is switched out: its flush is held
            db.put(_key(i), b"v" * 100)
            i += 1
            assert i < 100_000
        assert entered.wait(60)
        assert db._imm is not None and db._room() == OVERFLOW * MEM
        first = i
        progress = [i]

        def writer():
            j = progress[0]
            while j < first + 1000 + (OVERFLOW * MEM) // 100:  # more than the overflow holds
                db.put(_key(j), b"v" * 100)
                j += 1
                progress[0] = j

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        t.join(5)  # generous: it stops by itself at the overflow limit
        assert t.is_alive(), "the writer never waited"
        stalled = progress[0]
        assert db._mem.bytes >= (OVERFLOW - 0.1) * MEM  # it wrote on well past memtable_bytes
        assert db._mem.bytes <= OVERFLOW * MEM + 200
        assert all(db.get(_key(j)) == b"v" * 100 for j in range(0, stalled, 7))  # readable meanwhile
        release.set()
        t.join(60)
        assert not t.is_alive()
        n = progress[0]
        db.wait_for_compactions()
        assert db._imm is None and db._room() == MEM
        assert [k for k, _ in db.scan()] == [_key(j) for j in range(n)]
    finally:
        release.set()
        db.close()
    with DB.open(tmp_path / "s", _opts()) as db:
        assert [k for k, _ in db.scan()] == [_key(j) for j in range(n)]
        assert all(db.get(_key(j)) == b"v" * 100 for j in range(0, n, 11))


def test_no_overflow_inline(tmp_path):
    with DB.open(tmp_path / "inline", _opts(background_compaction=False)) as db:
        for i in range(3000):
            db.put(_key(i), b"v" * 100)
            assert db._mem.bytes <= MEM + 200  # inline flushes never leave an immutable memtable
        assert db._room() == MEM


def _overflow_child(path, w):  # pragma: no cover - runs in a forked child, killed
    dbm.DB._write_table = lambda self, mem, level, place=None: threading.Event().wait()  # flushes never end
    db = DB.open(path, _opts())
    i = 0
    while True:
        db.put(_key(i), b"v%07d" % i)
        i += 1
        if i % 25 == 0:
            os.write(w, struct.pack("<I", i))  # every key below i is acknowledged


@pytest.mark.parametrize("delay", [0.5, 1.5])
def test_a_child_killed_while_its_memtable_overflows_loses_nothing(tmp_path, delay):
    path = str(tmp_path / "s")
    DB.open(path, _opts()).close()
    data = run_and_kill(lambda w: (_overflow_child(path, w), os._exit(0)), delay)
    assert len(data) >= 4, "the child acknowledged nothing"
    acked = struct.unpack_from("<I", data, len(data) - 4)[0]
    assert acked * (8 + 8 + 48) > MEM  # past the first memtable: its flush was held
    with DB.open(path, _opts()) as db:
        got = dict(db.scan())
        assert all(got.get(_key(i)) == b"v%07d" % i for i in range(acked))
        assert all(db.get(_key(i)) == b"v%07d" % i for i in range(0, acked, 13))
