"""The memory bound of the LSM store (issue 15): ``Options(cache_bytes=N)`` -- one byte-bounded
cache of data blocks, index blocks and filters (:mod:`bloomdb.lsm.cache`) -- and
``Options(max_open_files=N)`` (:mod:`bloomdb.lsm.table_cache`).

Checked: the cache never holds more than its bound (peak and current, many tables, random
reads, compactions running, reader threads); answers equal the dict model, the uncached store
and LevelDB (plyvel); pinned filters and indexes are never evicted; the stats count as
documented; at most ``max_open_files`` table files are open."""

from __future__ import annotations

import os
import random
import threading

import pytest

from bloomdb.bench import stress
from bloomdb.errors import InvalidArgument
from bloomdb.lsm import DB, Options
from bloomdb.lsm.cache import Cache
from bloomdb.lsm.sstable.cached_reader import FILTER, INDEX, CachedTable
from bloomdb.lsm.table_cache import TableFiles

from lsm_helpers import small_options


def _run_model(path, ops, seed, **opt):
    problems: list[str] = []
    bad = stress.model_check(path, ops, seed, report=problems.append, options=small_options(**opt))
    assert bad == 0, problems[:10]


def _fill(db, n, seed=0, vlen=30):
    rng = random.Random(seed)
    model = {}
    for i in range(n):
        k = b"key%07d" % rng.randrange(n * 2)
        v = rng.randbytes(vlen)
        db.put(k, v)
        model[k] = v
    return model


def _open_sst_fds(folder: str) -> int:
    """Descriptors of this process open on table files of ``folder``."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(os.path.realpath(folder)) and target.endswith(".sst"):
            n += 1
    return n


# -- the model, through the cached route ----------------------------------------------------------
@pytest.mark.parametrize("bg", [False, True])
def test_model_with_a_tiny_cache(tmp_path, bg):
    """Tiny tables and a 6 KiB cache: blocks, indexes and filters are evicted and read again all
    the time; every answer matches the dict model."""
    _run_model(str(tmp_path / "db"), 8000, seed=21 + bg, cache_bytes=6 << 10, background_compaction=bg)


def test_model_with_a_cache_other_layouts(tmp_path):
    """Compressed blocks, partitioned filters, prefix filters, nothing pinned, a cache too small
    for anything but pinned entries, two open files at most."""
    from bloomdb.lsm.prefix import FixedPrefix

    _run_model(str(tmp_path / "z"), 2500, seed=31, cache_bytes=4 << 10, compression="zstd",
               background_compaction=False)
    _run_model(str(tmp_path / "p"), 3000, seed=32, cache_bytes=5 << 10, partitioned_filters=True,
               filter_partition_blocks=2, pin_top_level_filters=False, background_compaction=False)
    _run_model(str(tmp_path / "q"), 3000, seed=33, cache_bytes=5 << 10, partitioned_filters=True,
               filter_partition_blocks=2, max_open_files=2)
    _run_model(str(tmp_path / "f"), 2500, seed=34, cache_bytes=3 << 10, prefix_extractor=FixedPrefix(5))
    _run_model(str(tmp_path / "zero"), 1500, seed=35, cache_bytes=0, pin_top_level_filters=False,
               filter="standard:8")


# -- the bound -------------------------------------------------------------------------------------
def test_cache_never_exceeds_its_bound_with_compactions_and_readers(tmp_path):
    """Many tables, random reads from four threads while a writer keeps the background
    compaction busy: the most the cache ever held (after any insertion) is within the bound,
    and every read is right (the keys read are never rewritten)."""
    cap = 24 << 10
    db = DB.open(str(tmp_path / "db"), small_options(cache_bytes=cap, background_compaction=True))
    model = _fill(db, 6000, seed=1)
    db.flush()
    keys = sorted(model)
    errors: list = []
    stop = threading.Event()

    def reader(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            k = rng.choice(keys)
            if rng.random() < 0.3:
                k = k + b"-missing"
            got = db.get(k)
            if got != model.get(k):
                errors.append((k, got))
            held = db._cache.stats()["usage"]  # under the cache's lock
            if held > cap:
                errors.append(("over", held))
            if rng.random() < 0.02:
                got = db.multi_get(keys[:50])
                if got != [model[k] for k in keys[:50]]:
                    errors.append("multi_get")

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    rng = random.Random(9)
    for i in range(6000):  # other keys: flushes and compactions run beside the readers
        db.put(b"new%07d" % rng.randrange(10**6), rng.randbytes(30))
    stop.set()
    for t in threads:
        t.join()
    db.wait_for_compactions()
    st = db.stats()
    bc = st["block_cache"]
    assert not errors, errors[:5]
    assert st["compactions"] > 0 and sum(st["tables_per_level"]) > 5
    assert bc["evictions"] > 0
    assert bc["peak_usage"] <= cap and bc["usage"] <= cap
    assert bc["usage"] == sum(bc[k]["bytes"] for k in ("data", "index", "filter"))
    db.close()


def test_cache_bound_property_many_capacities(tmp_path):
    """Property style: for several capacities and seeds, random gets, scans and a compaction;
    the cache's peak never passes the bound and answers equal the model."""
    folder = str(tmp_path / "db")
    db = DB.open(folder, small_options(background_compaction=False))
    model = _fill(db, 3000, seed=2)
    db.close()
    for cap, seed in ((2 << 10, 1), (9 << 10, 2), (40 << 10, 3)):
        db = DB.open(folder, small_options(cache_bytes=cap, background_compaction=False))
        rng = random.Random(seed)
        keys = sorted(model)
        for _ in range(1500):
            k = rng.choice(keys) if rng.random() < 0.7 else b"zz%d" % rng.randrange(10**6)
            assert db.get(k) == model.get(k)
        lo = rng.choice(keys)
        assert list(db.scan(lo)) == [(k, model[k]) for k in keys if k >= lo]
        db.compact_range()
        for k in rng.sample(keys, 300):
            assert db.get(k) == model[k]
        bc = db.stats()["block_cache"]
        assert bc["peak_usage"] <= cap, (cap, bc)
        db.close()


