"""Fault injection through the file-system interface: torn writes and failed fsyncs."""

from __future__ import annotations

import pytest

from bloomdb.errors import BloomDBError, StoreIOError
from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm.compaction import executor
from bloomdb.lsm.fs import FaultyFS, InjectedFault


def _opts(fs, **kw):
    base = dict(memtable_bytes=2000, table_bytes=2000, level1_bytes=6000, block_size=256,
                background_compaction=False, fs=fs)
    base.update(kw)
    return Options(**base)


@pytest.mark.parametrize("budget", [0, 7, 40, 333, 1000, 2500, 4000, 9000, 20000])
def test_torn_write_anywhere(tmp_path, budget):
    """Whatever write tears (WAL record, table, manifest), acknowledged batches survive a reopen
    and the torn batch is all-or-nothing."""
    path = str(tmp_path / "db")
    DB.open(path, _opts(None)).close()
    fs = FaultyFS(write_budget=budget)
    db = DB.open(path, _opts(fs)) if budget > 200 else None
    acked = []
    torn = None
    if db is not None:
        try:
            for j in range(400):
                b = WriteBatch().put(b"a%04d" % j, b"x" * 30).put(b"b%04d" % j, b"y" * 30)
                torn = j
                db.write(b, sync=True)
                acked.append(j)
                torn = None
        except StoreIOError as e:  # our error, the injected one its cause (issue 15)
            assert isinstance(e.__cause__, InjectedFault) and path in str(e)
        # one torn write; a compaction has up to OutputFiles' depth outputs in flight, so their
        # writes (after the "machine died": budget 0) may fault too
        assert 1 <= fs.faults <= executor.OutputFiles().depth
        with pytest.raises(BloomDBError):  # the store refuses writes after the I/O error
            db.put(b"after", b"1")
        db.close()
    else:
        with pytest.raises(StoreIOError) as e:  # our error, naming the store (issue 15)
            DB.open(path, _opts(fs))
        assert isinstance(e.value.__cause__, InjectedFault) and path in str(e.value)
    with DB.open(path, _opts(None)) as db2:
        for j in acked:
            assert db2.get(b"a%04d" % j) == b"x" * 30 and db2.get(b"b%04d" % j) == b"y" * 30
        if torn is not None:
            assert (db2.get(b"a%04d" % torn) is None) == (db2.get(b"b%04d" % torn) is None)
        assert db2.get(b"after") is None
        db2.put(b"k", b"v", sync=True)
        assert db2.get(b"k") == b"v"


def test_failed_fsync(tmp_path):
    path = str(tmp_path / "db")
    fs = FaultyFS()
    db = DB.open(path, _opts(fs))
    db.put(b"ok", b"1", sync=True)
    fs.fail_sync = True
    with pytest.raises(StoreIOError) as e:
        db.put(b"maybe", b"2", sync=True)
    assert isinstance(e.value.__cause__, InjectedFault)
    with pytest.raises(BloomDBError):
        db.put(b"later", b"3")
    assert db.get(b"ok") == b"1"
    db.close()
    with DB.open(path, _opts(None)) as db2:
        assert db2.get(b"ok") == b"1"
        assert db2.get(b"later") is None


def test_failed_fsync_during_flush_keeps_data(tmp_path):
    path = str(tmp_path / "db")
    fs = FaultyFS()
    db = DB.open(path, _opts(fs, background_compaction=True))
    for j in range(30):
        db.put(b"k%03d" % j, b"v" * 50)
    fs.fail_sync = True  # the background flush's table/manifest fsync fails
    with pytest.raises(BloomDBError):  # StoreIOError, or the refusal after it
        for j in range(30, 400):
            db.put(b"k%03d" % j, b"v" * 50)
    db.close()
    with DB.open(path, _opts(None)) as db2:
        for j in range(30):
            assert db2.get(b"k%03d" % j) == b"v" * 50
