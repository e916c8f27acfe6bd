"""The store's filter file (``FILTERS``, :mod:`bloomdb.lsm.filter_file`): ``close`` copies every
table's filter block into it; the next open maps no table file -- a table (a
:class:`~bloomdb.lsm.sstable.lazy.LazyTable`) is opened on the first read its filter lets through,
and the lookup kernel reads each filter from its copy. A copy whose table file changed is not
used; a damaged file or copy never changes an answer; damage in a table opened late is reported
when it is opened, naming the file."""

from __future__ import annotations

import os

import pytest

from bloomdb.checksum import HW_RANGES
from bloomdb.errors import CorruptionError
from bloomdb.lsm import DB, Options, WriteBatch, filter_file
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.probe import _get_kernels as G, directory as D, layout as L
from bloomdb.lsm.rangedel import MAX_SEQ
from bloomdb.lsm.sstable.footer import decode_footer
from bloomdb.lsm.sstable.lazy import LazyTable

from lsm_helpers import small_options

KEYS = [b"key%06d" % i for i in range(6000)]
VALUE = b"v" * 40


def _store(tmp_path, **kw):
    """A closed store of several tables (L0 and deeper), its filter file written by ``close``."""
    p = str(tmp_path / "db")
    opts = small_options(background_compaction=False, memtable_bytes=1 << 15, **kw)
    with DB.open(p, opts) as db:
        for k in KEYS:
            db.put(k, VALUE)
        db.flush()
    return p, opts


def _lazy(db):
    return [r.table for r in db._state[2].slots if isinstance(r.table, LazyTable)]


def _flip_keeping_identity(path, at):
    """Flip a byte of ``path`` and give it back its modification time (as bit rot would leave it)."""
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x10]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_reopened_store_opens_a_table_only_when_its_filter_lets_a_read_through(tmp_path):
    p, opts = _store(tmp_path)
    assert os.path.exists(os.path.join(p, filter_file.NAME))
    with DB.open(p, opts) as db:
        tables = _lazy(db)
        assert len(tables) == len(db._state[2].slots) > 4
        st0 = db.stats()
        assert st0["index_memory_bytes"] == 0 and st0["filter_memory_bytes"] == 0
        missing = [k + b"." for k in KEYS[::3]]
        assert all(db.get(k) is None for k in missing)
        st = db.stats()
        opened = sum(t.opened for t in tables)
        # only a false positive opens a table (read through Python, then wired for the kernel)
        assert opened <= st["filter_positive"] < len(missing) // 20
        if HW_RANGES:  # every filter read by the kernel from its copy in the filter file
            side = tables[0].filter_buffer
            lo, hi = side.ctypes.data, side.ctypes.data + side.shape[0]
            for t in tables:
                fw = D.kernel_read(t)
                assert fw is not None and lo <= fw[L.R_OFF] < hi
        assert 0 < st["filter_memory_bytes"] <= st["filter_bytes"]
        assert all(db.get(k) == VALUE for k in KEYS[::7])
        assert all(t.opened for t in tables)
        assert db.multi_get(missing[:300] + KEYS[:300]) == [None] * 300 + [VALUE] * 300
        assert dict(db.scan()) == dict.fromkeys(KEYS, VALUE)


def test_a_table_opened_by_a_read_is_read_by_the_kernel_from_then_on(tmp_path):
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        ver = db._state[2]
        d, bufs, _, _ = ver.probe()
        k = KEYS[1234]
        st, s, _, _ = G.lookup(d, k, MAX_SEQ, 0)
        if st == G.ASK:  # no CRC instruction: Python reads the filter
            assert db.get(k) == VALUE
            st, s, _, _ = G.lookup(ver.refresh_probe()[0], k, MAX_SEQ, 0)
        assert st == G.READ and not ver.slots[s].table.opened  # no address yet: Python opens it
        assert db.get(k) == VALUE
        t = ver.slots[s].table
        assert t.opened and d[L.SLOTS + L.STRIDE * s + L.S_TBUF] == t._arr.ctypes.data
        d, bufs, _, _ = ver.refresh_probe()
        st, s2, a, n = G.lookup(d, k, MAX_SEQ, 0)
        if HW_RANGES:
            assert (st, s2, bytes(bufs[s2][a : a + n])) == (G.VALUE, s, VALUE)
        db.put(b"new", b"x")
        db.flush()  # a new version: its directory reads the opened table at once
        d, bufs, _, _ = db._state[2].probe()
        st, s3, a, n = G.lookup(d, k, MAX_SEQ, 0)
        if HW_RANGES:
            assert st == G.VALUE and bytes(bufs[s3][a : a + n]) == VALUE


def test_the_file_is_rewritten_only_when_the_tables_changed(tmp_path):
    p, opts = _store(tmp_path)
    path = os.path.join(p, filter_file.NAME)
    before = os.stat(path).st_ino
    with DB.open(p, opts) as db:
        assert db.get(KEYS[5]) == VALUE
    assert os.stat(path).st_ino == before  # same tables: not written again
    with DB.open(p, opts) as db:
        db.put(b"zzz", b"1")
        db.flush()
        n = len(db._state[2].slots)
    assert os.stat(path).st_ino != before
    with DB.open(p, opts) as db:
        assert len(_lazy(db)) == n and db.get(b"zzz") == b"1"


