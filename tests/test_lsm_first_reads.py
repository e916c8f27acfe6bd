"""Reads right after a reopen (issue 14): a table's filter is read in place from its mapped file
and the probe directory points at it -- nothing copied, so the first lookup of a table touches no
new memory and the filters are held once (not once by the table and again in the directory)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from bloomdb import filters
from bloomdb.errors import CorruptionError, InvalidArgument, StaticFilterError
from bloomdb.lsm import DB
from bloomdb.lsm.probe import layout as L

from lsm_helpers import small_options

KEYS = [b"key%06d" % i for i in range(3000)]


def _store(tmp_path, **kw):
    p = str(tmp_path / "db")
    opts = small_options(background_compaction=False, memtable_bytes=1 << 16, **kw)
    with DB.open(p, opts) as db:
        for k in KEYS:
            db.put(k, b"v" * 50)
        db.flush()
    return p, opts


def _slots(db):
    """``(directory array, [(word of slot s, its table), ...])`` of the store's current version."""
    ver = db._state[2]
    return ver.directory.array, [(L.SLOTS + L.STRIDE * s, ref.table) for s, ref in enumerate(ver.slots)]


def test_the_directory_points_at_each_filter_inside_its_tables_mapped_file(tmp_path):
    p, opts = _store(tmp_path, filter_file=False)  # every table mapped at open (the filter file's copies: test_lsm_filter_file.py)
    with DB.open(p, opts) as db:
        assert all(db.get(k) == b"v" * 50 for k in KEYS[::7])
        assert all(db.get(k + b"x") is None for k in KEYS[::7])
        d, slots = _slots(db)
        checked = 0
        for b, t in slots:
            if d[b + L.S_KIND] != L.FILTER:
                continue
            rec = b + L.S_REC
            assert d[rec + L.R_FAM] >= L.F_MAPPED
            start = t._arr.ctypes.data
            h = t._handles
            addr = int(d[rec + L.R_OFF])
            assert start + h.filter_off <= addr < start + h.filter_off + h.filter_size  # in place, in the map
            checked += 1
        assert checked == len(slots) > 1
        st = db.stats()
        # held once: the filters read (all of them here) are at most their bytes on disk
        assert 0 < st["filter_memory_bytes"] <= st["filter_bytes"]


def test_a_damaged_filter_read_in_place_still_fails_open_and_a_damaged_block_still_raises(tmp_path):
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        ref = db._state[2].slots[0]
        h = ref.table._handles
        path = ref.table.path
        first = ref.table.meta.min_key
    with open(path, "r+b") as f:  # flip a byte of the filter's payload (its block CRC then fails)
        f.seek(h.filter_off + h.filter_size - 8)
        b = f.read(1)
        f.seek(h.filter_off + h.filter_size - 8)
        f.write(bytes([b[0] ^ 0xFF]))
    with DB.open(p, opts) as db:
        assert all(db.get(k) == b"v" * 50 for k in KEYS)  # fail open: every key still found
        assert db.stats()["filters_damaged"] >= 1
    with open(path, "r+b") as f:  # now a data block: the first one
        f.seek(10)
        b = f.read(1)
        f.seek(10)
        f.write(bytes([b[0] ^ 0xFF]))
    with DB.open(p, opts) as db:
        with pytest.raises(CorruptionError, match=os.path.basename(path)):
            db.get(first)


def test_from_bytes_without_a_copy_reads_the_payload_in_place_and_is_read_only():
    f = filters.create("blocked:10", capacity=1000)
    f.add_many([b"a%d" % i for i in range(500)])
    data = bytearray(f.to_bytes())
    g = filters.from_bytes(data, copy=False)
    arr = g.probe_descriptor().args[0]
    assert np.shares_memory(arr, np.frombuffer(data, np.uint8))
    assert all(g.might_contain(b"a%d" % i) for i in range(500))
    assert g.might_contain_many([b"a%d" % i for i in range(500)]).all()
    with pytest.raises(StaticFilterError):
        g.add(b"x")
    with pytest.raises(InvalidArgument):
        filters.from_bytes(bytes(data), copy=False)  # read-only bytes: the kernels need writable arrays
    c = filters.from_bytes(bytes(data))  # the default still copies
    assert not np.shares_memory(c.probe_descriptor().args[0], np.frombuffer(data, np.uint8))


def _replay_by_read_log(data: bytes, paranoid: bool = True):
    """The memtable and last sequence that :func:`wal.read_log` alone gives (the general path)."""
    from bloomdb.lsm import wal
    from bloomdb.lsm.memtable import MemTable

    mem, last, ends = MemTable(), 0, []
    for first, ops in wal.read_log(data, "x", paranoid, [], ends):
        mem.apply(first, ops, True)
        last = first + len(ops) - 1
    return mem, last, ends


