"""Batch puts kept aside by the memtable until something reads its dict (``MemTable.defer``):
every reader sees them, in write order against single puts and other batches, and every flush
writes them (from the log, or from the dict on other file systems)."""

from __future__ import annotations

import threading

from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm.fs import RealFS


class _OtherFS(RealFS):
    """Not the plain real file system: a flush packs the memtable's dict instead of its log."""


def _opts(fs=None, **kw):
    return Options(fs=fs or RealFS(fsync=False), background_compaction=False, **kw)


def _batch(pairs):
    return WriteBatch().put_many(pairs)


def test_a_put_after_a_pending_batch_wins_over_it_and_a_later_batch_wins_over_both(tmp_path):
    with DB.open(tmp_path / "s", _opts()) as db:
        db.write(_batch([(b"k%02d" % i, b"batch1") for i in range(20)]))
        assert db._mem.pending_keys and db._mem_limit == 0  # put fast path closed while pending
        db.put(b"k01", b"put")  # the general path inserts the pending puts first
        assert not db._mem.pending_keys and db._mem_limit > 0
        db.put(b"k02", b"put2")  # fast path again
        db.write(_batch([(b"k03", b"batch2"), (b"k04", b"batch2"), (b"k03", b"batch2b")] + [(b"z%02d" % i, b"z") for i in range(8)]))
        db.put(b"k04", b"put3")
        db.write(_batch([(b"k05", b"batch3")] * 8))
        db.delete(b"k06")
        want = {b"k%02d" % i: b"batch1" for i in range(20)}
        want.update({b"k01": b"put", b"k02": b"put2", b"k03": b"batch2b", b"k04": b"put3", b"k05": b"batch3"})
        want.update({b"z%02d" % i: b"z" for i in range(8)})
        del want[b"k06"]
        db.write(_batch([(b"k07", b"batch4")] * 8))
        want[b"k07"] = b"batch4"
        assert db.get(b"k07") == b"batch4" and db.get(b"k06") is None and db.get(b"k01") == b"put"
        assert dict(db.scan()) == want
    with DB.open(tmp_path / "s", _opts()) as db:  # replayed from the log
        assert dict(db.scan()) == want


def test_every_reader_sees_pending_batch_puts(tmp_path):
    with DB.open(tmp_path / "s", _opts()) as db:
        pairs = [(b"k%03d" % i, b"v%03d" % i) for i in range(100)]
        for reader in ("get", "multi_get", "scan", "iterator", "snapshot", "len"):
            db.write(_batch(pairs))
            assert db._mem.pending_keys
            if reader == "get":
                assert db.get(b"k050") == b"v050"
            elif reader == "multi_get":
                assert db.multi_get([b"k000", b"k099", b"nope"]) == [b"v000", b"v099", None]
            elif reader == "scan":
                assert list(db.scan()) == pairs
            elif reader == "iterator":
                with db.iterator() as it:
                    assert list(it) == pairs
            elif reader == "snapshot":
                snap = db.snapshot()
                db.write(_batch([(k, b"later") for k, _ in pairs]))
                assert snap.get(b"k007") == b"v007" and db.get(b"k007") == b"later"
                assert dict(db.scan(snapshot=snap)) == dict(pairs)
                snap.close()
                db.write(_batch(pairs))
                assert db._mem.pending_keys and db.get(b"k007") == b"v007"
            else:
                assert len(db._mem) >= 100
            assert db._mem.pending_keys == [] or reader == "len"


def test_flushes_write_pending_batch_puts_from_the_log_and_from_the_dict(tmp_path):
    for name, fs in (("log", RealFS(fsync=False)), ("dict", _OtherFS(fsync=False))):
        path = tmp_path / name
        pairs = [(b"k%04d" % i, b"v%04d" % i) for i in range(3000)]
        with DB.open(path, _opts(fs, memtable_bytes=64 << 10)) as db:  # several flushes
            for s in range(0, 3000, 100):
                db.write(_batch(pairs[s : s + 100]))
            db.write(_batch([(b"k0000", b"newest")] * 10))
            db.flush()  # only pending puts in the memtable: still flushed
            assert not db._mem.pending_keys and not db._mem.latest and len(db._mem) == 0
        with DB.open(path, _opts(fs)) as db:
            assert db.get(b"k0000") == b"newest" and db.get(b"k2999") == b"v2999"
            assert len(list(db.scan())) == 3000


def test_a_reader_thread_sees_every_acknowledged_batch(tmp_path):
    """Readers take the store's lock only to insert pending puts: a reader running beside the
    writer finds every batch whose write returned, whole."""
    with DB.open(tmp_path / "s", Options(fs=RealFS(fsync=False), memtable_bytes=256 << 10)) as db:
        done = [-1]
        errors = []
        stop = threading.Event()

        def reader():
            while not stop.is_set():
                j = done[0]
                if j < 0:
                    continue
                got = db.multi_get([b"b%04d-%02d" % (j, i) for i in range(10)])
                if got != [b"v%04d" % j] * 10 or db.get(b"b%04d-09" % j) != b"v%04d" % j:
                    errors.append((j, got))
                    return

        t = threading.Thread(target=reader)
        t.start()
        try:
            for j in range(600):
                db.write(_batch([(b"b%04d-%02d" % (j, i), b"v%04d" % j) for i in range(10)]))
                done[0] = j
        finally:
            stop.set()
            t.join()
        assert not errors, errors[:3]
        assert len(list(db.scan())) == 6000
