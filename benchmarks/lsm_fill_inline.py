"""The CPU a fill's background work costs, without the threads' scheduling noise.

    PYTHONPATH=src python benchmarks/lsm_fill_inline.py 1000000 batch|seq|random

Fills N db-bench keys (db-bench's own loops) into a store opened with
``Options(background_compaction=False)``: every flush and compaction runs inline in the writer,
at the same points on every run, so the process CPU, the flush and compaction CPU (thread time of
``DB._flush_imm`` and ``Background.run_task``) and the bytes compacted are comparable between two
versions of the code on a loaded machine (the threaded fill's compactions depend on timing:
``benchmarks/lsm_write_waits.py`` measures that one). The output tables' files are still written
by the file writer thread (counted in the process CPU, not in "compaction").
"""
import collections
import functools
import os
import shutil
import sys
import tempfile
import time

from bloomdb.bench.db_bench import batches, bloomdb_write_batch, make_keys, puts, warmup
from bloomdb.lsm import DB, Options
import bloomdb.lsm.background as BG
import bloomdb.lsm.db as DBM

warmup()
cpu = collections.defaultdict(lambda: [0, 0.0])


def timed(cls, name):
    f = getattr(cls, name)

    def w(*a, **k):
        c = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            e = cpu[name]
            e[0] += 1
            e[1] += time.thread_time() - c

    setattr(cls, name, w)


timed(DBM.DB, "_flush_imm")
timed(BG.Background, "run_task")
n, mode = int(sys.argv[1]), sys.argv[2]
keys, shuffled, missing, values = make_keys(n)
order = keys if mode == "seq" else shuffled
root = tempfile.mkdtemp()
db = DB.open(os.path.join(root, "db"), Options(background_compaction=False))
t, c = time.perf_counter(), time.process_time()
if mode == "batch":
    batches(functools.partial(bloomdb_write_batch, db), order, values)
else:
    puts(db.put, order, values)
wall, pcpu = time.perf_counter() - t, time.process_time() - c
(nf, fl), (nc, co) = cpu["_flush_imm"], cpu["run_task"]
print(f"{mode} n={n} inline: process CPU {pcpu:.2f}s (flush {fl:.2f}s in {nf}, compaction {co:.2f}s in {nc}, "
      f"the rest {pcpu - fl - co:.2f}s), wall {wall:.2f}s, {db._stats['bytes_compacted'] / 1e6:.0f} MB compacted, "
      f"load {os.getloadavg()[0]:.1f}")
db.close()
shutil.rmtree(root)
