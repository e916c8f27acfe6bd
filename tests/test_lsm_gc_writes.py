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