def test_cache_unit_lru_and_pins():
    c = Cache(1000)
    for i in range(10):
        c.insert((1, 0, i), i, 300, "data")
    assert c.usage == 900 and c.evictions == 7
    assert c.get((1, 0, 0), "data") is None and c.get((1, 0, 9), "data") == 9
    c.pin((2, 2, -1), "f", 600, "filter")  # pinned: LRU entries make room
    assert c.usage <= 1000 and c.get((2, 2, -1), "filter") == "f"
    for i in range(20):
        c.insert((3, 0, i), i, 300, "data")
    assert c.is_pinned((2, 2, -1)) and c.peak <= 1000
    assert c.insert((4, 0, 0), "big", 5000, "data") == "big" and c.get((4, 0, 0), "data") is None
    c.drop_table(2)
    st = c.stats()
    assert st["pinned_bytes"] == 0 and st["filter"]["bytes"] == 0
    assert st["data"]["hits"] == 1 and st["filter"]["hits"] == 1


# -- answers: uncached store and LevelDB ----------------------------------------------------------
def test_cached_store_answers_like_the_uncached_one_and_leveldb(tmp_path):
    plyvel = pytest.importorskip("plyvel")
    rng = random.Random(5)
    ldb = plyvel.DB(str(tmp_path / "leveldb"), create_if_missing=True)
    folder = str(tmp_path / "db")
    db = DB.open(folder, small_options(background_compaction=False))
    for i in range(5000):
        k = b"k%05d" % rng.randrange(3000)
        if rng.random() < 0.15:
            db.delete(k)
            ldb.delete(k)
        else:
            v = rng.randbytes(rng.randrange(1, 60))
            db.put(k, v)
            ldb.put(k, v)
    db.close()
    plain = DB.open(folder, small_options(background_compaction=False), read_only=True)
    cached = DB.open(folder, small_options(cache_bytes=8 << 10, max_open_files=3), read_only=True)
    probe = [b"k%05d" % i for i in range(0, 3200, 3)]
    want = [ldb.get(k) for k in probe]
    assert [cached.get(k) for k in probe] == want == [plain.get(k) for k in probe]
    assert cached.multi_get(probe) == want
    assert list(cached.scan()) == list(ldb.iterator()) == list(plain.scan())
    assert list(cached.iterator(start=b"k01", stop=b"k02", reverse=True)) == list(
        ldb.iterator(start=b"k01", stop=b"k02", reverse=True))
    assert cached.stats()["block_cache"]["peak_usage"] <= 8 << 10
    assert "block_cache" not in plain.stats()
    for d in (plain, cached):
        d.close()
    ldb.close()


