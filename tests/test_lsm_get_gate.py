"""``DB.get``'s gate (``DB._quick``, set by ``WritePath._regate``): a plain get reads only the
memtable's dict and the version's tables while the state needs nothing else, and takes the full
path -- fold batch puts kept aside, range tombstones, the immutable memtable, snapshots -- as soon
as it does; every reader sees every write that returned before it began."""

from __future__ import annotations

import threading

import pytest

from bloomdb.errors import StoreClosed
from bloomdb.lsm import DB, WriteBatch

from lsm_helpers import small_options


def _gate_open(db) -> bool:
    q = db._quick
    if q is None:
        return False
    mem, imm, ver = db._state
    assert q[0] is mem.latest and q[1] is ver and imm is None  # the gate is the current state's
    return True


def test_the_gate_closes_for_what_a_plain_get_must_look_at_and_opens_again(tmp_path):
    o = small_options(background_compaction=False, memtable_bytes=1 << 20)
    model = {}
    with DB.open(tmp_path / "db", o) as db:

        def check():
            for i in range(40):
                k = b"k%02d" % i
                assert db.get(k) == model.get(k), k
                assert db.get(k + b".") is None

        for i in range(0, 40, 2):
            db.put(b"k%02d" % i, b"p%d" % i)
            model[b"k%02d" % i] = b"p%d" % i
        assert _gate_open(db)
        check()
        db.flush()
        assert _gate_open(db)
        check()
        db.write(WriteBatch().put_many([(b"k%02d" % i, b"b%d" % i) for i in range(10)]))  # kept aside
        model.update({b"k%02d" % i: b"b%d" % i for i in range(10)})
        assert db._mem.pending_keys and not _gate_open(db)
        assert db.get(b"k03") == b"b3"  # the full path folds them in ...
        assert _gate_open(db)  # ... and opens the gate again
        check()
        db.delete_range(b"k10", b"k20")  # a range tombstone in the memtable
        for i in range(10, 20):
            model.pop(b"k%02d" % i, None)
        assert not _gate_open(db)
        check()
        db.put(b"k15", b"after")  # newer than the tombstone
        model[b"k15"] = b"after"
        check()
        db.flush()  # the tombstone in a table now: the version carries it
        assert db._state[2].range_dels and not _gate_open(db)
        check()
        snap = db.snapshot()
        db.put(b"k00", b"new")
        assert db.get(b"k00", snapshot=snap) == model[b"k00"]
        model[b"k00"] = b"new"
        check()
        snap.close()
        db.compact_range()  # the tombstone reaches the last level and is dropped with what it covers
        if not db._state[2].range_dels:
            assert _gate_open(db)
        check()
    with pytest.raises(StoreClosed):
        db.get(b"k00")
    assert db._quick is None


def test_a_get_sees_every_write_that_returned_before_it(tmp_path):
    """A writer writes batches (kept aside), single puts and flushes (memtable switches, tables
    installed by the flush thread); a reader checks each key's value is at least as new as the
    last write that had returned when its get began."""
    o = small_options(memtable_bytes=1 << 20)
    keys = [b"key%03d" % i for i in range(64)]
    done = [0]
    errors = []
    stop = threading.Event()

    with DB.open(tmp_path / "db", o) as db:
        for k in keys:
            db.put(k, b"0")

        def writer():
            try:
                for i in range(1, 1000):
                    if i % 150 == 0:
                        db.flush()
                    if i % 5 == 0:
                        for k in keys[:8]:
                            db.put(k, b"%d" % i)
                        db.write(WriteBatch().put_many([(k, b"%d" % i) for k in keys[8:]]))
                    else:
                        db.write(WriteBatch().put_many([(k, b"%d" % i) for k in keys]))
                    done[0] = i
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)
            finally:
                stop.set()

        t = threading.Thread(target=writer)
        t.start()
        n = 0
        while not stop.is_set() or n == 0:
            seen = done[0]
            k = keys[n % len(keys)]
            v = db.get(k)
            assert v is not None and int(v) >= seen, (k, v, seen)
            n += 1
        t.join()
        assert not errors
        assert [db.get(k) for k in keys] == [b"999"] * len(keys)
