"""``db.checkpoint(dest)`` (issue 15): a consistent, openable copy of a live store, tables
hard-linked (RocksDB's Checkpoint)."""

from __future__ import annotations

import errno
import os
import random
import shutil
import struct
import threading
import time

import pytest

from bloomdb.bench.stress import run_and_kill
from bloomdb.errors import InvalidArgument, StoreClosed, StoreReadOnly
from bloomdb.lsm import DB, Options
from bloomdb.lsm.fs import FaultyFS, RealFS


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    return Options(**kw)


def test_checkpoint_holds_what_was_written_before_and_nothing_after(tmp_path):
    src, cp = tmp_path / "s", tmp_path / "cp"
    with DB.open(src, _opts(memtable_bytes=4096)) as db:
        for i in range(400):
            db.put(b"k%04d" % i, b"v%d" % i)
        db.delete(b"k0003")
        assert db.stats()["memtable_entries"] > 0 and sum(db.stats()["tables_per_level"]) > 0
        assert db.checkpoint(cp) == str(cp)
        db.put(b"k0000", b"changed")
        db.put(b"after", b"x")
        with DB.open(cp, _opts()) as c:
            assert c.get(b"k0000") == b"v0" and c.get(b"k0399") == b"v399"
            assert c.get(b"k0003") is None and c.get(b"after") is None
            assert len(list(c.scan())) == 399
            c.put(b"in-copy", b"1")  # the copy is a store of its own
            c.compact_range()  # unlinks its own links only
        assert db.get(b"in-copy") is None and db.get(b"k0000") == b"changed"
        assert len(list(db.scan())) == 400
        with pytest.raises(InvalidArgument, match="exists"):
            db.checkpoint(cp)
        with pytest.raises(InvalidArgument, match="inside"):
            db.checkpoint(src / "sub")


def test_tables_are_hard_links(tmp_path):
    src, cp = tmp_path / "s", tmp_path / "cp"
    with DB.open(src, _opts()) as db:
        db.put(b"k", b"v")
        db.flush()
        db.checkpoint(cp)
        (ref,) = db._version.all_refs()
    name = "%06d.sst" % ref.number
    assert os.stat(src / name).st_ino == os.stat(cp / name).st_ino


class _NoLinkFS(RealFS):
    def link(self, src, dst):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), src)


def test_checkpoint_copies_where_links_are_refused(tmp_path):
    src, cp = tmp_path / "s", tmp_path / "cp"
    with DB.open(src, _opts(fs=_NoLinkFS(fsync=False))) as db:
        for i in range(100):
            db.put(b"k%03d" % i, b"v")
        db.flush()
        db.put(b"log", b"only")
        db.checkpoint(cp)
    assert {n for n in os.listdir(cp) if n.endswith(".sst")} == {n for n in os.listdir(src) if n.endswith(".sst")}
    with DB.open(cp, _opts()) as c:
        assert c.get(b"log") == b"only" and c.get(b"k042") == b"v"


def test_buffered_unsynced_writes_are_in_the_checkpoint(tmp_path):
    with DB.open(tmp_path / "s", _opts(wal_buffer_bytes=1 << 20)) as db:
        db.put(b"buffered", b"1")  # still in the log's user-space buffer
        db.checkpoint(tmp_path / "cp")
    with DB.open(tmp_path / "cp", _opts()) as c:
        assert c.get(b"buffered") == b"1"


def test_checkpoint_of_closed_or_read_only_store_raises(tmp_path):
    db = DB.open(tmp_path / "s", _opts())
    db.put(b"k", b"v")
    db.close()
    with pytest.raises(StoreClosed):
        db.checkpoint(tmp_path / "cp")
    with DB.open(tmp_path / "s", _opts(), read_only=True) as r:
        with pytest.raises(StoreReadOnly):
            r.checkpoint(tmp_path / "cp")
    assert not (tmp_path / "cp").exists()
    assert sorted(os.listdir(tmp_path)) == ["s"]  # not even a temporary folder left


def test_failed_checkpoint_leaves_nothing_at_dest_and_a_retry_works(tmp_path):
    fs = FaultyFS()
    with DB.open(tmp_path / "s", _opts(fs=fs)) as db:
        for i in range(50):
            db.put(b"k%02d" % i, b"v" * 100)
        fs.write_budget = 1000  # the log copy is torn half-way
        with pytest.raises(OSError):
            db.checkpoint(tmp_path / "cp")
        assert not (tmp_path / "cp").exists()
        fs.write_budget = None
        assert not (tmp_path / "cp.tmp").exists()
        db.checkpoint(tmp_path / "cp")
    with DB.open(tmp_path / "cp", _opts()) as c:
        assert c.get(b"k49") == b"v" * 100