def test_no_filter_file_with_the_option_off(tmp_path):
    p, opts = _store(tmp_path, filter_file=False)
    assert not os.path.exists(os.path.join(p, filter_file.NAME))
    with DB.open(p, small_options(background_compaction=False, memtable_bytes=1 << 15)) as db:
        assert not _lazy(db) and db.get(KEYS[1]) == VALUE  # no file yet: every table opened
    with DB.open(p, opts) as db:
        assert not _lazy(db) and db.get(KEYS[2]) == VALUE  # a file there, but the option is off


def test_a_table_file_changed_since_the_copy_is_opened_at_once_and_its_damaged_filter_fails_open(tmp_path):
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        t = db._state[2].slots[-1].table
        path, number = t.path, t.number
    h = decode_footer(open(path, "rb").read(), path)
    with open(path, "r+b") as f:  # a write: the file's modification time changes
        f.seek(h.filter_off + h.filter_size // 2)
        b = f.read(1)
        f.seek(h.filter_off + h.filter_size // 2)
        f.write(bytes([b[0] ^ 0x10]))
    with DB.open(p, opts) as db:
        slots = db._state[2].slots
        assert [r.number for r in slots if not isinstance(r.table, LazyTable)] == [number]
        assert all(db.get(k) == VALUE for k in KEYS)
        assert all(db.get(k + b".") is None for k in KEYS[::5])
        assert db.stats()["filters_damaged"] == 1


def test_damage_in_a_table_opened_late_is_reported_when_it_is_opened(tmp_path):
    """Bit rot that leaves the file's identity: the copy of its filter is used, the table opens
    on its first read, and its damaged index is our CorruptionError naming the file then; a
    damaged data block on that block's first read."""
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        refs = db._state[2].slots
        a, b = refs[0].table, refs[-1].table
        ka, kb = a.last_keys[0], refs[-1].info.max_key  # keys of these tables (slot 0: the newest)
        pa, pb = a.path, b.path
        blocks = list(zip(b.offsets, b.sizes))
    ha = decode_footer(open(pa, "rb").read(), pa)
    _flip_keeping_identity(pa, ha.index_off + ha.index_size // 2)
    off, size = blocks[-1]
    _flip_keeping_identity(pb, off + size // 2)
    with DB.open(p, opts) as db:
        assert len(_lazy(db)) == len(db._state[2].slots)  # the open reads neither file
        with pytest.raises(CorruptionError, match=os.path.basename(pa)):
            db.get(ka)
        with pytest.raises(CorruptionError, match=os.path.basename(pb)):
            db.get(kb)


@pytest.mark.parametrize("where", ["header", "copy"])
def test_a_damaged_filter_file_changes_no_answer(tmp_path, where):
    p, opts = _store(tmp_path)
    path = os.path.join(p, filter_file.NAME)
    data = bytearray(open(path, "rb").read())
    at = 20 if where == "header" else len(data) - 100  # an entry, or inside the last copy
    data[at] ^= 0x10
    open(path, "wb").write(bytes(data))
    with DB.open(p, opts) as db:
        lazy = _lazy(db)
        assert (not lazy) if where == "header" else len(lazy) == len(db._state[2].slots)
        assert all(db.get(k + b".") is None for k in KEYS[::2])
        assert all(db.get(k) == VALUE for k in KEYS[::3])
        assert db.stats()["filters_damaged"] == 0  # the tables' own filters are intact
    with DB.open(p, opts) as db:  # the close wrote a sound file again
        assert len(_lazy(db)) == len(db._state[2].slots)


def test_range_tombstones_and_compactions_of_tables_not_opened(tmp_path):
    p = str(tmp_path / "db")
    opts = Options(fs=RealFS(fsync=False), background_compaction=False, memtable_bytes=1 << 15)
    with DB.open(p, opts) as db:
        for k in KEYS:
            db.put(k, VALUE)
        db.flush()
    with DB.open(p, opts) as db:
        db.write(WriteBatch().delete_range(KEYS[100], KEYS[200]))
        db.delete(KEYS[7])
        db.flush()
        refs = {r.number: r for r in db._state[2].slots}
        held = {n for n, r in refs.items() if r.table.range_dels}
        assert len(held) == 1
    side = filter_file.load(RealFS(), p)
    assert set(side.entries) == set(refs)
    for n, r in refs.items():  # what the file says of each table, as a table not opened answers it
        t = side.table(RealFS(), r.table.path, n, None, r.info.file_size)
        assert (t.entries, t.deletions, bool(t.range_dels), t.opened) == (r.info.entries, r.table.deletions, n in held,
                                                                          n in held)
    model = {k: VALUE for i, k in enumerate(KEYS) if not (100 <= i < 200) and i != 7}
    with DB.open(p, opts) as db:  # (the open compacts the tombstone's table: the policy's tombstone rule)
        assert db.get(KEYS[150]) is None and db.get(KEYS[7]) is None and db.get(KEYS[99]) == VALUE
        assert _lazy(db)
        db.compact_range()
        assert dict(db.scan()) == model
    with DB.open(p, opts) as db:
        assert dict(db.scan()) == model


def test_a_missing_table_is_still_a_corruption_error_at_open(tmp_path):
    p, opts = _store(tmp_path)
    with DB.open(p, opts) as db:
        path = db._state[2].slots[0].table.path
    os.remove(path)
    with pytest.raises(CorruptionError, match="missing"):
        DB.open(p, opts)
