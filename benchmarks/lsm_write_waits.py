"""Where a threaded fill's wall time goes: the writer's CPU, its waits, the background steps.

    PYTHONPATH=src python benchmarks/lsm_write_waits.py 1000000 seq|random|batch|over [switch_interval]

Fills N db-bench keys through ``DB`` with the background threads on (as ``db-bench`` does) and
reports the writer thread's CPU, the time it spent waiting for room (``wait:imm``: the previous
memtable's flush not done; ``wait:l0stop``: ``level0_stop`` L0 tables), and per background step
(flush, compaction, manifest edits written outside the store's lock, manifest writes under it)
calls, wall and thread CPU seconds. A background step whose wall is many times its CPU waited
for the GIL or the CPU, not for its own work. ``over``: fill (untimed), then overwrite every key.
The optional ``switch_interval`` sets ``sys.setswitchinterval`` for the run (an experiment, the
store never sets it). ``gc``: the cyclic garbage collector's passes during the fill, per
generation, with their wall time (they run in whichever thread allocates when a threshold is
crossed: in a fill, mostly the writer).
"""
import collections
import gc
import os
import shutil
import sys
import tempfile
import threading
import time

import functools

from bloomdb.bench.db_bench import batches, bloomdb_write_batch, make_keys, puts, warmup
from bloomdb.lsm import DB, Options
import bloomdb.lsm.background as BG
import bloomdb.lsm.db as DBM
import bloomdb.lsm.version_set as VS

warmup()
if len(sys.argv) > 3:
    sys.setswitchinterval(float(sys.argv[3]))
waits = collections.defaultdict(float)
counts = collections.Counter()
steps = collections.defaultdict(lambda: [0, 0.0, 0.0])
gc_passes = collections.defaultdict(lambda: [0, 0.0])
gc_start = [0.0]


def on_gc(phase, info):
    """gc.callbacks hook: count and time each collection by generation."""
    if phase == "start":
        gc_start[0] = time.perf_counter()
    else:
        e = gc_passes[info["generation"]]
        e[0] += 1
        e[1] += time.perf_counter() - gc_start[0]


def instrument(db):
    """Time the main thread's waits on the store's condition, by what it waited for."""
    cond, main = db._cond, threading.main_thread()
    real = cond.wait

    def wait(timeout=None):
        if threading.current_thread() is not main:
            return real(timeout)
        why = "imm" if db._imm is not None else (
            "l0stop" if len(db._version.levels[0]) >= db.options.level0_stop else "other")
        t = time.perf_counter()
        try:
            return real(timeout)
        finally:
            waits[why] += time.perf_counter() - t
            counts[why] += 1

    cond.wait = wait


def wrap(cls, name, label):
    f = getattr(cls, name)

    def timed(*a, **k):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return f(*a, **k)
        finally:
            e = steps[label]
            e[0] += 1
            e[1] += time.perf_counter() - t
            e[2] += time.thread_time() - c

    setattr(cls, name, timed)


moves = [0]
by_level = collections.defaultdict(lambda: [0, 0, 0.0])
_real_run = BG.executor.run


def counted_run(task, version, ctx):
    t = time.perf_counter()
    out = _real_run(task, version, ctx)
    moves[0] += task.trivial_move
    e = by_level[task.level]
    e[0] += 1
    e[1] += out[2]
    e[2] += time.perf_counter() - t
    return out


BG.executor.run = counted_run
wrap(DBM.DB, "_flush_imm", "flush (table write + install)")
wrap(BG.Background, "run_task", "compaction (+ install)")
wrap(VS.VersionSet, "write_edit", "manifest edit (no store lock)")
wrap(BG.Background, "pick", "pick (which compaction next)")
wrap(VS.VersionSet, "save", "manifest write (store lock held)")

n, mode = int(sys.argv[1]), sys.argv[2]
keys, shuffled, missing, values = make_keys(n)
order = keys if mode == "seq" else shuffled
root = tempfile.mkdtemp()
db = DB.open(os.path.join(root, "db"), Options())
instrument(db)
if mode == "over":
    puts(db.put, order, values)
    db.wait_for_compactions()
    waits.clear(), counts.clear(), steps.clear()
    order = shuffled[::-1]
gc.callbacks.append(on_gc)
t, c, p = time.perf_counter(), time.thread_time(), time.process_time()
if mode == "batch":  # db-bench's own fill loops: the same work it times
    batches(functools.partial(bloomdb_write_batch, db), order, values)
else:
    puts(db.put, order, values)
wall, cpu, pcpu = time.perf_counter() - t, time.thread_time() - c, time.process_time() - p
gc.callbacks.remove(on_gc)
print(f"{mode} n={n}: wall {wall:.2f}s, writer CPU {cpu:.2f}s, process CPU {pcpu:.2f}s, "
      f"load {os.getloadavg()[0]:.1f}, switch interval {sys.getswitchinterval() * 1e3:g} ms")
for why, s in sorted(waits.items()):
    print(f"  writer wait:{why:<8} {s:6.2f}s in {counts[why]} waits")
for label, (m, w, cc) in steps.items():
    print(f"  {label:<34} calls {m:4d}  wall {w:6.2f}s  cpu {cc:6.2f}s")
print("  gc " + ", ".join(f"gen{g}: {m} passes {w:.2f}s" for g, (m, w) in sorted(gc_passes.items())))
print("  tables per level at the end", [len(lv) for lv in db._version.levels])
print("  compactions", db._stats["compactions"], "trivial moves", moves[0], "bytes compacted", db._stats["bytes_compacted"],
      "wal bytes", db._stats["wal_bytes"] + db._log.bytes)
for lvl, (m, b, w) in sorted(by_level.items()):
    print(f"    from L{lvl}: {m} compactions, {b / 1e6:.0f} MB written, {w:.2f}s wall")
db.close()
shutil.rmtree(root)