@pytest.mark.parametrize("tail", ["clean", "zeros", "torn", "damaged"])
def test_replay_takes_leading_single_puts_in_one_kernel_call_and_reads_like_read_log(tmp_path, tail):
    """:func:`recovery.replay` replays a log's leading single puts through one kernel call, then
    :func:`wal.read_log` goes on: the memtable (versions, history), the last sequence and the
    log's clean end are what ``read_log`` alone gives, for every kind of tail."""
    import random

    from bloomdb.lsm import recovery, wal
    from bloomdb.lsm.fs import RealFS

    rng = random.Random(7)
    recs, seq = [], 1
    for i in range(500):  # single puts (some overwrite: history), then a mix
        k = b"k%03d" % rng.randrange(300)
        v = rng.randbytes(rng.choice([0, 1, 100, 5000]))
        if i < 300 or rng.random() < 0.5:
            recs.append(wal.encode_put(seq, k, v))
            seq += 1
        elif rng.random() < 0.5:
            recs.append(wal.encode_put(seq, k, None))
            seq += 1
        else:
            ops = [(k, v), (k + b"x", None)]
            recs.append(wal.encode_batch(seq, ops))
            seq += 2
    data = b"".join(recs)
    if tail == "zeros":
        data += bytes(8192)
    elif tail == "torn":
        data += recs[0][:10]
    elif tail == "damaged":  # a flipped byte in record 100 (a single put): intact ones follow
        at = sum(map(len, recs[:100])) + 30
        data = data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]
    (tmp_path / "000007.log").write_bytes(data)
    for paranoid in (True, False):
        if tail == "damaged" and paranoid:
            with pytest.raises(CorruptionError):
                recovery.replay(RealFS(fsync=False), str(tmp_path), [7], True, 0, [])
            with pytest.raises(CorruptionError):
                _replay_by_read_log(data, True)
            continue
        ends: list = []
        mem, last = recovery.replay(RealFS(fsync=False), str(tmp_path), [7], paranoid, 0, ends)
        want, want_last, want_ends = _replay_by_read_log(data, paranoid)
        assert mem.latest == want.latest and mem.history == want.history and mem.bytes == want.bytes
        assert mem.seqs == want.seqs  # every replayed write's sequence recorded (bloomdb.lsm.memtable)
        assert (last, ends) == (want_last, want_ends)
        assert len(mem.latest) > 50
    from bloomdb.checksum import HW_RANGES
    from bloomdb.lsm import _replay_kernels as RK

    if HW_RANGES:  # the kernel took the leading single puts (up to the damage, if any)
        n, end = RK.single_puts(np.frombuffer(data, np.uint8), 0, np.empty((600, 5), np.int64))
        assert (n == 100) if tail == "damaged" else (n >= 300 and end == sum(map(len, recs[:n])))


def test_replay_of_a_log_of_distinct_puts_is_one_dict_update_and_reads_like_read_log(tmp_path, monkeypatch):
    """A log of single puts of distinct keys (what a fill leaves in its last log) is replayed
    into the memtable without one ``MemTable.add`` call per record (counted); a second log that
    writes some of the same keys again goes record by record, keeping the older versions in
    ``history``: both memtables are what ``read_log`` record by record gives."""
    from bloomdb.checksum import HW_RANGES
    from bloomdb.lsm import recovery, wal
    from bloomdb.lsm.fs import RealFS
    from bloomdb.lsm.memtable import MemTable

    if not HW_RANGES:
        pytest.skip("the replay kernel runs only with the SSE4.2 CRC32C kernel")
    first = b"".join(wal.encode_put(1 + i, b"k%05d" % i, b"v%d" % i * (i % 7)) for i in range(2000))
    again = b"".join(wal.encode_put(2001 + i, b"k%05d" % (3 * i), b"w%d" % i) for i in range(1000))
    (tmp_path / "000007.log").write_bytes(first)
    (tmp_path / "000008.log").write_bytes(again)
    calls = []
    add = MemTable.add
    monkeypatch.setattr(MemTable, "add", lambda self, *a: (calls.append(a[0]), add(self, *a))[1])
    mem, last = recovery.replay(RealFS(fsync=False), str(tmp_path), [7], True, 0, [])
    assert calls == [] and last == 2000
    want, want_last, _ = _replay_by_read_log(first)
    assert (mem.latest, mem.seqs, mem.history, mem.bytes) == (want.latest, want.seqs, want.history, want.bytes)
    assert list(mem.latest) == list(want.latest)  # insertion order: the memtable's key merge relies on it
    calls.clear()
    mem, last = recovery.replay(RealFS(fsync=False), str(tmp_path), [7, 8], True, 0, [])
    assert last == 3000 and len(calls) == 1000  # keys seen before: record by record
    monkeypatch.setattr(MemTable, "add", add)
    want = MemTable()
    for first_seq, ops in list(wal.read_log(first, "x", True, [], [])) + list(wal.read_log(again, "y", True, [], [])):
        want.apply(first_seq, ops, True)
    assert (mem.latest, mem.seqs, mem.history, mem.bytes) == (want.latest, want.seqs, want.history, want.bytes)
    assert len(mem.history) == 667


