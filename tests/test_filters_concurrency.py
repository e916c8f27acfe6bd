"""Filters shared by many threads: no key whose add returned is ever missed, by any thread.

The kernels release the GIL, so these tests really run writers and readers in parallel. Before the
atomic / locked writes, four threads calling ``add_many`` on one filter lost 0-120 keys per 800K
(all six mutable families), readers could miss a cuckoo key in the middle of a relocation, and
``to_bytes`` during writes could produce bytes whose checksum did not match.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bloomdb import filters
from bloomdb.errors import CorruptionError, InvalidArgument, NotFoundError

MUTABLE = [i.name for i in filters.available() if not i.static]


def test_every_mutable_family_is_covered():
    assert set(MUTABLE) == {"standard", "blocked", "register", "sbbf", "counting", "cuckoo", "scalable"}


def _keys(n: int, seed: int) -> np.ndarray:
    # distinct keys (cuckoo holds a key at most 8 times): a bijection of 0..n-1 mixed with the seed
    return (np.arange(n, dtype=np.uint64) + np.uint64(seed << 40)) * np.uint64(0x9E3779B97F4A7C15)


def _create(name: str, capacity: int):
    cls = filters.family(name)
    if name == "register":  # register's spec number is k; size it like the others
        return filters.create("register:2:10", capacity=capacity)
    return filters.create(cls.example_spec, capacity=capacity)


def _run_threads(targets):
    errors: list[BaseException] = []

    def wrap(fn):
        def inner():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        return inner

    ts = [threading.Thread(target=wrap(t)) for t in targets]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def _concurrent_adds(name: str, threads: int, per_thread: int, chunks: int, seed: int) -> tuple[int, int]:
    """``threads`` writers each add ``per_thread`` keys in ``chunks`` add_many calls; returns
    (false negatives, count)."""
    f = _create(name, threads * per_thread)
    parts = [_keys(per_thread, seed * 100 + t) for t in range(threads)]
    start = threading.Barrier(threads)

    def writer(p):
        def run():
            start.wait()
            for c in np.array_split(p, chunks):
                f.add_many(c)
        return run

    _run_threads([writer(p) for p in parts])
    everything = np.concatenate(parts)
    return int((~f.might_contain_many(everything)).sum()), f.count


def _assert_writers_lose_nothing(name: str, threads: int, per_thread: int, chunks: int, repeats: int) -> None:
    for rep in range(repeats):
        missed, count = _concurrent_adds(name, threads, per_thread, chunks, seed=rep)
        assert missed == 0, f"{name}: {missed} keys lost (repeat {rep})"
        assert count == threads * per_thread


@pytest.mark.parametrize("name", MUTABLE)
def test_concurrent_writers_lose_nothing(name):
    _assert_writers_lose_nothing(name, threads=4, per_thread=100_000, chunks=50, repeats=3)


@pytest.mark.slow
@pytest.mark.parametrize("name", MUTABLE)
def test_eight_writers_of_a_million_keys_lose_nothing(name):
    _assert_writers_lose_nothing(name, threads=8, per_thread=1_000_000, chunks=40, repeats=2)


def _readers_and_writers(f, name: str, writers: int, per_writer: int, chunks: int, readers: int,
                         remover=None) -> None:
    """Writers add chunks and publish each after its add returned; readers keep querying the
    published chunks (the whole chunk with might_contain_many, one key with might_contain) and
    record any miss."""
    parts = [np.array_split(_keys(per_writer, 1000 + w), chunks) for w in range(writers)]
    published = [0] * writers
    done = threading.Event()
    misses: list[tuple[int, int, int]] = []

    def writer(w):
        def run():
            for i, c in enumerate(parts[w]):
                f.add_many(c)
                published[w] = i + 1
        return run

    def reader(r):
        def run():
            rng = np.random.default_rng(r)
            while not done.is_set():
                w = int(rng.integers(writers))
                upto = published[w]
                if upto == 0:
                    continue
                i = int(rng.integers(upto))
                got = f.might_contain_many(parts[w][i])
                if not got.all():
                    misses.append((w, i, int((~got).sum())))
                key = parts[w][i][int(rng.integers(len(parts[w][i])))]
                if not f.might_contain(int(key)):
                    misses.append((w, i, -1))
        return run

    def writers_then_stop():
        _run_threads([writer(w) for w in range(writers)] + ([remover] if remover else []))
        done.set()

    _run_threads([writers_then_stop] + [reader(r) for r in range(readers)])
    assert not misses, f"{name}: readers missed published keys {misses[:5]} ({len(misses)} times)"
    everything = np.concatenate([np.concatenate(p) for p in parts])
    assert f.might_contain_many(everything).all()


@pytest.mark.parametrize("name", MUTABLE)
def test_readers_always_see_published_keys(name):
    # cuckoo near full load: most inserts relocate tags, the case a reader could miss
    f = _create(name, 4 * 60_000 if name != "cuckoo" else 4 * 60_000 + 8_000)
    _readers_and_writers(f, name, writers=3, per_writer=80_000, chunks=80, readers=2)


@pytest.mark.parametrize("name", [n for n in MUTABLE if getattr(filters.family(n), "deletable", False)])
def test_readers_never_miss_keys_while_others_are_removed(name):
    """A remover adds and removes other keys (and tries batches that fail and are undone) while
    writers add and readers check: removes must not hide keys they do not own."""
    f = _create(name, 300_000)
    churn = np.array_split(_keys(60_000, 7), 60)
    absent = _keys(50, 8)

    def remover():
        for c in churn:
            f.add_many(c)
            with pytest.raises(NotFoundError):
                f.remove_many(np.concatenate([c, absent]))  # fails at the absent keys: undone
            f.remove_many(c)

    _readers_and_writers(f, name, writers=2, per_writer=100_000, chunks=50, readers=2, remover=remover)
    assert f.count == 200_000


@pytest.mark.parametrize("name", [n for n in MUTABLE if getattr(filters.family(n), "deletable", False)])
def test_query_overlapping_a_hiding_write_rechecks_under_the_lock(name):
    """The mechanism, deterministically: a writer (holding the lock, sequence counter odd) has
    keys out of place for a moment — here the whole table — and a query that overlaps it must
    wait for the write and answer from the finished table, never "absent"."""
    f = _create(name, 20_000)
    keys = _keys(10_000, 5)
    f.add_many(keys)
    saved = f._payload().copy()
    result: list[np.ndarray] = []
    started = threading.Event()
    with f._gate.write(False):
        f._seq[0] += 1  # a write that moves keys is running
        f._payload()[:] = 0  # ... and every key is momentarily out of place

        def reader():
            started.set()
            result.append(f.might_contain_many(keys))

        t = threading.Thread(target=reader)
        t.start()
        started.wait()
        t.join(0.2)  # the reader found misses and now waits for the lock
        f._payload()[:] = saved
        f._seq[0] += 1
    t.join()
    assert result[0].all()


def test_counting_removes_racing_adds_lose_no_counts():
    """Adds and removes on different threads leave exactly the counters of a serial run."""
    base = _keys(100_000, 3)
    extra = _keys(100_000, 4)
    f = _create("counting", 400_000)
    f.add_many(base)
    f.add_many(base)

    def add():
        for c in np.array_split(extra, 100):
            f.add_many(c)

    def remove():
        for c in np.array_split(base, 100):
            f.remove_many(c)

    _run_threads([add, remove, add])
    serial = _create("counting", 400_000)
    serial.add_many(base)
    serial.add_many(extra)
    serial.add_many(extra)
    assert f == serial and f.to_bytes() == serial.to_bytes()


@pytest.mark.parametrize("name", MUTABLE)
def test_snapshots_during_writes_are_whole(name):
    """to_bytes / copy while writers run: the checksum matches and every key added before is in."""
    f = _create(name, 400_000)
    first = _keys(100_000, 11)
    f.add_many(first)
    later = np.array_split(_keys(200_000, 12), 100)
    stop = threading.Event()

    def writer():
        for c in later:
            f.add_many(c)
        stop.set()

    def snapshotter():
        while not stop.is_set():
            g = filters.from_bytes(f.to_bytes())  # CorruptionError if the CRC missed a write
            assert g.might_contain_many(first).all()
            assert f.copy().might_contain_many(first).all()

    _run_threads([writer, snapshotter])


@pytest.mark.parametrize("name", MUTABLE)
def test_union_in_place_while_writing(name):
    f = _create(name, 300_000)
    g = _create(name, 300_000)
    theirs = _keys(100_000, 21)
    g.add_many(theirs)
    mine = np.array_split(_keys(100_000, 22), 50)

    def writer():
        for c in mine:
            f.add_many(c)

    def unite():
        nonlocal f
        f.__ior__(g)

    _run_threads([writer, unite])
    assert f.might_contain_many(theirs).all()
    assert f.might_contain_many(np.concatenate(mine)).all()
    assert f.count == 200_000


# ---- add_many(keys, threads=N): one parallel build, byte-identical to the serial one ----------


@pytest.mark.parametrize("name", MUTABLE)
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_parallel_add_many_is_byte_identical(name, threads):
    ints = _keys(100_003, 31)
    strs = [f"s{i}" for i in range(20_011)]
    serial = _create(name, 130_000)
    serial.add_many(ints)
    serial.add_many(strs)
    par = _create(name, 130_000)
    par.add_many(ints, threads=threads)
    par.add_many(strs, threads=threads)
    assert par == serial
    assert par.to_bytes() == serial.to_bytes()
    assert par.count == 120_014


@pytest.mark.parametrize("name", MUTABLE)
def test_parallel_add_many_checks_threads(name):
    f = _create(name, 1000)
    for bad in (0, -1, 2.5, "2", True):
        with pytest.raises(InvalidArgument):
            f.add_many([1, 2, 3], threads=bad)
    assert f.count == 0 and not f.might_contain_many([1, 2, 3]).any()


@pytest.mark.parametrize("name", MUTABLE)
@given(keys=st.lists(st.one_of(st.binary(max_size=12), st.integers(0, 2**64 - 1)), max_size=300, unique=True),
       threads=st.integers(1, 6))
def test_parallel_add_many_property(name, keys, threads):
    serial = _create(name, 400)
    serial.add_many(keys)
    par = _create(name, 400)
    par.add_many(keys, threads=threads)
    assert par.to_bytes() == serial.to_bytes()
    assert par.might_contain_many(keys).all()


# ---- the write gate: alone -> plain stores; overlapping -> atomic OR; exclusive -> alone -------


def test_write_gate_modes():
    from bloomdb.filters.writers import WriteGate

    g = WriteGate()
    assert g.enter_shared() is False  # alone: plain stores
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(g.enter_shared()))
    t.start()
    for _ in range(1000):  # until it is waiting (a loaded machine may start it late)
        if g._waiting:
            break
        t.join(0.01)
    assert t.is_alive() and g._waiting == 1  # an overlapping writer waits for the plain one ...
    g.leave(False)
    t.join()
    assert got == [True]  # ... then writes with atomics
    assert g.enter_shared() is True  # joins the atomic writer at once
    x = threading.Thread(target=lambda: got.append(g.enter_exclusive()))
    x.start()
    x.join(0.1)
    assert x.is_alive()  # an exclusive writer waits for every shared one
    g.leave(True)
    g.leave(True)
    x.join()
    assert got == [True, False]
    g.leave(False)
    assert g.enter_shared() is False


@pytest.mark.parametrize("name", ["standard", "blocked", "register", "sbbf"])
def test_atomic_kernels_set_the_same_bits(name):
    """The atomic write path (used when writers overlap) gives the same bytes as the plain one."""
    keys = _keys(50_000, 41)
    strs = [f"k{i}" for i in range(5000)]
    plain = _create(name, 60_000)
    atomic = _create(name, 60_000)
    from bloomdb.keys import to_batches

    for ks in (keys, strs):
        plain.add_many(ks)
        for b in to_batches(ks):
            atomic._add_batch(b, True)
    assert np.array_equal(plain._payload(), atomic._payload())
    other = _create(name, 60_000)
    other.add_many(_keys(1000, 42))
    merged_plain, merged_atomic = plain.copy(), atomic.copy()
    merged_plain._union_into(other._payload(), False)
    merged_atomic._union_into(other._payload(), True)
    assert np.array_equal(merged_plain._payload(), merged_atomic._payload())


def test_concurrent_saves_to_one_path_never_mix(tmp_path):
    """Saves from several threads used one temp name per process, so their bytes interleaved."""
    path = tmp_path / "shared.blm"
    made = [_create("blocked", 200_000) for _ in range(4)]
    for i, f in enumerate(made):
        f.add_many(_keys(150_000, 50 + i))
    stop = threading.Event()
    seen: list[str] = []

    def saver(f):
        def run():
            for _ in range(15):
                f.save(path)
        return run

    def reader():
        while not stop.is_set():
            try:
                g = filters.open(path, mmap=False)
            except FileNotFoundError:
                continue
            except CorruptionError:
                seen.append("corrupt")
                continue
            seen.append("ok" if any(g == f for f in made) else "mixed")

    t = threading.Thread(target=reader)
    t.start()
    try:
        _run_threads([saver(f) for f in made])
    finally:
        stop.set()
        t.join()
    assert "mixed" not in seen and "corrupt" not in seen
    assert any(filters.open(path) == f for f in made)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.blm"]  # no temp file left


def test_parallel_counting_build_matches_serial_when_counters_saturate():
    """Private counting copies are added up saturating at 15: the same bytes as a serial build,
    also when keys repeat so often that counters saturate."""
    keys = np.random.default_rng(3).permutation(np.repeat(_keys(2000, 71), 20))
    serial = _create("counting", 2000)
    serial.add_many(keys)
    assert serial.saturated_counters() > 0
    par = _create("counting", 2000)
    par.add_many(keys, threads=4)
    assert par.to_bytes() == serial.to_bytes()


@pytest.mark.parametrize("name", ["standard", "blocked", "register", "sbbf", "counting"])
def test_parallel_add_many_without_private_copies_is_byte_identical(name, monkeypatch):
    """Filters too big for per-thread copies are built by all threads in place with atomic OR
    (counting: hashed in parallel, filled by one thread)."""
    from bloomdb.filters import parallel

    monkeypatch.setattr(parallel, "PRIVATE_COPY_LIMIT", 0)
    keys = _keys(80_000, 61)
    serial = _create(name, 100_000)
    serial.add_many(keys)
    par = _create(name, 100_000)
    par.add_many(keys, threads=4)
    assert par.to_bytes() == serial.to_bytes()
