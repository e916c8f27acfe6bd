"""db_bench for the LSM store, LevelDB's benchmark phases from Python, with optional peers.

Phases (16-byte keys ``%016d``, 100-byte values; every engine gets the same keys in the same
order, in the same process):

* ``fillseq``: N puts in key order into an empty store;
* ``fillbatch``: N puts in random order into an empty store, in write batches of 1000 keys (each
  engine fills a batch with its binding's own API: bloomdb ``WriteBatch.put_many``, the peers a
  ``put`` per pair on their C++ batch);
* ``fillrandom``: N puts in random order into an empty store (the store the read phases use);
* ``overwrite``: N puts of present keys in random order into the filled store;
* ``readrandom``: N gets of random present keys;
* ``readmissing``: N gets of absent keys (a present key plus ``"."``, so they fall inside every
  table's key range: only the filters can save the reads);
* ``readmixed``: N gets, half present, half absent;
* ``scan``: one forward scan over the whole store (ops = entries);
* ``coldrandom`` / ``coldmissing``: close the store, reopen it and at once do N gets of present
  (absent) keys; the time includes the open and every first-read cost (filters and indexes read
  lazily). The files stay in the OS page cache: "cold" means a fresh process-level store, as a
  user opening a store meets it. A ``...-first1k`` row gives the open plus the first 1000 gets;
* ``mgetmissing``: ``multi_get`` of the absent keys in batches of 1000 (bloomdb only);
* ``seekprefix``: a store of its own, filled (untimed) in batches and flushed, under a ``PREFIX``-byte fixed
  prefix extractor (bloomdb ``FixedPrefix``, RocksDB ``SliceTransform.create_fixed_prefix``;
  LevelDB has none), then N/10 prefix seeks reading up to ``SEEK_NEXTS`` entries each, half on
  present prefixes and half on absent ones (13 digits and ``"."``: inside every table's key
  range, so only prefix filters can skip a table). bloomdb: ``iterator(prefix=p)``; RocksDB:
  ``prefix_same_as_start`` iterator ``seek(p)``; LevelDB: ``iterator(prefix=p)``.

Engines run interleaved (each phase on every engine before the next phase), so a change in the
machine's load hits them alike; each row gives wall time and this process's CPU time (all its
threads, so a peer's compaction threads count too). After each fill the harness waits for
bloomdb's background compactions (untimed), and for LevelDB's and RocksDB's compaction threads to
go idle (:func:`quiesce`: process CPU under 5% of a core over 0.25 s, at most 30 s; untimed). Peers: ``leveldb`` (plyvel, 10 bits/key Bloom filter) and
``rocksdb`` (rocksdict, 10 bits/key Bloom filter), both with their default caches.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field

PHASES = ("fillseq", "fillbatch", "fillrandom", "overwrite", "readrandom", "readmissing", "readmixed", "scan",
          "coldrandom", "coldmissing")
EXTRA_PHASES = ("mgetmissing", "seekprefix")
#: ``seekprefix``: the fixed prefix length of its store's prefix extractor (100 keys per prefix)
PREFIX = 14
#: ``seekprefix``: entries read per seek at most (RocksDB db_bench's ``seek_nexts``)
SEEK_NEXTS = 10
BATCH = 1000
VALUE_SIZE = 100


@dataclass
class PhaseResult:
    engine: str
    phase: str
    ops: int
    seconds: float
    cpu_seconds: float = 0.0  # this process's CPU time (every thread): less sensitive to other load

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else float("inf")

    @property
    def us_per_op(self) -> float:
        return self.seconds / self.ops * 1e6 if self.ops else 0.0

    @property
    def cpu_us_per_op(self) -> float:
        return self.cpu_seconds / self.ops * 1e6 if self.ops else 0.0


@dataclass
class EngineRun:
    engine: str
    results: list[PhaseResult] = field(default_factory=list)
    stats: dict | None = None


class _Bloomdb:
    name = "bloomdb"

    def __init__(self, path, filter_spec, compression=None, prefix=None):
        from ..lsm import DB, FixedPrefix, Options
        from ..lsm.fs import RealFS

        self.db = DB.open(path, Options(filter=filter_spec, compression=compression, fs=RealFS(),
                                        prefix_extractor=None if prefix is None else FixedPrefix(prefix)))
        self.get = self.db.get
        self.put = self.db.put

    def write_batch(self, pairs):
        bloomdb_write_batch(self.db, pairs)

    def settle(self):
        self.db.wait_for_compactions()

    def scan(self):
        n = 0
        for _ in self.db.scan():
            n += 1
        return n

    def multi_get(self, keys):
        return self.db.multi_get(keys)

    def seek_prefix(self, p):
        with self.db.iterator(prefix=p) as it:
            return sum(1 for _ in itertools.islice(it, SEEK_NEXTS))

    def close(self):
        self.db.close()


def bloomdb_write_batch(db, pairs) -> None:
    """``pairs`` written to the bloomdb store ``db`` as one ``WriteBatch``, filled by its bulk
    ``put_many`` (the peers' bindings have no bulk form: they ``put`` pair by pair in C)."""
    from ..lsm import WriteBatch

    db.write(WriteBatch().put_many(pairs))


def quiesce(max_wait: float = 30.0, window: float = 0.25, idle: float = 0.05) -> None:
    """Wait (at most ``max_wait`` s) until this process's threads use under ``idle`` of a core
    over ``window`` s: a peer's compaction threads, which no API lets us wait for, finish before
    the next timed phase -- else they run during the next engine's phase (bloomdb's scan, the
    first read after the fills) and count in its process CPU and its wall time."""
    end = time.perf_counter() + max_wait
    while time.perf_counter() < end:
        c, t = time.process_time(), time.perf_counter()
        time.sleep(window)
        if time.process_time() - c < idle * (time.perf_counter() - t):
            return


class _Peer:
    """What the peer stores (plyvel, rocksdict) share: background work waited for by
    :func:`quiesce`, no batched multi_get, a full scan by iteration."""

    multi_get = None

    def settle(self):
        quiesce()

    def _iterate(self):
        raise NotImplementedError

    def scan(self):
        n = 0
        for _ in self._iterate():
            n += 1
        return n

    def close(self):
        self.db.close()


class _LevelDB(_Peer):
    name = "leveldb"

    def __init__(self, path, filter_spec, compression=None, prefix=None):
        import plyvel

        self.db = plyvel.DB(path, create_if_missing=True, bloom_filter_bits=10,
                            compression="snappy" if compression else None)
        self.get = self.db.get
        self.put = self.db.put

    def write_batch(self, pairs):
        with self.db.write_batch() as b:
            for k, v in pairs:
                b.put(k, v)

    def _iterate(self):
        return self.db.iterator()

    def seek_prefix(self, p):
        it = self.db.iterator(prefix=p)
        try:
            return sum(1 for _ in itertools.islice(it, SEEK_NEXTS))
        finally:
            it.close()


class _RocksDB(_Peer):
    name = "rocksdb"

    def __init__(self, path, filter_spec, compression=None, prefix=None):
        from rocksdict import BlockBasedOptions, Options, Rdict, ReadOptions, SliceTransform

        o = Options(raw_mode=True)
        o.create_if_missing(True)
        if prefix is not None:  # prefix Bloom filters (whole-key filters stay on, as in bloomdb)
            o.set_prefix_extractor(SliceTransform.create_fixed_prefix(prefix))
        self._ro = ReadOptions()
        self._ro.set_prefix_same_as_start(True)
        b = BlockBasedOptions()
        b.set_bloom_filter(10, False)
        o.set_block_based_table_factory(b)
        self.db = Rdict(path, o)
        self.get = self.db.get
        self.put = self.db.put

    def write_batch(self, pairs):
        from rocksdict import WriteBatch

        b = WriteBatch(raw_mode=True)
        for k, v in pairs:
            b.put(k, v)
        self.db.write(b)

    def _iterate(self):
        return self.db.items()

    def seek_prefix(self, p):
        it = self.db.iter(self._ro)
        it.seek(p)
        c = 0
        while c < SEEK_NEXTS and it.valid() and it.key().startswith(p):
            c += 1
            it.next()
        return c


ENGINES = {"bloomdb": _Bloomdb, "leveldb": _LevelDB, "rocksdb": _RocksDB}


def warmup() -> None:
    """Load or compile every kernel a phase may use (flush, compaction, reads, scans, multi_get)
    on a throw-away store with a tiny memtable, so JIT time stays out of the timings. Untimed."""
    from ..filters import create
    from ..lsm import DB, Options, WriteBatch

    root = tempfile.mkdtemp(prefix="dbbench-warmup-")
    try:
        keys, shuffled, missing, values = make_keys(6000)
        o = Options(memtable_bytes=64 << 10, table_bytes=64 << 10, level1_bytes=256 << 10)
        with DB.open(os.path.join(root, "w"), o) as db:
            for i, k in enumerate(shuffled):
                db.put(k, values[i & 1023])
            db.delete(keys[0])
            db.write(WriteBatch().put(keys[1], values[1]).put(keys[2], values[2]).delete(keys[3]))
            b = WriteBatch()
            for k in keys[:32]:  # a batch of puts only: its record is laid out by a kernel
                b.put(k, values[0])
            db.write(b)
            db.wait_for_compactions()
            db.compact_range()
            for k in shuffled[:100] + missing[:100]:
                db.get(k)
            db.multi_get(shuffled[:100] + missing[:100])
            for _ in db.scan():
                pass
            for _ in db.scan(keys[10], keys[500], reverse=True):
                pass
            with db.snapshot() as snap:
                db.put(keys[1], values[1])
                for _ in db.scan(snapshot=snap):
                    pass
                db.get(keys[5], snapshot=snap)  # the lookup kernel with a snapshot: also the one a get's hand-over resumes
            for k in keys[::50]:  # a memtable and a level in one scan: the rounds' merge kernel (a
                db.put(k, values[0])  # first use costs ~10 ms to load, a whole compile without its cache)
            for _ in db.scan():
                pass
        # a store past the store filter's MIN_ENTRIES table entries checks its fill by a popcount pass
        create("blocked:10", capacity=1000).estimated_count()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def make_keys(n: int, seed: int = 301):
    """Present keys in order, the same keys shuffled, absent keys (shuffled), values."""
    keys = [b"%016d" % i for i in range(n)]
    rng = random.Random(seed)
    shuffled = keys[:]
    rng.shuffle(shuffled)
    missing = [k + b"." for k in shuffled]
    rng.shuffle(missing)
    pool = rng.randbytes(VALUE_SIZE * 1024 + VALUE_SIZE)
    values = [pool[(i * 97) % (VALUE_SIZE * 1024) :][:VALUE_SIZE] for i in range(1024)]
    return keys, shuffled, missing, values


def _progress(total, desc, enabled):
    if not enabled:
        return None
    from .progress import bar

    return bar(total, desc, unit="op", unit_scale=True)


def puts(put, order, values, bar=None):
    """The single-put fill loop of ``fillseq``/``fillrandom``/``overwrite``: ``put(order[i],
    values[i & 1023])`` for every ``i`` (``bar``: a progress bar updated every 20,000 puts). The
    write profiles in ``benchmarks/`` call it too, so they time exactly what db-bench times."""
    n = len(order)
    for s in range(0, n, 20000):
        for i in range(s, min(n, s + 20000)):
            put(order[i], values[i & 1023])
        if bar is not None:
            bar.update(min(n, s + 20000) - s)


def batches(write_batch, order, values, bar=None):
    """The ``fillbatch`` loop: ``write_batch(pairs)`` per ``BATCH`` consecutive keys of ``order``
    (an engine's ``write_batch``, e.g. :func:`bloomdb_write_batch`)."""
    n = len(order)
    for s in range(0, n, BATCH):
        write_batch([(order[i], values[i & 1023]) for i in range(s, min(n, s + BATCH))])
        if bar is not None:
            bar.update(min(n, s + BATCH) - s)


def _timed_loop(fn, items, bar, chunk=20000):
    t = time.perf_counter()
    for s in range(0, len(items), chunk):
        part = items[s : s + chunk]
        for x in part:
            fn(x)
        if bar is not None:
            bar.update(len(part))
    return time.perf_counter() - t


class _Runner:
    """One engine's store and the phases run on it, in a fresh temporary folder."""

    def __init__(self, engine: str, n: int, filter_spec, progress: bool, folder, compression, data):
        self.engine, self.n, self.spec, self.progress, self.compression = engine, n, filter_spec, progress, compression
        self.keys, self.shuffled, self.missing, self.values = data
        self.cls = ENGINES[engine]
        self.root = tempfile.mkdtemp(prefix=f"dbbench-{engine}-", dir=folder)
        self.run = EngineRun(engine)
        self.db = None
        self.path = None
        self.prefix_stats = None
        self.before_reopen = None  # bloomdb's write amplification, compactions and shape before the first reopen

    def _record(self, phase, ops, t, c):
        self.run.results.append(PhaseResult(self.engine, phase, ops, time.perf_counter() - t, time.process_time() - c))

    def _timed(self, phase, fn, ops):
        bar = _progress(ops, f"{self.engine} {phase}", self.progress)
        t, c = time.perf_counter(), time.process_time()
        fn(bar)
        self._record(phase, ops, t, c)
        if bar is not None:
            bar.close()

    def _fill(self, phase, order, batched):
        if self.db is not None:
            self.db.close()
        self.path = os.path.join(self.root, phase)
        db = self.db = self.cls(self.path, self.spec, self.compression)
        if batched:
            self._timed(phase, lambda bar: batches(db.write_batch, order, self.values, bar), self.n)
        else:
            self._timed(phase, lambda bar: puts(db.put, order, self.values, bar), self.n)
        db.settle()

    def _cold(self, phase, order):
        """Close, reopen and read at once: the open and the first reads are timed."""
        if self.engine == "bloomdb" and self.before_reopen is None:  # a reopened store's stats start afresh
            st = self.db.db.stats()
            self.before_reopen = {k: st[k] for k in ("write_amplification", "compactions", "tables_per_level")}
        self.db.close()
        self.db = None
        t, c = time.perf_counter(), time.process_time()
        self.db = self.cls(self.path, self.spec, self.compression)
        get = self.db.get
        for k in order[:1000]:
            get(k)
        self._record(phase + "-first1k", min(1000, len(order)), t, c)
        for k in order[1000:]:
            get(k)
        self._record(phase, len(order), t, c)
        r = self.run.results
        r[-1], r[-2] = r[-2], r[-1]  # the whole phase first, then its first-1000 row

    def phase(self, phase: str) -> None:
        n, shuffled, missing = self.n, self.shuffled, self.missing
        if phase == "fillseq":
            return self._fill("fillseq", self.keys, False)
        if phase == "fillbatch":
            return self._fill("fillbatch", shuffled, True)
        if phase == "fillrandom":
            return self._fill("fillrandom", shuffled, False)
        if self.db is None:
            self._fill("fillrandom", shuffled, False)
        db = self.db
        if phase == "overwrite":
            self._timed(phase, lambda bar: puts(db.put, shuffled[::-1], self.values, bar), n)
            db.settle()
        elif phase == "readrandom":
            self._timed(phase, lambda bar: _timed_loop(db.get, shuffled, bar), n)
        elif phase == "readmissing":
            self._timed(phase, lambda bar: _timed_loop(db.get, missing, bar), n)
        elif phase == "readmixed":
            mixed = [shuffled[i] if i & 1 else missing[i] for i in range(n)]
            self._timed(phase, lambda bar: _timed_loop(db.get, mixed, bar), n)
        elif phase == "scan":
            t, c = time.perf_counter(), time.process_time()
            ops = db.scan()
            self._record(phase, ops, t, c)
        elif phase in ("coldrandom", "coldmissing"):
            self._cold(phase, shuffled if phase == "coldrandom" else missing)
        elif phase == "seekprefix":
            self._seekprefix()
        elif phase == "mgetmissing":
            if db.multi_get is not None:
                batches = [missing[s : s + BATCH] for s in range(0, n, BATCH)]
                self._timed(phase, lambda bar: _timed_loop(db.multi_get, batches, None), n)
        else:
            raise ValueError(f"unknown phase {phase!r}")

    def _seekprefix(self) -> None:
        """Its own store under a prefix extractor, filled untimed; then the timed prefix seeks."""
        db = self.cls(os.path.join(self.root, "seekprefix"), self.spec, self.compression, prefix=PREFIX)
        try:
            batches(db.write_batch, self.shuffled, self.values, None)
            if callable(getattr(db.db, "flush", None)):  # bloomdb, RocksDB: every key in a table (LevelDB: no API)
                db.db.flush()
            db.settle()
            m = max(1, self.n // 10)
            sh = self.shuffled
            prefixes = [sh[i][:PREFIX] if i & 1 else sh[i][: PREFIX - 1] + b"." for i in range(m)]
            self._timed("seekprefix", lambda bar: _timed_loop(db.seek_prefix, prefixes, bar), m)
        finally:
            if self.engine == "bloomdb":
                st = db.db.stats()
                self.prefix_stats = (st["prefix_checks"], st["prefix_skips"])
            db.close()

    def close(self) -> EngineRun:
        try:
            if self.engine == "bloomdb" and self.db is not None:
                self.run.stats = self.db.db.stats()
                if self.before_reopen is not None:
                    self.run.stats["before_reopen"] = self.before_reopen
                if self.prefix_stats is not None:
                    self.run.stats["seekprefix_checks"], self.run.stats["seekprefix_skips"] = self.prefix_stats
        finally:
            if self.db is not None:
                self.db.close()
            shutil.rmtree(self.root, ignore_errors=True)
        return self.run


def run_engines(engines, phases, n: int, filter_spec: str | None, progress: bool = True,
                folder: str | None = None, compression: str | None = None) -> list[EngineRun]:
    """Run ``phases`` on every engine, interleaved: each phase runs on every engine in turn
    before the next phase starts, so a change in the machine's load hits every engine alike."""
    data = make_keys(n)
    runners = [_Runner(e, n, filter_spec, progress, folder, compression, data) for e in engines]
    try:
        for phase in phases:
            for r in runners:
                r.phase(phase)
    finally:
        runs = [r.close() for r in runners]
    return runs


def run_engine(engine: str, phases, n: int, filter_spec: str | None, progress: bool = True,
               folder: str | None = None, compression: str | None = None) -> EngineRun:
    """Run ``phases`` on one engine in a fresh temporary folder."""
    return run_engines([engine], phases, n, filter_spec, progress, folder, compression)[0]


def format_runs(runs: list[EngineRun]) -> str:
    """A table of every phase per engine (wall clock and this process's CPU time per op), and
    ratios bloomdb / peer of both."""
    lines = [f"{'engine':<10} {'phase':<20} {'ops':>10} {'ops/s':>12} {'us/op':>9} {'cpu us/op':>10}"]
    for r in runs:
        for p in r.results:
            lines.append(f"{p.engine:<10} {p.phase:<20} {p.ops:>10,} {p.ops_per_s:>12,.0f} {p.us_per_op:>9.2f} "
                         f"{p.cpu_us_per_op:>10.2f}")
    base = runs[0]
    for peer in runs[1:]:
        lines.append("")
        lines.append(f"ratio {base.engine} / {peer.engine} (>1 means {base.engine} is faster): wall ops/s, CPU per op")
        pr = {p.phase: p for p in peer.results}
        for p in base.results:
            q = pr.get(p.phase)
            if q is not None:
                cpu = q.cpu_seconds / q.ops / (p.cpu_seconds / p.ops) if p.cpu_seconds > 0 and q.ops else float("nan")
                lines.append(f"  {p.phase:<20} {p.ops_per_s / q.ops_per_s:>6.2f}x {cpu:>8.2f}x")
    if base.stats:
        s = base.stats
        lines.append("")
        lines.append(
            f"bloomdb filter stats: checks {s['filter_checks']:,}, useful {s['filter_useful']:,} "
            f"({100 * s['filter_useful_ratio']:.1f}%), positives {s['filter_positive']:,}, "
            f"true positives {s['true_positive']:,}, data blocks read {s['data_blocks_read']:,}, "
            f"filter bytes on disk {s['filter_bytes']:,}")
        lines.append(f"bloomdb read amplification {s['read_amplification']:.2f} data blocks per table lookup "
                     f"({s['table_lookups']:,} lookups); "
                     f"memory held by filters {s['filter_memory_bytes']:,} B, by indexes {s['index_memory_bytes']:,} B")
        lines.append(f"bloomdb tables per level {s['tables_per_level']}, write amplification "
                     f"{s['write_amplification']:.2f}")
        if "store_filter_bytes" in s:
            lines.append(f"bloomdb store filter: {s['store_filter_bytes']:,} B, covers the version "
                         f"{'yes' if s['store_filter_covers'] else 'no'}, checks {s['store_filter_checks']:,}, "
                         f"negatives {s['store_filter_negatives']:,} (missing at once, no table filter)")
        if "before_reopen" in s:
            b = s["before_reopen"]
            lines.append(f"bloomdb before the first reopen: tables per level {b['tables_per_level']}, "
                         f"write amplification {b['write_amplification']:.2f}, compactions {b['compactions']:,}")
        if "seekprefix_checks" in s:
            lines.append(f"bloomdb seekprefix: {s['seekprefix_skips']:,} of {s['seekprefix_checks']:,} table reads "
                         "skipped by prefix filters")
    return "\n".join(lines)