@pytest.mark.parametrize("shape", ["fixed", "varied", "one-long"])
def test_replay_fields_gathered_into_byte_strings_come_back_whole(tmp_path, shape):
    """The replay's bytes come from one fixed-width byte-string array (numpy drops trailing zero
    bytes; records of one size are read in place through a strided view): keys and values that
    end with zero bytes, empty ones, lengths that differ and one value far longer than the rest
    (sliced instead) all come back exactly, in order, with their
    sequences and the memtable's byte count; the log's zero tail is a clean end."""
    import random

    from bloomdb.checksum import HW_RANGES
    from bloomdb.lsm import recovery, wal
    from bloomdb.lsm.fs import RealFS

    if not HW_RANGES:
        pytest.skip("the replay kernel runs only with the SSE4.2 CRC32C kernel")
    rng = random.Random(11)
    recs = []
    for i in range(3000):
        if shape == "fixed":
            k, v = b"%015d" % i + bytes([i % 3]), bytes(99) + bytes([i % 2])
        else:
            k = b"%d" % i + b"\0" * rng.randrange(3)
            v = rng.choice([b"", b"\0", b"x\0\0", rng.randbytes(rng.randrange(200))])
            if shape == "one-long" and i == 1234:
                v = rng.randbytes(1 << 20) + b"\0"
        recs.append(wal.encode_put(1 + i, k, v))
    data = b"".join(recs) + bytes(5000)
    (tmp_path / "000007.log").write_bytes(data)
    ends: list = []
    mem, last = recovery.replay(RealFS(fsync=False), str(tmp_path), [7], True, 0, ends)
    want, want_last, want_ends = _replay_by_read_log(data)
    assert list(mem.latest.items()) == list(want.latest.items())
    assert all(type(k) is bytes and type(v) is bytes for k, v in mem.latest.items())
    assert (mem.seqs, mem.bytes, mem.history) == (want.seqs, want.bytes, want.history)
    assert (last, ends) == (want_last, want_ends) == (3000, [len(data) - 5000])


def test_a_reopened_stores_tables_and_first_reads_leave_few_objects_for_the_garbage_collector(tmp_path):
    """Each long-lived object the garbage collector tracks brings its next full pass nearer, and
    in a process holding large lists a full pass costs ~0.5 s (db-bench's first reads after a
    reopen met one). Opening a store and reading every table once leaves, per table, its own few
    objects (the map, the table, its meta, its manifest entry, its ref; the filter object --
    no capacity guard and lock until a write, the footer's handles a plain tuple of ints, which
    a young pass untracks): counted, at most 6 per table with a fixed part (before: 9; before
    that ~25: a write gate
    of seven objects per filter read in place, a lock per table, a dict per table made by
    ``vars``, a tuple per table and directory, a memoryview and its buffer between each map and
    its array)."""
    import gc

    p = str(tmp_path / "db")
    opts = small_options(background_compaction=False, memtable_bytes=1 << 15, filter_file=False)  # tables mapped at open
    keys = [b"key%06d" % i for i in range(6000)]
    with DB.open(p, opts) as db:
        for k in keys:
            db.put(k, b"v" * 40)
        db.flush()
    def grown(reads):
        with DB.open(p, opts) as db:  # the kernels and imports a first open loads, outside the count
            db.get(keys[0])
        gc.collect()
        gc.disable()
        try:
            before = len(gc.get_objects())
            db = DB.open(p, opts)
            for k in reads:
                db.get(k)
            gc.collect(0)  # what a young pass does first: tuples of plain values are untracked
            n = len(gc.get_objects()) - before
            tables = len(db._state[2].slots)
            db.close()
        finally:
            gc.enable()
        return n, tables
    few, tables = grown(keys[:1])
    every, _ = grown(keys[:: 50] + [k + b"." for k in keys[:: 50]])  # every table's filter read
    assert tables >= 15
    assert every - few <= tables + 5, (few, every, tables)  # the filters: the object only (no guard, no lock)
    assert every <= 6 * tables + 60, (every, tables)  # 18 tables: 162 here; 216 with a Handles object, guard and lock per table


