"""The store's API contract: types, options, context manager, stats, filters and reopen."""

from __future__ import annotations

import pytest

from bloomdb.errors import BloomDBError, InvalidArgument, KeyTypeError
from bloomdb.lsm import DB, Options, WriteBatch

from lsm_helpers import small_options


def test_types_and_basic_ops(tmp_path):
    with DB.open(str(tmp_path / "db")) as db:
        db.put("ключ", b"v")
        assert db.get("ключ") == b"v" and db.get("ключ".encode()) == b"v"
        assert db.get(b"nope", b"dflt") == b"dflt"
        for bad in (1, 2.0, None, ("a",)):
            with pytest.raises(TypeError):
                db.put(bad, b"v")
            with pytest.raises(KeyTypeError):
                db.get(bad)
        with pytest.raises(TypeError):
            db.put(b"k", "str value")
        db.put(b"", b"empty key")
        assert db.get(b"") == b"empty key"
        db.delete(b"")
        assert b"" not in db
        assert list(db.scan()) == [("ключ".encode(), b"v")]
    with pytest.raises(BloomDBError):
        db.put(b"a", b"b")


def test_open_flags_and_options(tmp_path):
    p = str(tmp_path / "db")
    with pytest.raises(InvalidArgument):
        DB.open(p, Options(create_if_missing=False))
    DB.open(p).close()
    with pytest.raises(InvalidArgument):
        DB.open(p, Options(error_if_exists=True))
    for bad in (dict(block_size=0), dict(compression="gzip"), dict(filter="nosuch:3"),
                dict(level_ratio=1), dict(filter_per_level={9: None})):
        with pytest.raises(InvalidArgument):
            DB.open(p, Options(**bad))
    db = DB.open(p)
    with pytest.raises(BloomDBError):
        DB.open(p)  # locked by the open store
    db.close()


def test_filters_reject_missing_reads(tmp_path):
    opts = small_options(background_compaction=False, memtable_bytes=8000)
    with DB.open(str(tmp_path / "db"), opts) as db:
        for i in range(3000):
            db.put(b"key%06d" % i, b"v" * 20)
        db.flush()
        st0 = db.stats()
        assert sum(st0["tables_per_level"]) >= 5
        missing = [b"key%06dx" % i for i in range(3000)]
        assert db.multi_get(missing) == [None] * 3000
        assert all(db.get(k) is None for k in missing[:500])
        st = db.stats()
        assert st["filter_checks"] > 0
        assert st["filter_useful_ratio"] > 0.95
        assert st["data_blocks_read"] - st0["data_blocks_read"] < 0.05 * st["filter_checks"]
        assert db.get(b"key000123") == b"v" * 20
        assert db.stats()["true_positive"] >= 1


def test_no_filter_and_optimize_for_hits(tmp_path):
    opts = small_options(background_compaction=False, filter=None)
    with DB.open(str(tmp_path / "a"), opts) as db:
        for i in range(500):
            db.put(b"k%04d" % i, b"v")
        db.flush()
        assert db.stats()["filter_bytes"] == 0
        assert db.get(b"zz") is None and db.stats()["filter_checks"] == 0
    opts = small_options(background_compaction=False, optimize_filters_for_hits=True)
    with DB.open(str(tmp_path / "b"), opts) as db:
        for i in range(2000):
            db.put(b"k%04d" % i, b"v" * 10)
        db.compact_range()
        v = db._version
        deepest = v.deepest_nonempty()
        assert deepest >= 1
        # tables written to the last level carry no filter (tables that reached it by a trivial
        # move keep the filter they were built with)
        assert any(r.table.filter() is None for r in v.levels[deepest])
        assert all(r.table.filter() is not None for lvl in v.levels[:deepest] for r in lvl)
        assert all(db.get(b"k%04d" % i) == b"v" * 10 for i in range(0, 2000, 37))


