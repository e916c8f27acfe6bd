"""The row-returning join's output paths at chunk scale, against DuckDB: a left join whose build
keys are unique (one branch-free kernel fills build columns and their validity), with null build
values and chunks of a length that is not a multiple of 8; and results that stay intact while
later joins reuse the memory of dropped results (:mod:`bloomdb.recycled`)."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

from bloomdb import columnar
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")


def _sorted(t: pa.Table) -> pa.Table:
    t = t.rename_columns([f"c{i}" for i in range(t.num_columns)])
    return t.sort_by([(c, "ascending") for c in t.column_names])


def _duck(sql: str, **tables) -> pa.Table:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return con.sql(sql).to_arrow_table()


def _same(a: pa.Table, b: pa.Table) -> bool:
    x, y = _sorted(a), _sorted(b)
    return x.num_rows == y.num_rows and all(u.equals(v.cast(u.type)) for u, v in zip(x.columns, y.columns))


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 70_003  # one full chunk of 65,536 rows and a ragged one
    t = pa.table({"k": rng.integers(0, 4000, n), "v": rng.integers(-9, 9, n)})
    path = str(tmp_path_factory.mktemp("rows") / "p.bdc")
    columnar.write(path, t)
    return path, t


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("pushdown", ["on", "off"])
def test_left_join_unique_build_matches_duckdb(probe, nulls, pushdown):
    path, p = probe
    rng = np.random.default_rng(9)
    keys = rng.permutation(8000)[:700]  # unique keys, about 9% of probe rows match
    payload = pa.array(np.arange(700, dtype=np.int64), mask=(np.arange(700) % 3 == 0) if nulls else None)
    b = pa.table({"k": keys, "payload": payload, "w": rng.normal(size=700)})
    got = hash_join(path, b, on="k", how="left", columns=["k", "v", "payload", "w"], pushdown=pushdown)
    want = _duck("SELECT p.k, p.v, b.payload, b.w FROM p LEFT JOIN b ON p.k = b.k", p=p, b=b)
    assert got.num_rows == p.num_rows and _same(got, want)
    assert got["payload"].null_count == want["payload"].null_count


def test_results_survive_the_reuse_of_dropped_results(probe):
    path, p = probe
    rng = np.random.default_rng(2)
    b = pa.table({"k": np.repeat(rng.permutation(4000)[:400], 10), "payload": np.arange(4000, dtype=np.int64)})
    want = _duck("SELECT p.k, p.v, b.payload FROM p JOIN b ON p.k = b.k", p=p, b=b)
    kept = hash_join(path, b, on="k", columns=["k", "v", "payload"])
    for _ in range(3):  # each join writes into the memory the previous dropped result held
        dropped = hash_join(path, b, on="k", columns=["k", "v", "payload"])
        assert _same(dropped, want)
        del dropped
        gc.collect()
    assert _same(kept, want)