@pytest.mark.parametrize("spec", [filters.family(i.name).example_spec or i.name for i in filters.available()])
def test_the_lookup_kernel_reads_a_tables_filter_itself_with_the_familys_own_record(tmp_path, spec):
    """A reopened table's first lookup reads its filter inside the lookup kernel (no filter
    object, no Python step: :func:`_probe_kernels._load_lazy`) for the families whose
    descriptor the filters' kernel reads; the record it makes is word for word the one the
    family's own ``probe_descriptor()`` gives (the array in place in the table's map), and the
    answers are every key's. Other families are read by Python, as before."""
    from bloomdb.checksum import HW_RANGES
    from bloomdb.lsm.probe import directory as D

    p, opts = _store(tmp_path, filter=spec, filter_file=False)  # from the tables' maps (the filter file's copies: test_lsm_filter_file.py)
    with DB.open(p, opts) as db:
        assert all(db.get(k) == b"v" * 50 for k in KEYS[::3])
        assert all(db.get(k + b"x") is None for k in KEYS[::3])
        d, slots = _slots(db)
        read_by_kernel = 0
        for b, t in slots:
            assert t.filter_loaded
            fw = D.kernel_read(t)
            if fw is not None:
                read_by_kernel += 1
                assert t._filter is None  # no filter object was made
                assert t.filter_memory == t.filter().size_bytes
            rec = D.kernel_record(t.filter())  # the family's own, through Python
            if rec is None:  # a family the probe kernel does not run (scalable): Python asks it
                assert d[b + L.S_KIND] == L.OTHER and fw is None
                continue
            assert d[b + L.S_KIND] == L.FILTER
            assert d[b + L.S_REC : b + L.S_REC + L.RSTRIDE].tolist() == D._words_of(rec)
        kernel_families = {"blocked", "counting", "register", "standard", "sbbf"}
        if HW_RANGES and spec.split(":")[0] in kernel_families:
            assert read_by_kernel == len(slots) > 1
        else:
            assert read_by_kernel == 0
        assert all(db.get(k) == b"v" * 50 for k in KEYS)
        assert db.multi_get([k + b"x" for k in KEYS]) == [None] * len(KEYS)


def test_a_filter_the_kernel_read_is_kept_by_its_table_for_the_next_versions(tmp_path):
    """The record the kernel made is kept on the table: a new version's directory (after a
    flush) lays it out as FILTER at once -- the block is not checked again, no object made."""
    from bloomdb.checksum import HW_RANGES
    from bloomdb.lsm.probe import directory as D

    if not HW_RANGES:
        pytest.skip("the kernel reads filters only with the CRC32C instruction")
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        assert all(db.get(k + b"x") is None for k in KEYS[::5])
        old = db._state[2]
        assert all(D.kernel_read(r.table) is not None for r in old.slots)
        db.put(b"new", b"x")
        db.flush()
        ver = db._state[2]
        assert ver is not old
        d = ver.probe()[0]
        for s, r in enumerate(ver.slots):
            kind = d[L.SLOTS + L.STRIDE * s + L.S_KIND]
            assert kind == (L.LAZY if r.table.number not in {x.number for x in old.slots} else L.FILTER)
        assert all(r.table._filter is None for r in ver.slots)
        st = db.stats()
        assert 0 < st["filter_memory_bytes"] <= st["filter_bytes"]