def test_write_batch_and_snapshot(tmp_path):
    with DB.open(str(tmp_path / "db"), small_options()) as db:
        db.put(b"a", b"1")
        s = db.snapshot()
        db.write(WriteBatch().put(b"a", b"2").put(b"b", b"3").delete(b"c"))
        assert db.get(b"a") == b"2" and db.get(b"a", snapshot=s) == b"1"
        assert db.get(b"b", snapshot=s) is None
        for i in range(400):
            db.put(b"x%04d" % i, b"y" * 30)
        db.compact_range()
        assert db.get(b"a", snapshot=s) == b"1"
        assert list(db.scan(b"a", b"c", snapshot=s)) == [(b"a", b"1")]
        s.close()
        with pytest.raises(InvalidArgument):
            db.write([(b"a", b"b")])


def test_stats_keys(tmp_path):
    with DB.open(str(tmp_path / "db")) as db:
        st = db.stats()
    for k in ("filter_checks", "filter_useful", "filter_positive", "true_positive", "data_blocks_read",
              "block_cache_hits", "tables_per_level", "bytes_per_level", "write_amplification",
              "read_amplification", "filters_damaged"):
        assert k in st


def test_probe_kernel_matches_the_filter(tmp_path):
    """The store's fused probe answers exactly like the table's own blocked filter."""
    import numpy as np

    from bloomdb.lsm.probe import _probe_kernels as K

    with DB.open(str(tmp_path / "db"), small_options(background_compaction=False, memtable_bytes=1 << 20)) as db:
        for i in range(2000):
            db.put(b"key%06d" % i, b"v")
        db.flush()
        ver = db._state[2]
        db.get(b"key000000")  # the table's first lookup reads its filter into the directory
        d = ver.probe()[0]
        (ref,) = ver.slots
        f = ref.table.filter()
        probes = [b"key%06d" % i for i in range(0, 4000, 3)] + [b"key%06dz" % i for i in range(1000)]
        data = np.frombuffer(b"".join(probes), np.uint8)
        off = np.zeros(len(probes) + 1, np.int64)
        np.cumsum([len(k) for k in probes], out=off[1:])
        slots = np.empty(len(probes), np.int64)
        K.probe_many(d, data, off, slots)
        in_range = np.array([ref.info.min_key <= k <= ref.info.max_key for k in probes])
        want = f.might_contain_many(probes) & in_range
        assert ((slots == 0) == want).all()
        assert [K.probe(d, k, 0) for k in probes[:200]] == slots[:200].tolist()
        assert want[: 2000 // 3].all()  # present keys: no false negatives


def test_stats_read_amplification_and_memory_held(tmp_path):
    """``read_amplification`` is data blocks read per key looked up in the tables (about 1 for
    present keys, about the false-positive rate for absent ones); the memory held by filters and
    indexes is reported, and both count only once read (filters are read lazily; a reopened
    store whose filter file holds a table's filter opens the table on its first read)."""
    p = str(tmp_path / "db")
    keys = [b"key%06d" % i for i in range(3000)]
    opts = small_options(background_compaction=False, memtable_bytes=1 << 16)
    with DB.open(p, opts) as db:
        for k in keys:
            db.put(k, b"v" * 50)
        db.flush()
    with DB.open(p, opts) as db:
        st = db.stats()
        assert st["filter_memory_bytes"] == 0 and st["index_memory_bytes"] == 0  # nothing read yet
        assert all(db.get(k) == b"v" * 50 for k in keys[::3])
        st = db.stats()
        assert st["index_memory_bytes"] > 0
        assert st["table_lookups"] == 1000
        assert 1.0 <= st["read_amplification"] <= 1.1, st
        assert st["filter_memory_bytes"] >= st["filter_bytes"] // 2
        assert all(db.get(k + b"x") is None for k in keys[::3])
        assert db.multi_get([k + b"y" for k in keys[::3]]) == [None] * 1000
        st = db.stats()
        assert st["table_lookups"] == 3000
        assert st["read_amplification"] < (1000 + 2000 * 0.05) / 3000, st
