"""The one-call point lookup (:mod:`bloomdb.lsm.probe._get_kernels`): ``get`` and ``multi_get`` on
stores of many tables in several levels (overlapping L0 tables, overwrites, deletions,
snapshots) against a dict model, warm and right after a reopen (filters not loaded yet: the
kernel hands the slot to Python; blocks whose CRC32C is not checked yet: Python reads them), and
with compressed blocks (always read in Python), partitioned and mixed-family filters."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from bloomdb.checksum import HW_RANGES
from bloomdb.lsm import DB, WriteBatch
from bloomdb.lsm.probe import _get_kernels as G, layout
from bloomdb.lsm.rangedel import MAX_SEQ

from lsm_helpers import small_options


def _fill(db, rng, n_ops: int, keyspace: int):
    """Random puts/deletes/overwrites in batches and single ops; returns the dict model."""
    model: dict[bytes, bytes] = {}
    for i in range(n_ops):
        k = b"k%06d" % rng.randrange(keyspace)
        r = rng.random()
        if r < 0.15:
            db.delete(k)
            model.pop(k, None)
        elif r < 0.25:
            b = WriteBatch()
            for _ in range(20):
                kk = b"k%06d" % rng.randrange(keyspace)
                v = b"b%d-" % i + kk
                b.put(kk, v)
                model[kk] = v
            db.write(b)
        else:
            v = b"v%d-" % i + k * rng.randrange(1, 4)
            db.put(k, v)
            model[k] = v
    return model


def _check(db, model, keyspace: int, rng):
    probes = [b"k%06d" % i for i in range(keyspace)] + [b"k%06d." % rng.randrange(keyspace) for _ in range(300)]
    rng.shuffle(probes)
    assert [db.get(k) for k in probes] == [model.get(k) for k in probes]
    for s in range(0, len(probes), 700):
        part = probes[s : s + 700]
        assert db.multi_get(part) == [model.get(k) for k in part]


def _levels(db) -> list[int]:
    return db.stats()["tables_per_level"]


@pytest.mark.parametrize("opts", [
    {},
    {"compression": "zstd"},
    {"partitioned_filters": True, "filter_partition_blocks": 2},
    {"filter_per_level": {0: "sbbf:10", 1: "ribbon:10", 2: "scalable:0.01"}},
    {"filter": None},
    {"cache_bytes": 1 << 20},
], ids=["blocked", "zstd", "partitioned", "mixed-families", "no-filter", "cache-bytes"])
def test_get_and_multi_get_match_the_model_on_many_tables_warm_and_after_reopen(tmp_path, opts):
    if opts.get("compression") == "zstd":
        pytest.importorskip("zstandard")
    rng = random.Random(14)
    keyspace = 3000
    o = small_options(background_compaction=False, **opts)
    with DB.open(tmp_path / "db", o) as db:
        model = _fill(db, rng, 6000, keyspace)
        levels = _levels(db)
        assert sum(1 for n in levels if n) >= 2 and sum(levels) >= 5, levels  # many tables, several levels
        _check(db, model, keyspace, rng)  # first reads: lazy filters, unchecked blocks
        _check(db, model, keyspace, rng)  # warm: the kernel answers alone
    with DB.open(tmp_path / "db", o) as db:  # cold again: multi_get first this time
        probes = [b"k%06d" % i for i in range(keyspace)]
        assert db.multi_get(probes) == [model.get(k) for k in probes]
        _check(db, model, keyspace, rng)


def test_snapshot_reads_see_the_versions_of_their_sequence_through_the_kernel(tmp_path):
    rng = random.Random(7)
    o = small_options(background_compaction=False)
    with DB.open(tmp_path / "db", o) as db:
        model = _fill(db, rng, 3000, 1500)
        snap = db.snapshot()
        old = dict(model)
        model2 = _fill(db, rng, 3000, 1500)
        for k, v in model2.items():
            model[k] = v
        db.flush()
        keys = [b"k%06d" % i for i in range(1500)]
        assert [snap.get(k) for k in keys] == [old.get(k) for k in keys]
        assert db.multi_get(keys, snapshot=snap) == [old.get(k) for k in keys]
        snap.close()


def test_the_kernel_hands_over_lazy_filters_and_unchecked_blocks_then_answers_alone(tmp_path):
    o = small_options(background_compaction=False, filter_file=False)  # every table opened (mapped) by the open
    keys = [b"key%05d" % i for i in range(2000)]
    with DB.open(tmp_path / "db", o) as db:
        for i, k in enumerate(keys):
            db.put(k, b"value%d" % i)
        db.flush()
    with DB.open(tmp_path / "db", o) as db:
        ver = db._state[2]
        d, bufs, _, _ = ver.probe()
        k = keys[1234]
        st, s, a, n = G.lookup(d, k, MAX_SEQ, 0)
        if HW_RANGES:  # the kernel reads the table's filter and checks the block itself
            assert (st, bytes(bufs[s][a : a + n])) == (G.VALUE, b"value1234")
            assert ver.slots[s].table.filter_loaded
            d[layout.SLOTS + layout.STRIDE * s + layout.S_KIND] = layout.LAZY  # as a slot the kernel cannot read:
            d[layout.SLOTS + layout.STRIDE * s + layout.S_TFW] = 0
            st, s, _, _ = G.lookup(d, k, MAX_SEQ, 0)
        assert st == G.ASK  # no filter read yet: Python reads it
        assert db.get(k) == b"value1234"  # Python read the filter and the block
        d, bufs, _, _ = ver.refresh_probe()
        st, s, a, n = G.lookup(d, k, MAX_SEQ, 0)
        assert (st, bytes(bufs[s][a : a + n])) == (G.VALUE, b"value1234")
        st2, _, _, _ = G.lookup(d, b"key01234.", MAX_SEQ, 0)
        assert st2 in (G.MISSING, G.READ)  # the filter rules it out (or a false positive)
        before = db.stats()
        assert db.get(k) == b"value1234"
        after = db.stats()
        assert after["data_blocks_read"] == before["data_blocks_read"] + 1
        assert after["table_lookups"] == before["table_lookups"] + 1
        assert after["true_positive"] == before["true_positive"] + 1


def _answer(r) -> tuple:
    """A lookup kernel's answer without the :data:`G.SEEK` flag (a single lookup charges seeks,
    ``probe/seeks.py``, and may flag a spent budget; the batch kernel does not)."""
    st, s, a, n = r
    return st & ~G.SEEK, s, a, n


def test_lookup_many_agrees_with_lookup(tmp_path):
    rng = random.Random(3)
    o = small_options(background_compaction=False)
    with DB.open(tmp_path / "db", o) as db:
        model = _fill(db, rng, 4000, 2000)
        _check(db, model, 2000, rng)  # load every filter, check every block
        ver = db._state[2]
        d, _, _, _ = ver.refresh_probe()
        probes = [b"k%06d" % i for i in range(2000)] + [b"zz", b"", b"k"]
        from bloomdb.lsm.sstable.builder import pack_bytes

        data, off = pack_bytes(probes)
        outs = [np.empty(len(probes), np.int64) for _ in range(4)]
        G.lookup_many(d, data, off, MAX_SEQ, *outs)
        one = [_answer(G.lookup(d, k, MAX_SEQ, 0)) for k in probes]
        assert [tuple(int(o[i]) for o in outs) for i in range(len(probes))] == one


def _plain(r) -> tuple:
    """:func:`_answer` of a lookup, or of the plain get's entry (``None``: no value), with
    ``MISSING`` and ``DELETED`` both read as "no value" (all a plain get needs)."""
    if r is None:
        return ("no value",)
    r = _answer(r)
    return ("no value",) if r[0] in (G.MISSING, G.DELETED) else r


def _as_lookup(r, key, d):
    """The plain get's answer as :func:`G.lookup`'s 4-tuple: a value (``bytes``, boxed by the
    kernel) is located again by ``lookup`` and must be those bytes of its table."""
    if type(r) is not bytes:
        return r
    st, s, a, n = G.lookup(d, key, MAX_SEQ, 0)
    assert st & ~G.SEEK == G.VALUE
    return st, s, a, n


def test_the_plain_get_entry_answers_like_lookup_and_refuses_wrong_types(tmp_path):
    """``DB.get``'s own kernel call (:func:`probe.lookup.newest`: ``lookup_newest`` through its
    compiled entry, no dispatcher) answers like ``lookup`` as of now, for values, deletions,
    missing keys and slots handed over (``None`` for no value: a missing or deleted key); a key
    that is not bytes raises, never crashes."""
    from bloomdb.lsm.probe import lookup as L

    rng = random.Random(11)
    o = small_options(background_compaction=False)
    assert G.NEWEST == MAX_SEQ
    with DB.open(tmp_path / "db", o) as db:
        model = _fill(db, rng, 4000, 2000)
        db.flush()
    with DB.open(tmp_path / "db", o) as db:
        ver = db._state[2]
        probes = [b"k%06d" % i for i in range(2000)] + [b"k%06d." % i for i in range(300)] + [b"", b"zz"]
        d, _, at, _ = ver.probe()  # the entry takes the directory by address (d holds it)
        for s in range(0, len(ver.slots), 2):  # these tables' filters are read by Python (ASK)
            d[layout.SLOTS + layout.STRIDE * s + layout.S_TFW] = 0
        first = [_plain(_as_lookup(L.newest(at, k), k, d)) for k in probes]  # cold: ASK/CHECK hand-overs included
        assert first == [_plain(G.lookup(d, k, MAX_SEQ, 0)) for k in probes]
        assert {st for st, *_ in first} & {G.ASK, G.CHECK, G.READ}
        assert [db.get(k) for k in probes] == [model.get(k) for k in probes]
        ver.refresh_probe()
        d, _, at, _ = ver.probe()
        warm = [_plain(_as_lookup(L.newest(at, k), k, d)) for k in probes]
        for k in probes:  # a value comes boxed by the kernel, as bytes
            v = L.newest(at, k)
            if type(v) is bytes:
                assert v == model[k]
            elif v is None:
                assert model.get(k) is None
            else:  # handed over only with a spent seek budget's flag (warm: every filter read, every block checked)
                assert v[0] & G.SEEK
                d[layout.SEEK_DUE] = 0
        assert warm == [_plain(G.lookup(d, k, MAX_SEQ, 0)) for k in probes]
        assert {st for st, *_ in warm} >= {G.VALUE, "no value"}
        d[layout.SEEK_DUE] = 0  # (a spent seek budget flags every answer until Python clears it)
        assert L.newest(at, b"zz") is None  # a missing key: nothing boxed
        assert L.newest is not G.lookup_newest  # the compiled entry took the name's place
        for bad in ("k000001", 7, None, bytearray(b"k000001")):
            with pytest.raises(TypeError):
                L.newest(at, bad)
        assert [db.get(k) for k in probes] == [model.get(k) for k in probes]


def _one_table_store(path, keys):
    o = small_options(background_compaction=False, memtable_bytes=1 << 20, table_bytes=1 << 20, filter_file=False)
    with DB.open(path, o) as db:
        for i, k in enumerate(keys):
            db.put(k, b"value%d" % i)
        db.flush()
    return o


def _lookup_past_the_filter(ver, k):
    """``G.lookup`` of ``k`` after the Python side read the filters it asks for (``ASK``)."""
    while True:
        d, _, _, _ = ver.refresh_probe()
        r = _answer(G.lookup(d, k, MAX_SEQ, 0))
        if r[0] != G.ASK:
            return r
        ver.directory.check_many(r[1], [k])


def test_a_blocks_first_read_is_checked_in_the_kernel(tmp_path):
    """On a host with the CRC32C instruction the lookup kernel checks a raw block's CRC32C on its
    first read itself and marks it checked (no ``CHECK`` hand-over to Python: ~5-10 us each,
    one per block after a reopen); elsewhere it hands the block over as before."""
    from bloomdb.checksum import HW_RANGES

    keys = [b"k%06d" % i for i in range(3000)]
    o = _one_table_store(tmp_path / "db", keys)
    with DB.open(tmp_path / "db", o) as db:
        ver = db._state[2]
        ver.probe()
        (ref,) = ver.slots
        t = ref.table
        assert not t._checked.any()
        st, s, a, n = _lookup_past_the_filter(ver, keys[1500])
        if HW_RANGES:
            assert st == G.VALUE and bytes(ver.probe()[1][s][a : a + n]) == b"value1500"
            assert t._checked.sum() == 1
        else:
            assert st == G.CHECK
        assert db.multi_get(keys[::7]) == [b"value%d" % i for i in range(0, 3000, 7)]
        assert [db.get(k) for k in keys[::5]] == [b"value%d" % i for i in range(0, 3000, 5)]


def test_the_kernel_keeps_a_blocks_restart_keys_after_its_first_read(tmp_path):
    """The lookup kernel writes a block's hint (its restart keys' prefix words) into the table's
    read state on the block's first read, after the checked flags, and later reads go through it
    with the same answers; blocks never read have none."""
    from bloomdb.checksum import HW_RANGES
    from bloomdb.lsm.sstable import _block_kernels as BK, _table_kernels as TK

    keys = [b"k%06d" % i for i in range(3000)]
    o = _one_table_store(tmp_path / "db", keys)
    with DB.open(tmp_path / "db", o) as db:
        ver = db._state[2]
        ver.probe()
        t = ver.slots[0].table
        st, s, a, n = _lookup_past_the_filter(ver, keys[1500])
        nb = int(t._index[0])
        words = t._state[TK.hint_pos(nb, 0) :].view(np.uint64).reshape(nb, BK.HINT_WORDS)
        if not HW_RANGES:
            assert st == G.CHECK and not words.any()
            return
        (blk,) = np.flatnonzero(t._checked).tolist()
        assert np.flatnonzero(words[:, 0]).tolist() == [blk] and words[blk, 0] != BK.HINT_NONE
        assert 1 <= int(words[blk, 0]) & 0xFF <= BK.HINT_RESTARTS
        assert [db.get(k) for k in keys] == [b"value%d" % i for i in range(3000)]
        assert db.get(b"k001500x") is None and db.get(b"k0015") is None
        assert (words[:, 0] != 0).all()  # every block read once has its hint


@pytest.mark.parametrize("count", [5, 300, 3000])
def test_the_hinted_table_read_finds_the_blocks_and_answers_of_the_plain_one(tmp_path, count):
    """``table_get_hinted`` (the index searched by groups of blocks, the group's hint lines asked
    for first; then the block through its hint) gives ``table_get``'s block and answer for every
    key: present, between two keys, before the first, past the last -- tables of one block, a
    few and many (every group boundary of the index search)."""
    from bloomdb.lsm.sstable import _table_kernels as TK

    keys = [b"k%06d" % (3 * i) for i in range(count)]
    o = _one_table_store(tmp_path / "db", keys)
    with DB.open(tmp_path / "db", o) as db:
        t = db._state[-1].slots[0].table
        assert [db.get(k) for k in keys] == [b"value%d" % i for i in range(count)]  # every block checked
        buf, idx, state = t.lookup_arrays()
        assert int(idx[0]) > (2 * TK.HINT_GROUP if count == 3000 else 0)
        probes = [b"", b"a", b"k", b"z"] + [k[:-1] + d for k in keys for d in (b"", b"0", b"1", b"2", b"3", b"9")]
        for k in probes:
            assert TK.table_get_hinted(buf, idx, state, k, MAX_SEQ) == TK.table_get(buf, idx, t._checked, k, MAX_SEQ), k


def test_a_damaged_block_is_handed_to_python_and_raises(tmp_path):
    """A block whose CRC32C does not match is never marked checked by the kernel: it goes to
    Python (``CHECK``), which raises CorruptionError naming the file; other blocks still read."""
    from bloomdb.errors import CorruptionError

    keys = [b"k%06d" % i for i in range(3000)]
    o = _one_table_store(tmp_path / "db", keys)
    (name,) = [f for f in os.listdir(tmp_path / "db") if f.endswith(".sst")]
    path = tmp_path / "db" / name
    raw = bytearray(path.read_bytes())
    raw[20] ^= 0x40  # inside the first data block (keys k000000...)
    path.write_bytes(bytes(raw))
    with DB.open(tmp_path / "db", o) as db:
        ver = db._state[2]
        ver.probe()
        t = ver.slots[0].table
        assert _lookup_past_the_filter(ver, keys[1])[0] == G.CHECK
        assert not t._checked.any()
        with pytest.raises(CorruptionError, match=name):
            db.get(keys[1])
        assert db.get(keys[2500]) == b"value2500"
