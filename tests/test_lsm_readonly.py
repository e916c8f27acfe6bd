"""``DB.open(path, read_only=True)`` (issue 15): no lock, nothing written, the store as of the
open, beside a live writer (LevelDB/RocksDB ``OpenForReadOnly``)."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from bloomdb.errors import InvalidArgument, StoreReadOnly
from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm.fs import RealFS


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    return Options(**kw)


def _files(path):
    return {n: (os.stat(os.path.join(path, n)).st_size, os.stat(os.path.join(path, n)).st_mtime_ns)
            for n in os.listdir(path)}


def test_reader_beside_a_writer_sees_the_store_as_of_open(tmp_path):
    path = tmp_path / "s"
    w = DB.open(path, _opts(memtable_bytes=4096))
    for i in range(300):
        w.put(b"k%04d" % i, b"v%d" % i)  # some in tables, the newest only in the log
    w.delete(b"k0007")
    assert w.stats()["tables_per_level"] != [0] * 7 and w.stats()["memtable_entries"] > 0
    r1 = DB.open(path, _opts(), read_only=True)
    r2 = DB.open(path, _opts(), read_only=True)  # any number at once
    w.put(b"later", b"x")
    for r in (r1, r2):
        assert r.get(b"k0299") == b"v299" and r.get(b"k0000") == b"v0"
        assert r.get(b"k0007") is None and r.get(b"later") is None
        assert len(list(r.scan())) == 299
        assert r.multi_get([b"k0001", b"later"]) == [b"v1", None]
    with pytest.raises(StoreReadOnly, match="read-only"):
        r1.put(b"a", b"b")
    for write in (lambda: r1.delete(b"k0001"), lambda: r1.write(WriteBatch().put(b"a", b"b")),
                  r1.flush, r1.compact_range):
        with pytest.raises(StoreReadOnly):
            write()
    with r1.snapshot() as snap:
        assert r1.get(b"k0001", snapshot=snap) == b"v1"
    r1.close()
    r2.close()
    with DB.open(path, _opts(), read_only=True) as r3:  # a new reader sees the new write
        assert r3.get(b"later") == b"x"
    w.put(b"after-readers", b"y")  # the writer never noticed them
    w.close()
    with DB.open(path, _opts()) as w2:
        assert w2.get(b"after-readers") == b"y" and w2.get(b"k0299") == b"v299"


def test_read_only_open_writes_nothing(tmp_path):
    path = tmp_path / "s"
    with DB.open(path, _opts()) as db:
        for i in range(50):
            db.put(b"k%d" % i, b"v")
        db.flush()
        db.put(b"in-log", b"only")  # a log a writable open would replay into a table
    before = _files(path)
    with DB.open(path, _opts(), read_only=True) as r:
        assert r.get(b"in-log") == b"only" and r.get(b"k3") == b"v"
        assert r.stats()["last_sequence"] == 51
    assert _files(path) == before


class _NoWriteFS(RealFS):
    """A folder this process may not write (every write raises EACCES)."""

    def __init__(self):
        super().__init__(fsync=False)

    def _fail(self, path, *a):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    open_append = write_atomic = remove = rename = makedirs = _fail


def test_a_folder_that_cannot_be_written_opens_read_only(tmp_path):
    path = tmp_path / "s"
    with DB.open(path, _opts()) as db:
        db.put(b"k", b"v")
    with pytest.raises(OSError, match="read_only=True"):  # the error says what to do
        DB.open(path, _opts(fs=_NoWriteFS()))
    with DB.open(path, _opts(fs=_NoWriteFS()), read_only=True) as r:
        assert r.get(b"k") == b"v"


def test_read_only_open_of_no_store_creates_nothing(tmp_path):
    with pytest.raises(InvalidArgument, match="no store"):
        DB.open(tmp_path / "none", _opts(), read_only=True)
    assert not (tmp_path / "none").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgument, match="no store"):
        DB.open(tmp_path / "empty", _opts(), read_only=True)
    assert os.listdir(tmp_path / "empty") == []
    with pytest.raises(InvalidArgument):
        DB.open(tmp_path / "empty", _opts(), read_only="yes")


@pytest.mark.parametrize("deep", [0, 2])
def test_readers_during_flushes_and_compactions_see_a_prefix(tmp_path, deep):
    """A writer thread puts k0, k1, ... in order with small memtables (flushes, compactions,
    logs deleted); every read-only open meanwhile sees exactly k0..k(n-1) for some n."""
    path = tmp_path / "s"
    w = DB.open(path, _opts(memtable_bytes=2048, level0_trigger=2, table_bytes=4096, level1_bytes=4096,
                            background_compaction=True, max_flush_level=deep))  # deep: L2 moves to L3
    done = threading.Event()
    count = [0]

    def writer():
        i = 0
        while not done.is_set() and i < 12000:
            w.put(b"k%06d" % i, b"v%d" % i)
            i += 1
            count[0] = i

    t = threading.Thread(target=writer)
    t.start()
    seen = []
    try:
        while len(seen) < 6 and t.is_alive():
            lo = count[0]
            while t.is_alive() and count[0] < lo + 1500:  # let the writer flush and compact
                time.sleep(0.01)
            lo = count[0]
            with DB.open(path, _opts(), read_only=True) as r:
                keys = [k for k, _ in r.scan()]
                n = len(keys)
                assert keys == [b"k%06d" % i for i in range(n)]
                assert n >= lo
                if n:
                    assert r.get(b"k%06d" % (n - 1)) == b"v%d" % (n - 1)
                    assert r.get(b"k%06d" % n) is None
                seen.append(n)
    finally:
        compactions = [w._stats["compactions"]]
        done.set()
        t.join()
        w.close()
    assert len(seen) >= 3 and max(seen) > 0
    assert compactions[0] > 0
