"""The write path (:mod:`bloomdb.lsm.writer`): ``put``'s fast path is gated by one number that
every condition needing the general path closes (a live snapshot, an I/O error, closing, a
read-only store, a full memtable); ``db.write_batch()`` behaves as plyvel's; writers in several
threads beside readers and snapshots lose nothing; a SIGKILL keeps every acknowledged write."""

from __future__ import annotations

import os
import random
import signal
import struct
import threading
import time

import pytest

from bloomdb.errors import BloomDBError, StoreClosed, StoreReadOnly
from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm.fs import RealFS

from lsm_helpers import small_options


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    return Options(**kw)


def test_every_condition_closes_the_fast_path_and_reopens_it(tmp_path):
    with DB.open(tmp_path / "s", _opts(memtable_bytes=1 << 20)) as db:
        assert db._mem_limit == 1 << 20
        s = db.snapshot()
        assert db._mem_limit == 0
        db.put(b"k", b"new")  # the general path keeps the version the snapshot sees
        assert s.get(b"k") is None and db.get(b"k") == b"new"
        db.put(b"k", b"newer")
        assert s.get(b"k") is None and db._mem.history[b"k"] == [(1, b"new")]
        s.close()
        assert db._mem_limit == 1 << 20
        with db._lock:
            db._bg_error = OSError("disk on fire")
        assert db._mem_limit == 0
        with pytest.raises(BloomDBError, match="disk on fire"):
            db.put(b"a", b"1")
        assert db.get(b"a") is None
        with db._lock:
            db._bg_error = None
        db.put(b"a", b"1")
        assert db.get(b"a") == b"1"
    assert db._mem_limit == 0
    with pytest.raises(StoreClosed):
        db.put(b"b", b"2")
    with DB.open(tmp_path / "s", _opts(), read_only=True) as ro:
        assert ro._mem_limit == 0
        with pytest.raises(StoreReadOnly):
            ro.put(b"c", b"3")


def test_a_background_failure_stops_the_fast_path(tmp_path, monkeypatch):
    """The background thread records its failure through the same attribute: the next put raises."""
    import bloomdb.lsm.db as dbm

    def broken(self, mem, level, place=None):
        raise OSError("no space for the table")

    monkeypatch.setattr(dbm.DB, "_write_table", broken)
    db = DB.open(tmp_path / "s", _opts(memtable_bytes=4 << 10))
    try:
        with pytest.raises(BloomDBError, match="no space"):
            for i in range(20000):
                db.put(b"k%06d" % i, b"v" * 50)
        assert db._mem_limit == 0
    finally:
        monkeypatch.undo()
        db._bg_error = None  # let close() finish its own work
        db.close()


def _plyvel():
    return pytest.importorskip("plyvel")


def test_write_batch_context_manager_is_plyvels(tmp_path):
    plyvel = _plyvel()
    ldb = plyvel.DB(str(tmp_path / "l"), create_if_missing=True)
    db = DB.open(tmp_path / "s", _opts())
    try:
        for d in (db, ldb):
            with d.write_batch() as b:
                b.put(b"a", b"1")
                b.put(b"b", b"2")
                b.delete(b"a")
            for tx in (True, False):
                with pytest.raises(KeyError):
                    with d.write_batch(transaction=tx) as b:
                        b.put(b"tx%d" % tx, b"x")
                        raise KeyError("leave the block")
            b = d.write_batch()
            b.put(b"c", b"3")
            b.write()
            d.delete(b"c")
            b.write()  # write() keeps the operations: c is back
            with d.write_batch(sync=True) as b:
                b.put(b"d", b"4")
            d.delete(b"d")
            b.write()  # the block's end cleared the batch: d stays deleted
        assert list(db.iterator()) == list(ldb.iterator()) == [(b"b", b"2"), (b"c", b"3"), (b"tx0", b"x")]
    finally:
        db.close()
        ldb.close()
    with pytest.raises(TypeError):
        DB.write_batch(db, True)  # keyword-only, as plyvel's


def _writer(db, wid, n, rng, model, lock):
    """Writer ``wid`` on its own keys ``w<wid>-<k>`` by every route: fast puts, deletes, sync
    puts, WriteBatch, put_many and write_batch(); each value names the write's round so a
    reader can check that it never sees a key go back in time."""
    for r in range(n):
        k = b"w%d-%03d" % (wid, rng.randrange(60))
        v = b"%d:%08d" % (wid, r)
        c = rng.random()
        if c < 0.55:
            db.put(k, v)
            ops = [(k, v)]
        elif c < 0.65:
            db.delete(k)
            ops = [(k, None)]
        elif c < 0.7:
            db.put(k, v, sync=True)
            ops = [(k, v)]
        elif c < 0.8:
            ks = [b"w%d-%03d" % (wid, rng.randrange(60)) for _ in range(rng.randrange(1, 30))]
            db.write(WriteBatch().put_many([(x, v) for x in ks]))
            ops = [(x, v) for x in ks]
        else:
            ks = [b"w%d-%03d" % (wid, rng.randrange(60)) for _ in range(rng.randrange(1, 30))]
            with db.write_batch() as b:
                for x in ks:
                    b.put(x, v)
                b.delete(ks[0])
            ops = [(x, v) for x in ks] + [(ks[0], None)]
        with lock:
            for x, y in ops:
                if y is None:
                    model.pop(x, None)
                else:
                    model[x] = y


