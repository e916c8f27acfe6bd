"""The write path and Python's cyclic garbage collector: what a write leaves for it to look at.

Every *tracked* object (tuples, lists, iterators, ...) a write allocates counts towards the
collector's next young-generation pass, and whatever is alive during one of those passes is
promoted; enough promotions set off a FULL collection, which visits every tracked object of the
process (0.1-0.2 s in a process holding a few lists of a million keys: db-bench's). LevelDB's
binding allocates no tracked object per put, so it never sets the collector off. These tests
count, with the collector made to run after every tracked allocation, the tracked objects a
write keeps alive long enough to be seen by a pass (counts, not times; the store itself never
touches the collector's settings: the tests do, and restore them).
"""

from __future__ import annotations

import contextlib
import gc
from collections import Counter

from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm.fs import RealFS


@contextlib.contextmanager
def young_objects_seen():
    """A Counter of the type names of the tracked objects alive in the youngest generation at the
    start of each collector pass while the block runs, the collector set to run a young pass at
    every second net tracked allocation (older generations never collected meanwhile)."""
    seen: Counter = Counter()

    def hook(phase, info):
        if phase == "start" and info["generation"] == 0:
            for o in gc.get_objects(generation=0):  # a loop, not a generator: nothing of its own to see
                seen[type(o).__name__] += 1

    old = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.collect()
    gc.callbacks.append(hook)
    gc.set_threshold(1, 1 << 30, 1 << 30)
    gc.enable()
    try:
        yield seen
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(hook)
        if not was_enabled:
            gc.disable()


def _opts() -> Options:
    return Options(fs=RealFS(fsync=False), background_compaction=False, memtable_bytes=64 << 20)


def _pairs(n: int, tag: bytes = b"") -> list[tuple[bytes, bytes]]:
    return [(b"%016d" % i + tag, b"v" * 100) for i in range(n)]


def test_a_batch_of_puts_allocates_no_tracked_temporary_per_operation(tmp_path):
    """A 1000-put batch built by ``put_many`` and written: the only tracked objects per operation
    are the memtable's entries (one each); on main before this test, ``zip(*ops)`` in
    ``put_many`` and in the WAL record made 2000 tuple iterators more, alive all at once."""
    n = 1000
    with DB.open(tmp_path / "s", _opts()) as db:
        db.write(WriteBatch().put_many(_pairs(n, b"w")))  # first write: lazy set-ups out of the count
        pairs = _pairs(n)
        with young_objects_seen() as seen:
            db.write(WriteBatch().put_many(pairs))
        assert db.get(pairs[7][0]) == pairs[7][1]
    assert seen["tuple_iterator"] == 0, seen.most_common(5)
    assert sum(seen.values()) <= n + 100, seen.most_common(5)


def test_puts_allocate_no_tracked_object(tmp_path):
    """1000 single puts and a 1000-put batch leave nothing for the collector: the memtable keeps
    the value itself, no ``(seq, value)`` tuple per key (on main before this test: one tracked
    tuple per put, ~1.2 young passes per 1000 puts)."""
    n = 1000
    with DB.open(tmp_path / "s", _opts()) as db:
        db.put(b"warm", b"up")
        db.write(WriteBatch().put_many(_pairs(n, b"w")))
        pairs, more = _pairs(n), _pairs(n, b"b")
        with young_objects_seen() as seen:
            for k, v in pairs:
                db.put(k, v)
            db.write(WriteBatch().put_many(more))
        assert db.get(pairs[5][0]) == pairs[5][1] and db.get(more[5][0]) == more[5][1]
    assert sum(seen.values()) <= 60, seen.most_common(5)


class _OtherFS(RealFS):
    """Real files, but not the plain real file system: every flush packs the memtable's dict
    (:mod:`bloomdb.lsm.logrun` reads the log only on ``RealFS``), so tables get the memtable's
    reported sequences."""


def _dict_flush_opts(**kw) -> Options:
    return Options(fs=_OtherFS(fsync=False), background_compaction=False, memtable_bytes=1 << 20, **kw)


