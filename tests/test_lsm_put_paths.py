"""Two copies of one job on the write path, pinned to each other so they cannot drift:

* ``DB.put`` and ``batch.apply`` insert into the memtable inline (a method call per put costs
  ~0.1 us of ~1.8); they must leave the memtable exactly as ``MemTable.add`` / ``MemTable.apply``
  leave it: same entries in the same order, same byte count, same sequences;
* a flush reads its sorted run from the memtable's log (:mod:`bloomdb.lsm.logrun`, one kernel
  that releases the GIL) instead of packing the dict: same arrays as ``MemTable.table_arrays``,
  and the dict whenever the log cannot give them (snapshots' old versions, another file system,
  a log that does not match the memtable).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from bloomdb.lsm import DB, Options, WriteBatch, logrun
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.memtable import MemTable


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    kw.setdefault("memtable_bytes", 1 << 30)
    return Options(**kw)


def _writes(db, rng, n, ranges=True):
    """Random puts, deletes, batches (puts only: the fast path; mixed: the per-op path) and range
    deletes on ``db``; yields each as ``(first seq, ops)`` as a memtable applies it."""
    for _ in range(n):
        k = b"k%04d" % rng.randrange(700)
        r = rng.random()
        first = db._seq + 1
        if r < 0.1:
            db.delete(k)
            yield first, [(k, None)]
        elif r < 0.2:
            b = WriteBatch()
            for _ in range(rng.randrange(1, 40)):
                b.put(b"k%04d" % rng.randrange(700), rng.randbytes(rng.randrange(0, 60)))
            if rng.random() < 0.3:
                b.delete(k)
            db.write(b)
            yield first, list(b.ops)
        elif r < 0.21 and ranges:
            b = WriteBatch().delete_range(k, k + b"5")
            db.write(b)
            yield first, list(b.ops)
        else:
            v = rng.randbytes(rng.randrange(0, 120))
            db.put(k, v)
            yield first, [(k, v)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_inlined_memtable_inserts_match_memtable_add(tmp_path, seed):
    rng = random.Random(seed)
    ref = MemTable()
    with DB.open(tmp_path / "s", _opts()) as db:
        last = 0
        for first, ops in _writes(db, rng, 3000):
            ref.apply(first, ops, False)
            last = first + len(ops) - 1
        mem = db._mem
        assert list(mem.latest.items()) == list(ref.latest.items())  # entries, values, key order
        assert mem.bytes == ref.bytes and mem.rdels == ref.rdels and not mem.history
        for k in ref.latest:  # the fast paths record no sequence: the reported one is a lower bound
            assert mem.base <= mem.seq_of(k) <= ref.seq_of(k)
        assert db._seq == last
        with db._lock:
            mem._merge_pending()
        ref._merge_pending()
        assert list(mem.keys) == list(ref.keys) == sorted(ref.latest)


@pytest.mark.parametrize("seed, ranges", [(4, True), (5, True), (6, False), (7, False)])
def test_flush_run_read_from_the_log_is_the_memtables(tmp_path, seed, ranges):
    """Same keys, values and types; the log's sequences are the true ones, the dict's the
    reported ones (:mod:`bloomdb.lsm.memtable`): equal for every write the general path made
    (deletions, batches with deletions, everything after a range tombstone), never above the
    true one and never below the memtable's ``base`` for the fast paths' writes."""
    rng = random.Random(seed)
    with DB.open(tmp_path / "s", _opts()) as db:
        last_general = {}
        for first, ops in _writes(db, rng, 4000, ranges=ranges):
            fast = len(ops) > 0 and all(type(v) is bytes for _, v in ops) and not db._mem.rdels
            for i, (k, _) in enumerate(ops):
                last_general[k] = None if fast else first + i
        mem, path = db._mem, db._file(f"{db._mem.log_number:06d}.log")
        db._log.flush()
        got = logrun.table_arrays(mem, db._fs, path)
        assert got is not None
        want = mem.table_arrays()
        assert len(got) == len(want) == 5
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype
            if i != 2:
                assert np.array_equal(g, w)
        assert np.array_equal(got[2] & 0xFF, want[2] & 0xFF)
        true, reported = got[2] >> 8, want[2] >> 8
        assert np.all(reported <= true) and np.all(reported >= mem.base)
        keys = [bytes(got[0][got[1][j] : got[1][j + 1]]) for j in range(len(got[1]) - 1)]
        exact = np.array([last_general.get(k) is not None for k in keys])
        assert np.array_equal(reported[exact], true[exact])
        assert exact.any() and (ranges or not exact.all())


def test_flush_run_falls_back_to_the_dict_when_the_log_cannot_answer(tmp_path):
    rng = random.Random(9)
    with DB.open(tmp_path / "s", _opts()) as db:
        for _ in _writes(db, rng, 500, ranges=False):
            pass
        mem, path = db._mem, db._file(f"{db._mem.log_number:06d}.log")
        assert logrun.table_arrays(mem, db._fs, path) is not None
        assert logrun.table_arrays(mem, RealFS(fsync=False), path) is not None
        mem.bytes += 1  # the log no longer matches what the memtable counted
        assert logrun.table_arrays(mem, db._fs, path) is None
        mem.bytes -= 1

        class OtherFS(RealFS):
            pass

        assert logrun.table_arrays(mem, OtherFS(fsync=False), path) is None
        assert logrun.table_arrays(mem, db._fs, path + ".missing") is None
        with db.snapshot():
            db.put(next(iter(mem.latest)), b"new")  # a live snapshot: the memtable keeps the old version
            assert mem.history
            assert logrun.table_arrays(mem, db._fs, path) is None


def test_flushes_through_the_log_keep_every_write(tmp_path, monkeypatch):
    """Every flush of a store on the real file system takes the log's run (the dict's packing is
    made to fail), and the store reads back as a dict of the same writes, before and after reopen."""
    def no_dict(self, indexed=False):
        raise AssertionError("the flush packed the dict")

    monkeypatch.setattr(MemTable, "table_arrays", no_dict)
    rng = random.Random(11)
    model = {}
    with DB.open(tmp_path / "s", _opts(memtable_bytes=64 << 10, table_bytes=64 << 10, level1_bytes=256 << 10)) as db:
        for _, ops in _writes(db, rng, 8000, ranges=False):
            for k, v in ops:
                if v is None:
                    model.pop(k, None)
                else:
                    model[k] = v
        db.flush()
        assert db.stats()["compactions"] > 0
        assert dict(db.scan()) == model
    monkeypatch.undo()
    with DB.open(tmp_path / "s", _opts()) as db:
        assert dict(db.scan()) == model


def test_put_many_is_put_per_pair(tmp_path):
    rng = random.Random(3)
    pairs = [(rng.randbytes(rng.randrange(0, 20)), rng.randbytes(rng.randrange(0, 50))) for _ in range(500)]
    pairs += [pairs[7], pairs[3]]  # repeated keys: the later pair wins
    one = WriteBatch()
    for k, v in pairs:
        one.put(k, v)
    assert WriteBatch().put_many(pairs).ops == one.ops  # the fast path (bytes pairs in a list)
    assert WriteBatch().put_many(iter(pairs)).ops == one.ops
    mixed = [("ké", bytearray(b"v")), [b"k", memoryview(b"w")]]  # converted as put() converts
    assert WriteBatch().put_many(mixed).ops == WriteBatch().put("ké", bytearray(b"v")).put(b"k", b"w").ops
    with DB.open(tmp_path / "s", _opts()) as db:
        db.write(WriteBatch().put_many(pairs))
        assert dict(db.scan()) == dict(pairs)


@pytest.mark.parametrize("bad", [[(b"a", b"1"), (b"b", 2)], [(b"a", b"1"), (3, b"2")], [(b"a", b"1"), (b"b",)],
                                 [(b"a", b"1"), (b"b", b"2", b"3")], [(b"a", b"1"), b"ab"]])
def test_put_many_refuses_a_bad_pair_and_leaves_the_batch_unchanged(bad):
    from bloomdb.errors import KeyTypeError

    b = WriteBatch().put(b"x", b"0")
    with pytest.raises(KeyTypeError):
        b.put_many(bad)
    assert b.ops == [(b"x", b"0")]


def test_a_flushs_sorted_entries_leave_the_scan_keys_alone():
    """A flush reads an immutable memtable's versions without the store's lock, while an
    iterator's creation may merge the same memtable's new keys into its sorted ``keys`` under the
    lock: the flush's pass must not merge them too (two merges of the same keys left duplicates)."""
    mem = MemTable(1)
    for i, k in enumerate([b"c", b"a", b"b", b"a", b"d"]):
        mem.add(i + 1, k, b"v%d" % i, True)  # keep_old: history, the path that sorts entries
    assert mem.history
    entries = list(mem.sorted_entries())
    assert [(k, s) for k, s, _ in entries] == [(b"a", 4), (b"a", 2), (b"b", 3), (b"c", 1), (b"d", 5)]
    assert len(mem.keys) == 0  # untouched: only a scan under the store's lock merges
    mem._merge_pending()
    assert list(mem.keys) == [b"a", b"b", b"c", b"d"]