@pytest.mark.parametrize("deep", [0, 2])
def test_checkpoints_during_writes_hold_an_acknowledged_prefix(tmp_path, deep):
    """A writer thread puts k0, k1, ... (small memtables: flushes and compactions run -- with
    ``max_flush_level`` 2 the flushes go to L2 and L2 moves to L3); each checkpoint taken
    meanwhile opens and holds exactly k0..k(n-1), n >= the writes acknowledged before the call."""
    src = tmp_path / "s"
    db = DB.open(src, _opts(memtable_bytes=2048, level0_trigger=2, table_bytes=8192, background_compaction=True,
                           max_flush_level=deep, level1_bytes=4096))
    done = threading.Event()
    count = [0]

    def writer():
        i = 0
        while not done.is_set() and i < 12000:
            db.put(b"k%06d" % i, b"v%d" % i)
            i += 1
            count[0] = i

    t = threading.Thread(target=writer)
    t.start()
    taken = []
    try:
        for j in range(5):
            lo = count[0]
            while t.is_alive() and count[0] < lo + 1500:
                time.sleep(0.01)
            lo = count[0]
            taken.append((db.checkpoint(tmp_path / f"cp{j}"), lo))
    finally:
        done.set()
        t.join()
        compactions = db._stats["compactions"]
        db.close()
    assert compactions > 0  # deep: L2 (40 KiB) overflows into L3 by trivial moves
    for path, lo in taken:
        with DB.open(path, _opts()) as c:
            keys = [k for k, _ in c.scan()]
            assert len(keys) >= lo and keys == [b"k%06d" % i for i in range(len(keys))]
            assert c.get(keys[-1]) == b"v%d" % (len(keys) - 1)


def _checkpointing_child(src, root, wfd):  # pragma: no cover - runs in a forked child
    try:
        db = DB.open(src, _opts(memtable_bytes=3000, table_bytes=6000, level0_trigger=2, background_compaction=True))
        i = j = 0
        while True:
            for _ in range(200):
                db.put(b"k%06d" % i, b"v%d" % i)
                i += 1
            db.checkpoint(os.path.join(root, "cp%03d" % j))
            os.write(wfd, struct.pack("<II", j, i))  # checkpoint j finished, after i acknowledged puts
            j += 1
    finally:
        os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only (os.fork)")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_while_checkpointing(tmp_path, seed):
    """A child writes and takes checkpoints until SIGKILL: every checkpoint folder that exists
    opens and holds an acknowledged prefix (the ones reported finished: at least the puts before
    the call); a half-made one exists only as ``cpNNN.tmp`` and the next checkpoint there works."""
    src, root = str(tmp_path / "s"), str(tmp_path / "cps")
    os.mkdir(root)
    with DB.open(src, _opts()) as db:  # every lazy import done before the fork
        db.put(b"k%06d" % 0, b"v0")
        db.flush()
        db.checkpoint(os.path.join(root, "warm"))
    shutil.rmtree(os.path.join(root, "warm"))
    data = run_and_kill(lambda w: _checkpointing_child(src, root, w), random.Random(seed).uniform(0.5, 1.5))
    done = dict(struct.iter_unpack("<II", data))
    assert done, "the child finished no checkpoint (machine too loaded?)"
    folders = sorted(n for n in os.listdir(root) if not n.endswith(".tmp"))
    assert len(folders) >= len(done)
    for name in folders:
        with DB.open(os.path.join(root, name), _opts()) as c:
            keys = [k for k, _ in c.scan()]
        assert keys == [b"k%06d" % i for i in range(len(keys))]
        j = int(name[2:])
        if j in done:
            assert len(keys) >= done[j]
    for name in os.listdir(root):
        if name.endswith(".tmp"):  # killed half-way: a retry to that folder clears it
            with DB.open(src, _opts()) as db:
                db.checkpoint(os.path.join(root, name[:-4] + "-retry"))
                dest = os.path.join(root, name[:-4])
                if not os.path.exists(dest):
                    db.checkpoint(dest)
                    assert not os.path.exists(os.path.join(root, name))
    with DB.open(src, _opts()) as db:
        n = max(done.values())
        assert all(db.get(b"k%06d" % i) == b"v%d" % i for i in range(n))
