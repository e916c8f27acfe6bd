"""Where the LSM write path's time goes, per phase (issue 14 asks for a profile, not a guess).

    PYTHONPATH=src python benchmarks/lsm_write_profile.py 1000000 seq|random|batch

Fills N keys (db-bench's keys and values) through ``DB`` with flushes and compactions inline
(``background_compaction=False``: one thread, so thread CPU time splits cleanly), timing the
flush and compaction steps by wrapping the functions that do them. "put path" is what is left:
the WAL append and memtable insert of every write. Prints calls, wall and CPU seconds and CPU us
per key written. cProfile cannot see inside numba kernels or the background thread; this can.
"""
import sys, tempfile, time, os, shutil, collections, functools
import numpy as np
from bloomdb.lsm import DB, Options
from bloomdb.bench.db_bench import batches, bloomdb_write_batch, make_keys, puts, warmup
import bloomdb.lsm.memtable as MT
import bloomdb.lsm.logrun as LR
import bloomdb.lsm.sstable.builder as B
import bloomdb.lsm.compaction.executor as EX
import bloomdb.lsm.sstable.reader as R
import bloomdb.lsm.version_set as VS
import bloomdb.lsm.db as DBM
warmup()
acc = collections.defaultdict(lambda: [0, 0.0, 0.0])
def wrap(mod, name, label):
    f = getattr(mod, name, None)
    if f is None:  # a step that no longer exists in this version
        return
    @functools.wraps(f)
    def g(*a, **k):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return f(*a, **k)
        finally:
            e = acc[label]; e[0] += 1; e[1] += time.perf_counter() - t; e[2] += time.thread_time() - c
    setattr(mod, name, g)
wrap(MT.MemTable, "table_arrays", "flush: memtable -> sorted arrays")
wrap(LR, "table_arrays", "flush: log -> sorted arrays (or None)")
for nm in ("encode_blocks",):
    wrap(B.K, nm, "build: encode_blocks kernel")
wrap(B.TK, "frame_raw", "build: frame_raw + crc")
wrap(B.TK, "put_u32", "build: put CRCs")
wrap(B.TK, "encode_index", "build: encode_index")
wrap(B, "_table_filter", "build: filter")
wrap(B, "_prefix_filter", "build: prefix filter")
wrap(B, "build_table_arrays", "build: total (incl. write+fsync)")
wrap(EX, "Table", "table open after build")
wrap(EX, "merge_arrays", "compaction: decode+merge+gather")
wrap(R, "decode_tables", "compaction: decode inputs")
wrap(EX.K, "merge_runs", "compaction: merge_runs")
wrap(EX.K, "split_points", "compaction: split_points")
wrap(EX, "gather", "compaction: gather")
wrap(EX, "run", "compaction: total")
wrap(DBM.DB, "_write_table", "flush: total")
wrap(VS.VersionSet, "save", "manifest write (file numbers)")
wrap(VS.VersionSet, "write_edit", "manifest write (edits)")
n = int(sys.argv[1]); mode = sys.argv[2]
keys, shuffled, missing, values = make_keys(n)
order = keys if mode == "seq" else shuffled
root = tempfile.mkdtemp(dir="/tmp/lsmw")
db = DB.open(os.path.join(root, "db"), Options(background_compaction=False))
t = time.perf_counter(); c = time.thread_time()
if mode == "batch":  # db-bench's own fill loops: the same work it times
    batches(functools.partial(bloomdb_write_batch, db), order, values)
else:
    puts(db.put, order, values)
wall, cpu = time.perf_counter() - t, time.thread_time() - c
db.close(); shutil.rmtree(root)
print(f"{mode} n={n}: wall {wall:.2f}s cpu {cpu:.2f}s ({cpu/n*1e6:.2f} us/op)")
print(f"{'phase':<40} {'calls':>6} {'wall s':>8} {'cpu s':>8} {'cpu us/key':>10}")
for k, (cnt, w, cc) in sorted(acc.items()):
    print(f"{k:<40} {cnt:>6} {w:>8.2f} {cc:>8.2f} {cc/n*1e6:>10.2f}")
f = acc["flush: total"][2] + acc["compaction: total"][2]
print(f"{'put path (rest)':<40} {'':>6} {'':>8} {cpu - f:>8.2f} {(cpu-f)/n*1e6:>10.2f}")