def test_a_tables_meta_block_is_decoded_only_when_asked_for(tmp_path, monkeypatch):
    """The open kernel reads what a store needs of each table's meta block at once (entries,
    deletions, whether it holds range tombstones) and checks its block count and max key
    against the index; the block itself is decoded on first use -- a reopened store's open and
    first reads decode none (~5 us and a long-lived tracked object per table, before). What
    the kernel read agrees with the decoded block, range tombstones included."""
    from bloomdb.checksum import HW_RANGES
    from bloomdb.lsm import WriteBatch
    from bloomdb.lsm.fs import RealFS
    from bloomdb.lsm.sstable import reader

    if not HW_RANGES:
        pytest.skip("the one-call open needs the CRC32C instruction")
    p, opts = _store(tmp_path)
    decoded = []
    orig = reader.decode_meta
    monkeypatch.setattr(reader, "decode_meta", lambda b, path: decoded.append(path) or orig(b, path))
    with DB.open(p, opts) as db:
        assert all(db.get(k + b"x") is None for k in KEYS[::5]) and db.get(KEYS[7]) == b"v" * 50
        assert decoded == []
        db.delete(KEYS[5])
        db.write(WriteBatch().delete_range(KEYS[10], KEYS[20]))
        db.flush()
        refs = [r for r in db._state[2].slots]
        tables = [reader.Table(RealFS(), r.table.path, r.number) for r in refs]  # each opened afresh
        facts = [(t.entries, t.deletions, t.range_dels) for t in tables]
        rdel = [t.path for t, f in zip(tables, facts) if f[2]]
        assert set(decoded) == set(rdel) and len(rdel) == 1  # Version reads the range tombstones
        assert facts == [(t.meta.entries, t.meta.deletions, t.meta.range_dels) for t in tables]
        assert [f[2][0][:2] for f in facts if f[2]] == [(KEYS[10], KEYS[20])] and sum(f[1] for f in facts) >= 1


def _big_table_store(tmp_path):
    """One table of 9,000 keys: its filter block (10 bits a key) and index block are long enough
    for the checksum kernel's three-stream chunks (:mod:`bloomdb._checksum_kernels`), its data
    blocks long enough for the short chunks where the host has them."""
    from bloomdb import _checksum_kernels as CK

    p = str(tmp_path / "big")
    opts = small_options(background_compaction=False, memtable_bytes=8 << 20, table_bytes=64 << 20,
                         filter="blocked:10")
    keys = [b"big%07d" % i for i in range(9000)]
    with DB.open(p, opts) as db:
        for k in keys:
            db.put(k, b"w" * 60)
        db.flush()
        (ref,) = db._state[2].slots
        t = ref.table
        h = t._handles
        path = t.path
        blocks = list(zip(t.offsets, t.sizes))
    assert h.filter_size >= 3 * CK.LONG  # the chunked path is what reads it
    return p, opts, keys, path, h, blocks


def _flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x10]))


def test_a_long_intact_filter_block_is_read_by_the_lookup_kernel(tmp_path):
    p, opts, keys, path, h, _ = _big_table_store(tmp_path)
    from bloomdb.lsm.probe import directory as D

    with DB.open(p, opts) as db:
        assert all(db.get(k + b"x") is None for k in keys[::97])
        assert all(db.get(k) == b"w" * 60 for k in keys[::7])
        assert db.stats()["filters_damaged"] == 0
        fw = D.kernel_read(db._state[2].slots[0].table)
        assert fw is not None and fw[L.T_BYTES] > 3 * 2048  # its long block passed the chunked CRC


@pytest.mark.parametrize("where", [0.1, 0.5, 0.93])
def test_a_long_filter_block_damaged_anywhere_fails_open_on_its_lazy_first_read(tmp_path, where):
    """A byte flipped inside a long filter block (in each third of the checksum kernel's chunks):
    the lookup kernel's first read of the filter rejects it (never probes damaged bits), Python
    fails it open: every key is still found, missing keys read as missing, the damage counted."""
    p, opts, keys, path, h, _ = _big_table_store(tmp_path)
    _flip(path, h.filter_off + int(h.filter_size * where))
    from bloomdb.lsm.probe import directory as D

    with DB.open(p, opts) as db:
        assert all(db.get(k + b"x") is None for k in keys[::97])
        assert all(db.get(k) == b"w" * 60 for k in keys)
        assert db.stats()["filters_damaged"] >= 1
        assert D.kernel_read(db._state[2].slots[0].table) is None  # the kernel took no record of it
        assert db.multi_get(keys[:50] + [b"nope"]) == [b"w" * 60] * 50 + [None]


def test_a_long_index_block_damaged_is_our_corruption_error_at_open(tmp_path):
    p, opts, keys, path, h, _ = _big_table_store(tmp_path)
    assert h.index_size >= 1536
    _flip(path, h.index_off + h.index_size // 2)
    with pytest.raises(CorruptionError, match=os.path.basename(path)):
        with DB.open(p, opts) as db:
            db.get(keys[0])


def test_a_data_block_damaged_mid_block_raises_on_its_first_read_and_not_before(tmp_path):
    p, opts, keys, path, h, blocks = _big_table_store(tmp_path)
    off, size = blocks[len(blocks) // 2]
    _flip(path, off + size // 2)
    with DB.open(p, opts) as db:
        assert db.get(keys[0]) == b"w" * 60  # another block reads fine
        with pytest.raises(CorruptionError, match=os.path.basename(path)):
            for k in keys:
                db.get(k)