# -- pins and counters ----------------------------------------------------------------------------
def _l0_store(tmp_path, **kw):
    db = DB.open(str(tmp_path / "db"), Options(background_compaction=False, level0_trigger=8, level0_stop=12, max_flush_level=0, **kw))
    for t in range(3):
        for i in range(2000):
            db.put(b"t%d-%05d" % (t, i), b"v" * 40)
        db.flush()
    return db


def test_pinned_filters_and_indexes_are_never_evicted(tmp_path):
    db = _l0_store(tmp_path, cache_bytes=64 << 10)
    l0 = [r.table for r in db._version.levels[0]]
    assert len(l0) == 3 and all(isinstance(t, CachedTable) and t.pinned for t in l0)
    rng = random.Random(3)
    for _ in range(3000):  # many more data blocks than the cache holds
        t, i = rng.randrange(3), rng.randrange(2000)
        assert db.get(b"t%d-%05d" % (t, i)) == b"v" * 40
        assert db.get(b"t%d-%05dx" % (t, i)) is None
    c = db._cache
    assert c.evictions > 0
    for t in l0:
        assert c.is_pinned((t.number, FILTER, -1)) and c.is_pinned((t.number, INDEX, 0))
    st = db.stats()["block_cache"]
    assert st["pinned_bytes"] > 0 and st["peak_usage"] <= 64 << 10
    db.close()


def test_unpinned_filters_are_evicted_and_read_again(tmp_path):
    """Without pins, a tiny cache evicts filters; a read then reloads the filter (a filter miss)
    and still never answers a false "missing"."""
    db = _l0_store(tmp_path, cache_bytes=12 << 10, pin_top_level_filters=False)
    c = db._cache
    assert c.stats()["pinned_bytes"] == 0
    for i in range(0, 2000, 7):
        for t in range(3):
            assert db.get(b"t%d-%05d" % (t, i)) == b"v" * 40
    st = db.stats()["block_cache"]
    assert st["filter"]["misses"] > 3  # filters read more than once each: they were evicted
    assert st["peak_usage"] <= 12 << 10
    db.close()


def test_stats_count_hits_and_misses_per_kind(tmp_path):
    db = DB.open(str(tmp_path / "db"), Options(background_compaction=False, cache_bytes=1 << 20,
                                               pin_top_level_filters=False))
    for i in range(500):
        db.put(b"%05d" % i, b"x" * 20)
    db.flush()
    s0 = db.stats()["block_cache"]
    assert s0["data"] == {"hits": 0, "misses": 0, "bytes": 0}
    assert s0["index"]["bytes"] > 0  # read and checked at open
    db.get(b"00010")
    s1 = db.stats()["block_cache"]
    assert (s1["data"]["misses"], s1["data"]["hits"]) == (1, 0)
    assert (s1["filter"]["misses"], s1["index"]["hits"]) == (1, 1)
    db.get(b"00011")  # same block, same filter
    s2 = db.stats()["block_cache"]
    assert (s2["data"]["misses"], s2["data"]["hits"]) == (1, 1)
    assert (s2["filter"]["misses"], s2["filter"]["hits"]) == (1, 1)
    assert s2["usage"] == s2["data"]["bytes"] + s2["index"]["bytes"] + s2["filter"]["bytes"]
    assert db.get_property("bloomdb.block-cache-usage") == str(s2["usage"])
    assert db.get_property("bloomdb.block-cache-capacity") == str(1 << 20)
    assert db.get_property("bloomdb.filter-memory-bytes") == str(s2["filter"]["bytes"])
    assert db.get_property("bloomdb.approximate-memory-usage") == str(
        s2["usage"] + int(db.get_property("bloomdb.cur-size-all-mem-tables")))
    assert "block cache data: hits 1, misses 1" in db.get_property("bloomdb.stats")
    db.close()


