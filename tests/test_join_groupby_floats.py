"""``group_by`` on float columns groups as DuckDB does: -0.0 and 0.0 are one group, NaNs one group,
nulls one group -- on a probe group column, a build group column (the hash and the dense paths)
and from Parquet; a randomized join + group-by + aggregates check against DuckDB."""

from __future__ import annotations

import collections
import math
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

NAN = float("nan")
FLOATS = [NAN, -0.0, 0.0, 1.5, None, math.inf]


def _canon(v):
    if isinstance(v, float):
        return "nan" if v != v else round(v, 6) + 0.0  # -0.0 prints as 0.0 in both answers
    if isinstance(v, int) and not isinstance(v, bool):
        return round(float(v), 6)
    return v


def _rows(rows) -> collections.Counter:
    return collections.Counter(tuple(_canon(x) for x in r) for r in rows)


def _duck(p, b, sql):
    con = duckdb.connect()
    con.register("p", p)
    con.register("b", b)
    return con.sql(sql).fetchall()


def test_negative_zero_groups_with_zero_on_the_probe_side():
    p = pa.table({"k": [1, 1, 1, 1], "g": [0.0, -0.0, NAN, NAN], "v": [1, 2, 3, 4]})
    got = hash_join(p, pa.table({"k": [1]}), on="k", aggregates=["sum(v)", "count(*)"], group_by="g")
    assert got.num_rows == 2
    assert sorted(map(str, got.to_pylist())) == sorted(map(str, [{"g": 0.0, "sum(v)": 3, "count(*)": 2},
                                                                 {"g": NAN, "sum(v)": 7, "count(*)": 2}]))


@pytest.mark.parametrize("agg", ["count(*)", "sum(v)"])  # the weighted dense path and the pairs path
def test_negative_zero_groups_with_zero_on_the_build_side(agg):
    p = pa.table({"k": [1, 2, 2], "v": [10, 20, 30]})
    b = pa.table({"k": [1, 2], "h": [0.0, -0.0]})
    got = hash_join(p, b, on="k", aggregates=[agg], group_by="h")
    want = _duck(p, b, f"SELECT b.h, {agg.replace('(v)', '(p.v)')} FROM p JOIN b ON p.k = b.k GROUP BY b.h")
    assert _rows([tuple(r.values()) for r in got.to_pylist()]) == _rows(want)
    assert got.num_rows == 1


@pytest.mark.parametrize("seed", range(60))
def test_grouped_aggregates_on_float_groups_match_duckdb(tmp_path, seed):
    rng = random.Random(seed)
    n, m = rng.choice([0, 1, 10, 50]), rng.choice([0, 1, 5, 20])
    p = pa.table({"k": pa.array([rng.choice([0, 1, 2, 3, None]) for _ in range(n)], pa.int64()),
                  "g": pa.array([rng.choice(FLOATS) for _ in range(n)], pa.float64()),
                  "s": pa.array([rng.choice(["a", "b", None, ""]) for _ in range(n)]),
                  "v": pa.array([rng.choice([1, -5, None, 2**40]) for _ in range(n)], pa.int64()),
                  "f": pa.array([rng.choice(FLOATS) for _ in range(n)], pa.float64())})
    b = pa.table({"k": pa.array([rng.choice([0, 1, 2, 4, None]) for _ in range(m)], pa.int64()),
                  "h": pa.array([rng.choice(FLOATS) for _ in range(m)], pa.float32()),
                  "t": pa.array([rng.choice(["x", "y", None]) for _ in range(m)]),
                  "w": pa.array([rng.choice([1, 7, None]) for _ in range(m)], pa.int32())})
    how = rng.choice(["inner", "left", "right", "full", "semi", "anti"])
    groups = rng.sample(["g", "s", "h", "t"] if how not in ("semi", "anti") else ["g", "s"], rng.choice([1, 2]))
    aggs = ["count(*)", "sum(v)", "min(v)", "max(v)", "avg(v)", "count(v)", "sum(f)", "min(f)", "max(f)", "avg(f)"]
    if how not in ("semi", "anti"):
        aggs += ["sum(w)", "count(w)", "min(h)", "max(h)", "avg(w)"]
    aggs = rng.sample(aggs, rng.choice([1, 2, 3]))
    probe = p
    if rng.random() < 0.4:
        pq.write_table(p, tmp_path / "p.parquet", row_group_size=rng.choice([3, 100]))
        probe = str(tmp_path / "p.parquet")
    got = hash_join(probe, b, on="k", how=how, aggregates=aggs, group_by=groups, chunk_rows=rng.choice([4, 65536]))

    def side(c):
        return "b" if c in ("w", "h", "t") else "p"

    gcols = [f"{side(c)}.{c}" for c in groups]
    sel = gcols + [a if a == "count(*)" else f"{a.split('(')[0]}({side(a[-2])}.{a[-2]})" for a in aggs]
    kind = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "full": "FULL OUTER", "semi": "SEMI", "anti": "ANTI"}
    want = _duck(p, b, f"SELECT {', '.join(sel)} FROM p {kind[how]} JOIN b ON p.k = b.k GROUP BY {', '.join(gcols)}")
    assert _rows([tuple(r.values()) for r in got.to_pylist()]) == _rows(want)
