"""`bloomdb warmup` leaves nothing for a first call to compile."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from bloomdb.cli.main import main

FIRST_CALLS = textwrap.dedent('''
    import os, sys, tempfile
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    from numba.core import event

    compiled = []

    class Count(event.Listener):
        def on_start(self, e):
            compiled.append(e.data["dispatcher"].py_func.__qualname__)

        def on_end(self, e):
            pass

    os.chdir(tempfile.mkdtemp())
    pq.write_table(pa.table({"user_id": np.arange(0, 300_000, 3), "amount": np.linspace(0, 1, 100_000)}),
                   "events.parquet", row_group_size=25_000)
    event.register("numba:compile", Count())
    from bloomdb import columnar, filters, parquet
    from bloomdb.join import hash_join
    from bloomdb.lsm import DB, Options

    f = filters.create("blocked:10", capacity=1_000_000)
    f.add_many(np.arange(1_000_000, dtype=np.uint64)); f.add("alice")
    f.might_contain("alice"); f.might_contain_many(["bob", "alice"])
    f.save("users.blm"); filters.open("users.blm", mmap=True)
    parquet.ParquetColumns("events.parquet").read(row_group=0, column="amount", positions=np.array([3, 20_000]))
    for _ in range(2):  # create, then recover
        with DB.open("store", Options(filter="blocked:10")) as db:
            db.put(b"alice", b"1"); db.get(b"alice"); db.multi_get([b"alice", b"nobody"]); list(db.scan(b"a", b"z"))
    columnar.write("facts", pa.table({"k": np.arange(100_000), "v": np.ones(100_000)}))
    hash_join("facts", pa.table({"k": np.arange(0, 100_000, 7)}), on="k", aggregates=["sum(v)", "count(*)"])
    print("COMPILED", sorted(set(compiled)))
''')


def test_warmup_command_runs_a_step(capsys):
    assert main(["warmup", "--only", "filters"]) == 0
    assert "filters" in capsys.readouterr().out


@pytest.mark.slow
def test_after_warmup_first_calls_compile_nothing():
    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "bloomdb.cli.main", "warmup"], check=True, env=env, capture_output=True)
    out = subprocess.run([sys.executable, "-c", FIRST_CALLS], check=True, env=env, capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "COMPILED []", out.stdout[-2000:]