def test_options_are_checked():
    for bad in (dict(cache_bytes=-1), dict(cache_bytes=1.5), dict(max_open_files=0),
                dict(pin_top_level_filters=1)):
        with pytest.raises(InvalidArgument):
            Options(**bad).validated()


# -- max_open_files -------------------------------------------------------------------------------
def test_max_open_files_bounds_the_descriptors(tmp_path):
    folder = str(tmp_path / "db")
    db = DB.open(folder, small_options(background_compaction=False))
    model = _fill(db, 4000, seed=4)
    db.close()
    db = DB.open(folder, small_options(background_compaction=False, cache_bytes=16 << 10, max_open_files=4))
    assert sum(db.stats()["tables_per_level"]) > 12
    rng = random.Random(1)
    keys = sorted(model)
    most = 0
    for _ in range(800):
        k = rng.choice(keys)
        assert db.get(k) == model[k]
        most = max(most, _open_sst_fds(folder))
    assert list(db.scan()) == sorted(model.items())
    most = max(most, _open_sst_fds(folder))
    assert 1 <= most <= 4
    assert db._cache.files.opens > 4  # files were closed and opened again
    db.close()
    assert _open_sst_fds(folder) == 0


def test_table_files_lru_and_forget(tmp_path):
    paths = []
    for i in range(5):
        p = tmp_path / f"{i:06d}.sst"
        p.write_bytes(bytes(range(10)) * (i + 1))
        paths.append(str(p))
    tf = TableFiles(2)
    for p in paths:
        assert tf.pread(p, 3, 4) == bytes(range(3, 7))
        assert tf.open_count <= 2
    assert tf.pread(paths[1], 8, 10) == bytes([8, 9]) + bytes(range(8))
    assert tf.pread(paths[0], 8, 10) == bytes([8, 9])  # the end of the file
    tf.forget(paths[0])
    tf.forget(paths[1])
    tf.pread(paths[2], 0, 1)
    assert tf.open_count == 1 and _open_sst_fds(str(tmp_path)) == 1
    tf.close_all()
    assert _open_sst_fds(str(tmp_path)) == 0


def test_iterators_keep_their_tables_readable_after_a_compaction(tmp_path):
    """A table an iterator still reads stays readable after a compaction replaced it, even
    when its descriptor was closed (one open file at most): its file is deleted only when the
    last reader of it is dropped."""
    import gc

    folder = str(tmp_path / "db")
    db = DB.open(folder, small_options(cache_bytes=4 << 10, max_open_files=1, background_compaction=False))
    model = _fill(db, 2000, seed=6)
    db.flush()
    it = db.iterator()
    first = [next(it) for _ in range(10)]
    before = {n for n in os.listdir(folder) if n.endswith(".sst")}
    for k in list(model)[:500]:
        db.put(k, b"new")
    db.compact_range()
    after = {r.number for r in db._version.all_refs()}
    gone = {n for n in before if int(n[:6]) not in after}
    assert gone and gone <= set(os.listdir(folder))  # still there: the iterator holds them
    rest = list(it)
    assert first + rest == sorted(model.items())
    it.close()
    del it
    gc.collect()
    db.get(b"key")  # the cache and the table files forget dropped tables at their next call
    assert not gone & set(os.listdir(folder))
    assert list(db.scan()) == sorted({**model, **dict.fromkeys(list(model)[:500], b"new")}.items())
    db.close()


def test_pins_never_push_a_small_cache_past_its_bound(tmp_path):
    """L0 tables pin only while the bytes promised to pins stay within half the capacity; the
    rest are cached unpinned, so even a cache smaller than L0's filters keeps its bound."""
    db = _l0_store(tmp_path, cache_bytes=8 << 10)
    l0 = [r.table for r in db._version.levels[0]]
    assert len(l0) == 3 and not all(t.pinned for t in l0)
    for i in range(0, 2000, 5):
        assert db.get(b"t1-%05d" % i) == b"v" * 40 and db.get(b"t2-%05dx" % i) is None
    st = db.stats()["block_cache"]
    assert st["peak_usage"] <= 8 << 10 and st["pinned_bytes"] <= 4 << 10
    db.close()
