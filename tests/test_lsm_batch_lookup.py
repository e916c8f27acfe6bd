"""``multi_get``'s batch kernel (:mod:`bloomdb.lsm.probe._batch_kernels`): filter lines of a chunk
of keys probed with their loads overlapped, every key a filter lets through (or a table the
kernel cannot probe) looked up in full. Pinned to a dict model (memtable, several levels and L0
tables, snapshots, deletes; filters that say "may contain" often, another family, none) and to
the one-key-at-a-time kernel :func:`._get_kernels.lookup_many` (answers and counters alike)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bloomdb.lsm import DB
from bloomdb.lsm.keylist import memtables_disjoint
from bloomdb.lsm.memtable import MemTable
from bloomdb.lsm.probe import _get_kernels as G
from bloomdb.lsm.probe._batch_kernels import CHUNK, lookup_batch
from bloomdb.lsm.probe.layout import COUNTERS

from lsm_helpers import small_options

KEYS = 400
_op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, KEYS - 1), st.integers(0, 9)),
    st.tuples(st.just("del"), st.integers(0, KEYS - 1)),
    st.tuples(st.just("puts"), st.integers(0, KEYS - 1), st.integers(1, 120)),
    st.sampled_from([("flush",), ("compact",), ("snap",)]),
)


def _key(i: int) -> bytes:
    return b"k%04d" % i


def _queries() -> list[bytes]:
    """Present and absent keys: each key, the key plus "." (inside the tables' ranges), ends."""
    return [b"a", b"zz"] + [q for i in range(KEYS) for q in (_key(i), _key(i) + b".")]


def _apply(db, model, snaps, op) -> None:
    kind = op[0]
    if kind == "put":
        model[_key(op[1])] = v = b"v%d-%d" % (op[1], op[2])
        db.put(_key(op[1]), v)
    elif kind == "puts":
        for i in range(op[1], min(KEYS, op[1] + op[2])):
            model[_key(i)] = v = b"p%d" % i
            db.put(_key(i), v)
    elif kind == "del":
        model.pop(_key(op[1]), None)
        db.delete(_key(op[1]))
    elif kind == "flush":
        db.flush()
    elif kind == "compact":
        db.compact_range()
    else:
        snaps.append((db.snapshot(), dict(model)))


def _kernels_agree(db, keys: list[bytes]) -> None:
    """lookup_batch and lookup_many: same rows, same counter increments, on this version."""
    ver = db._state[2]  # held while its directory goes to the kernels (it points into its tables)
    d = ver.probe()[0]
    data = np.frombuffer(b"".join(keys), np.uint8)
    lens = np.array([len(k) for k in keys], np.int64)
    offs = np.zeros(len(keys) + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    for snap in (G.NEWEST, 1, 50):
        want = np.empty((4, len(keys)), np.int64)
        c0 = d[COUNTERS].copy()
        G.lookup_many(d, data, offs, snap, *want)
        c1 = d[COUNTERS].copy()
        got = np.full((4, len(keys)), -7, np.int64)
        n = lookup_batch(d, data, lens if snap != 1 else lens.astype(np.uint16), snap, got)  # any integer lengths
        c2 = d[COUNTERS].copy()
        assert np.array_equal(got, want)
        assert n == int(np.count_nonzero(want[0] != G.MISSING))
        assert np.array_equal(c2 - c1, c1 - c0)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=80), spec=st.sampled_from(["blocked:10", "blocked:1", "leveldb:10", None]))
def test_multi_get_matches_a_dict_model(tmp_path_factory, ops, spec):
    path = tmp_path_factory.mktemp("mget") / "db"
    model, snaps = {}, []
    with DB.open(path, small_options(filter=spec, background_compaction=False)) as db:
        for op in ops:
            _apply(db, model, snaps, op)
        qs = _queries()
        assert db.multi_get(qs) == [model.get(k) for k in qs]
        mem = db._state[0].latest
        outside = [k for k in qs if k not in mem]  # no memtable hit: the batch kernel answers all of them
        assert db.multi_get(outside, default=b"-") == [model.get(k, b"-") for k in outside]
        for s, m in snaps:
            assert db.multi_get(qs, snapshot=s) == [m.get(k) for k in qs]
            assert db.multi_get(outside, snapshot=s) == [m.get(k) for k in outside]
        _kernels_agree(db, qs)
        for s, _ in snaps:
            s.close()