def test_batch_record_reuses_put_manys_columns_only_while_they_are_the_batchs():
    """``put_many`` on an empty batch keeps its split columns for the record; any later change
    of the batch (a put, another put_many, append, clear then as many puts) must not reuse them:
    the record is always the per-op encoder's."""
    from bloomdb.lsm import batch as wb, wal

    rng = random.Random(5)
    pairs = [(b"k%05d" % i, rng.randbytes(20)) for i in range(50)]
    other = [(b"o%05d" % i, rng.randbytes(20)) for i in range(50)]

    def same_as_encoder(b):
        rec, puts = wb.record(b, 7)
        assert bytes(rec) == wal.encode_batch(7, b.ops)
        assert list(puts[0]) == [k for k, _ in b.ops] and list(puts[1]) == [v for _, v in b.ops]

    b = WriteBatch().put_many(pairs)
    assert b._cols is not None
    same_as_encoder(b)
    same_as_encoder(b.put(b"x", b"y"))
    same_as_encoder(WriteBatch().put_many(pairs).put_many(other))
    same_as_encoder(WriteBatch().put_many(pairs).append(WriteBatch().put(b"z", b"1")))
    b = WriteBatch().put_many(pairs)
    b.clear()
    for k, v in other:
        b.put(k, v)
    same_as_encoder(b)