def test_fast_writes_between_snapshots_keep_every_snapshots_view(tmp_path):
    """A key written by the fast path (no sequence recorded) between two snapshots: each
    snapshot sees its own version, in the memtable, after a flush of the dict and after a
    compaction."""
    with DB.open(tmp_path / "s", _dict_flush_opts()) as db:
        db.put(b"k", b"v1")  # fast path: reports the memtable's base
        s1 = db.snapshot()
        db.put(b"k", b"v2")  # general path (a snapshot is live): recorded, v1 kept for s1
        s1.close()
        db.put(b"k", b"v3")  # fast path again: the recorded sequence is v2's (a lower bound)
        db.write(WriteBatch().put_many([(b"k", b"v3b"), (b"j", b"j1")] * 4))  # the batch fast path
        s2 = db.snapshot()
        db.put(b"k", b"v4")
        db.delete(b"j")
        s3 = db.snapshot()
        db.put(b"j", b"j2")
        for _ in range(2):
            assert (s2.get(b"k"), s2.get(b"j")) == (b"v3b", b"j1")
            assert (s3.get(b"k"), s3.get(b"j")) == (b"v4", None)
            assert (db.get(b"k"), db.get(b"j")) == (b"v4", b"j2")
            assert list(db.scan(snapshot=s2)) == [(b"j", b"j1"), (b"k", b"v3b")]
            assert db.multi_get([b"j", b"k"], snapshot=s3) == [None, b"v4"]
            db.flush()  # the dict's versions, reported sequences, into a table
        db.compact_range()
        assert (s2.get(b"k"), s2.get(b"j"), s3.get(b"j"), db.get(b"j")) == (b"v3b", b"j1", None, b"j2")
        s2.close()
        s3.close()
    with DB.open(tmp_path / "s", _dict_flush_opts()) as db:
        assert list(db.scan()) == [(b"j", b"j2"), (b"k", b"v4")]


def test_a_range_tombstone_in_the_memtable_records_every_later_write(tmp_path):
    """Writes before a range tombstone of the same memtable are hidden by it, writes after it are
    not (recorded: the fast path is closed while the memtable holds a tombstone), in the memtable,
    after a flush of the dict and after reopening; the next memtable reopens the fast path."""
    with DB.open(tmp_path / "s", _dict_flush_opts()) as db:
        db.put(b"a01", b"old")
        db.write(WriteBatch().put_many([(b"a%02d" % i, b"old") for i in range(2, 12)]))
        assert db._mem_limit == 0 and db._mem.pending_keys  # the batch's puts kept aside (MemTable.defer)
        assert db.get(b"a02") == b"old"  # a read inserts them into the dict, the put fast path opens again
        assert db._mem_limit > 0 and not db._mem.pending_keys
        db.delete_range(b"a01", b"a05")
        assert db._mem_limit == 0
        db.put(b"a02", b"new")
        db.write(WriteBatch().put_many([(b"a03", b"new")] * 9))
        want = [(b"a02", b"new"), (b"a03", b"new")] + [(b"a%02d" % i, b"old") for i in range(5, 12)]
        for _ in range(2):
            assert list(db.scan()) == want
            assert db.multi_get([b"a01", b"a02", b"a03", b"a04"]) == [None, b"new", b"new", None]
            db.flush()
        assert db._mem_limit > 0  # a new memtable without tombstones
        db.compact_range()
        assert list(db.scan()) == want
    with DB.open(tmp_path / "s", _dict_flush_opts()) as db:
        assert list(db.scan()) == want


def test_model_with_every_flush_packing_the_dict(tmp_path):
    """The model check (puts, batches, deletes, range deletes, snapshots, reopens, tiny
    memtables) with tables written from the memtable's reported sequences."""
    from bloomdb.bench import stress

    from lsm_helpers import small_options

    problems: list[str] = []
    for seed, bg in ((21, False), (22, True)):
        bad = stress.model_check(str(tmp_path / f"m{seed}"), 6000, seed, report=problems.append,
                                 options=small_options(fs=_OtherFS(fsync=False), background_compaction=bg))
        assert bad == 0, problems[:10]


def test_a_snapshot_reader_interleaved_with_a_write_sees_its_own_version(tmp_path):
    """Readers take no lock: one running between the two stores of a write made while a snapshot
    is live (the sequence, then the value) must still answer the snapshot's version. A dict that
    reads through the snapshot right before and right after the value lands plays that reader."""
    with DB.open(tmp_path / "s", _opts()) as db:
        db.put(b"k", b"old")  # the fast path: no sequence recorded
        s = db.snapshot()
        mem = db._mem
        seen = []

        class Interleaved(dict):
            def __setitem__(self, key, value):
                seen.append(mem.value(key, s.seq))
                super().__setitem__(key, value)
                seen.append(mem.value(key, s.seq))

        mem.latest = Interleaved(mem.latest)
        db._regate()  # the get gate holds the memtable's dict, which the store itself never replaces
        db.put(b"k", b"new")
        db.delete(b"k")
        assert seen == [b"old"] * 4
        assert (s.get(b"k"), db.get(b"k")) == (b"old", None)
        s.close()