def test_batch_kernel_over_l0_and_levels_and_chunk_edges(tmp_path):
    """L0 tables over levels (no compaction between flushes), batches around the chunk size."""
    with DB.open(tmp_path / "db", small_options(filter="blocked:4", background_compaction=False, max_flush_level=0)) as db:
        for i in range(3000):
            db.put(_key(i), b"v%d" % i)
        db.compact_range()
        for r in range(3):  # overlapping L0 tables, newest first
            for i in range(r, 3000, 5):
                db.put(_key(i), b"r%d-%d" % (r, i))
            if r == 2:  # after its put of key 7 in this round
                db.delete(_key(7))
            db.flush()
        assert db.stats()["tables_per_level"][0] >= 2
        model = {_key(i): b"v%d" % i for i in range(3000)}
        for r in range(3):
            model.update({_key(i): b"r%d-%d" % (r, i) for i in range(r, 3000, 5)})
        model.pop(_key(7))
        qs = [q for i in range(3000) for q in (_key(i) + b".", _key(i))]
        for n in (1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5, len(qs)):
            assert db.multi_get(qs[:n]) == [model.get(k) for k in qs[:n]]
        _kernels_agree(db, qs)
        _kernels_agree(db, qs[1::2])


def test_batch_kernel_keys_that_tie_on_the_prefix_words(tmp_path):
    """Keys whose first 16 bytes are alike (the kernel compares the two prefix words first and
    must fall back to the full key on a tie: table bounds, level searches), keys shorter than 16
    bytes and keys ending in zero bytes (zero-padded words tie with a shorter key), over several
    levels of many small tables and L0 tables."""
    head = b"sixteen-byte-hd!"
    keys = [head + b"%05d" % i for i in range(0, 4000, 2)] + [b"k%d" % i for i in range(0, 400, 3)]
    keys += [b"z" * (i % 17) + b"\0" * (i % 3) for i in range(1, 60)]
    model = {}
    with DB.open(tmp_path / "db", small_options(filter="blocked:10", background_compaction=False, max_flush_level=0)) as db:
        for n, k in enumerate(keys):
            model[k] = v = b"v%d" % n
            db.put(k, v)
        db.compact_range()
        for r in range(3):  # overlapping tables over the levels (L0 from the second on)
            for k in keys[r::7]:
                model[k] = v = b"w%d" % r + k
                db.put(k, v)
            for k in keys[3 + r::11]:
                model.pop(k, None)
                db.delete(k)
            db.flush()
        levels = db.stats()["tables_per_level"]
        assert levels[0] >= 1 and sum(levels[1:]) >= 8, levels
        qs = [head, head[:-1], head + b"\0", b"", b"\0", b"z" * 20] + [
            q for k in keys for q in (k, k + b"\0", k[:-1], k + b"0")]
        assert db.multi_get(qs) == [model.get(k) for k in qs]
        _kernels_agree(db, qs)


def test_memtables_disjoint_sees_both_memtables():
    mem, imm = MemTable(), MemTable()
    keys = [b"a", b"b"]
    assert memtables_disjoint(mem, None, keys) and memtables_disjoint(mem, imm, keys)
    imm.add(1, b"b", None, False)  # a tombstone is a memtable answer too
    assert not memtables_disjoint(mem, imm, keys)
    assert memtables_disjoint(mem, imm, [b"c"])
    mem.add(2, b"a", b"x", False)
    assert not memtables_disjoint(mem, None, keys)
    assert memtables_disjoint(mem, None, [])