def test_writers_in_threads_beside_readers_and_snapshots_match_a_dict(tmp_path):
    db = DB.open(tmp_path / "s", small_options(background_compaction=True))
    model: dict[bytes, bytes] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []
    done = threading.Event()

    def guarded(fn, *args):
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    def reader(seed):
        rng = random.Random(seed)
        seen: dict[bytes, int] = {}
        while not done.is_set():
            k = b"w%d-%03d" % (rng.randrange(3), rng.randrange(60))
            v = db.get(k)
            if v is not None:  # a writer's rounds only grow: a key never goes back in time
                r = int(v.split(b":")[1])
                assert r >= seen.get(k, -1), (k, r, seen.get(k))
                seen[k] = r
            if rng.random() < 0.05:
                with db.snapshot() as s:
                    first = dict(db.iterator(snapshot=s))
                    time.sleep(0.001)
                    assert dict(db.iterator(snapshot=s)) == first  # a snapshot does not move
                    assert all(s.get(x) == y for x, y in list(first.items())[:20])

    writers = [threading.Thread(target=guarded, args=(_writer, db, w, 1500, random.Random(w), model, lock))
               for w in range(3)]
    readers = [threading.Thread(target=guarded, args=(reader, 10 + s)) for s in range(2)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join(300)
    done.set()
    for t in readers:
        t.join(60)
    try:
        assert not errors, errors
        assert dict(db.iterator()) == model
        assert db.stats()["compactions"] > 0 or db.stats()["tables_per_level"][0] > 0
    finally:
        db.close()
    with DB.open(tmp_path / "s", small_options()) as db:
        assert dict(db.iterator()) == model


def _child(path: str, wfd: int, seed: int) -> None:
    """Writes until killed, telling the parent through ``wfd`` how many writes returned."""
    rng = random.Random(seed)
    try:
        db = DB.open(path, _opts(memtable_bytes=256 << 10, fs=RealFS(fsync=False)))
        i = 0
        while True:
            if i % 97 == 96:
                with db.write_batch() as b:
                    b.put(b"k%07d" % i, b"b%d" % i)
                    b.delete(b"k%07d" % (i - 1))
            else:
                db.put(b"k%07d" % i, b"v%d" % i * rng.randrange(1, 40))
            i += 1
            os.write(wfd, struct.pack("<I", i))
    finally:
        os._exit(1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_during_fast_puts_keeps_every_acknowledged_write(tmp_path, seed):
    path = str(tmp_path / "s")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(path, w, seed)
    os.close(w)
    chunks = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(r, 1 << 16), b"")))
    reader.start()  # the child never blocks on a full pipe
    time.sleep(0.4 + 0.3 * seed)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    reader.join()
    os.close(r)
    data = b"".join(chunks)
    acked = struct.unpack_from("<I", data, len(data) - len(data) % 4 - 4)[0]
    assert acked > 100
    rng = random.Random(seed)
    with DB.open(path, _opts()) as db:
        for i in range(acked):
            want = b"b%d" % i if i % 97 == 96 else b"v%d" % i * rng.randrange(1, 40)
            got = db.get(b"k%07d" % i)
            if i % 97 == 95 and i + 1 < acked:  # the next batch deleted it
                assert got is None, i
            elif i % 97 == 95 and i + 1 == acked:  # that batch was in flight: either
                assert got in (None, want), i
            else:
                assert got == want, i
        later = [k for k in db.iterator(start=b"k%07d" % (acked + 1), include_value=False)]
        assert later == [], later[:3]  # at most the write in flight may have landed


@pytest.mark.parametrize("bad", [[(b"a", b"1"), (b"b", b"2", b"3")], [(b"a", b"1", b"x"), (b"b", b"2", b"3")],
                                 [(b"a",), (b"b",)], [(), ()], [(b"a", b"1"), ()], [(b"a", b"1"), (b"b", None)]])
def test_put_many_refuses_pairs_of_the_wrong_shape_in_its_fast_path(bad):
    """The fast path checks a list of tuples with one strict ``zip``: tuples longer or shorter
    than a pair, alone or all alike, are refused as ``put`` would refuse them."""
    from bloomdb.errors import KeyTypeError

    b = WriteBatch().put(b"x", b"0")
    with pytest.raises(KeyTypeError):
        b.put_many(bad)
    assert b.ops == [(b"x", b"0")]
    ok = [(b"k", b"v"), ("ké", bytearray(b"w")), (b"k", memoryview(b"u"))]  # converted as put() converts
    assert WriteBatch().put_many(ok).ops == [(b"k", b"v"), ("ké".encode(), b"w"), (b"k", b"u")]
