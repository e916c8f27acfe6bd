"""Result columns of a join whose key pair is named differently (``left_on="k", right_on="kk"``):
both key columns are kept in every join kind, as pandas' ``merge`` and DuckDB's ``SELECT *`` keep
them -- ``k`` the probe row's value (null on build-only rows), ``kk`` the build row's (null on
probe-only rows); a key named alike on both sides stays one coalesced column (``USING``). Before,
right / full joins filled ``k`` from ``kk`` and every join dropped ``kk``."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

KIND = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "full": "FULL OUTER"}
PANDAS = {"inner": "inner", "left": "left", "right": "right", "full": "outer"}
PROBE = pa.table({"k": [1, 2, 2, None, 5], "j": ["a", "b", "c", "a", "x"], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
BUILD = pa.table({"kk": [2, 3, None, 1], "j": ["b", "a", "a", "z"], "w": [20, 30, 40, 10]})


def _rows(t: pa.Table) -> list:
    return sorted(t.to_pylist(), key=lambda r: [(x is None, str(x)) for x in r.values()])


def _duck(sql: str) -> pa.Table:
    con = duckdb.connect()
    con.register("p", PROBE)
    con.register("b", BUILD)
    return con.sql(sql).to_arrow_table()


@pytest.mark.parametrize("how", sorted(KIND))
def test_keys_named_apart_are_both_kept_as_duckdb_and_pandas(how):
    got = hash_join(PROBE, BUILD.drop_columns(["j"]), left_on="k", right_on="kk", how=how)
    assert got.column_names == ["k", "j", "v", "kk", "w"]
    want = _duck(f"SELECT p.*, b.kk, b.w FROM p {KIND[how]} JOIN b ON p.k = b.kk")
    assert _rows(got) == _rows(want)
    merged = pd.merge(PROBE.to_pandas(), BUILD.drop_columns(["j"]).to_pandas(), left_on="k", right_on="kk",
                      how=PANDAS[how])
    assert list(merged.columns) == got.column_names  # (pandas' rows differ: it matches a null key with a null)


@pytest.mark.parametrize("how", sorted(KIND))
def test_a_key_pair_named_alike_beside_one_named_apart(how):
    got = hash_join(PROBE, BUILD, left_on=["k", "j"], right_on=["kk", "j"], how=how)
    assert got.column_names == ["k", "j", "v", "kk", "w"]
    want = _duck(f"SELECT p.k, {'coalesce(p.j, b.j)' if how in ('right', 'full') else 'p.j'} AS j, p.v, b.kk, b.w "
                 f"FROM p {KIND[how]} JOIN b ON p.k = b.kk AND p.j = b.j")
    assert _rows(got) == _rows(want)


def test_columns_named_k_is_the_probe_value_when_the_build_key_is_named_apart():
    got = hash_join(PROBE, BUILD, left_on="k", right_on="kk", how="right", columns=["k", "kk", "w"])
    want = _duck("SELECT p.k, b.kk, b.w FROM p RIGHT JOIN b ON p.k = b.kk")
    assert _rows(got) == _rows(want)


def test_on_k_still_coalesces():
    build = BUILD.rename_columns(["k", "j", "w"]).drop_columns(["j"])
    got = hash_join(PROBE, build, on="k", how="full")
    assert got.column_names == ["k", "j", "v", "w"]
    con = duckdb.connect()
    con.register("p", PROBE)
    con.register("b", build)
    assert _rows(got) == _rows(con.sql("SELECT * FROM p FULL OUTER JOIN b USING (k)").to_arrow_table())


GP = pa.table({"k": pa.array([1, 2, 2, None], pa.int32()), "v": [1, 2, 3, 4]})
GB = pa.table({"k": [2, 3, 3, None], "w": [20, 30, 31, 40]})


@pytest.mark.parametrize("how", sorted(KIND))
@pytest.mark.parametrize("probe", ["int32", "null"])
def test_group_by_the_joined_key_is_coalesced_as_using(how, probe):
    """group_by="k" in a right / full join groups build-only rows by their key, as DuckDB's
    ``USING (k) GROUP BY k`` (they all fell into the null group before); "probe.k" stays the
    probe row's own value."""
    p = GP if probe == "int32" else GP.set_column(0, "k", pa.nulls(4))
    con = duckdb.connect()
    con.register("p", p)
    con.register("b", GB)
    aggs = 'count(*) AS "count(*)", sum(w) AS "sum(w)", max(v) AS "max(v)"'
    want = con.sql(f"SELECT k, {aggs} FROM p {KIND[how]} JOIN b USING (k) GROUP BY k").to_arrow_table()
    got = hash_join(p, GB, on="k", how=how, aggregates=["count(*)", "sum(w)", "max(v)"], group_by="k")
    assert _rows(got) == _rows(want.set_column(2, "sum(w)", want["sum(w)"].cast(pa.int64())))
    want = con.sql(f"SELECT p.k AS \"probe.k\", {aggs} FROM p {KIND[how]} JOIN b ON p.k = b.k GROUP BY p.k")
    got = hash_join(p, GB, on="k", how=how, aggregates=["count(*)", "sum(w)", "max(v)"], group_by="probe.k")
    want = want.to_arrow_table()
    assert _rows(got) == _rows(want.set_column(2, "sum(w)", want["sum(w)"].cast(pa.int64())))


AP = {"int": pa.table({"k": pa.array([1, 2, 2, None], pa.int32()), "v": [1, 2, 3, 4], "g": ["x", "y", "x", "y"]}),
      "str": pa.table({"k": ["a", "b", "b", None], "v": [1, 2, 3, 4], "g": ["x", "y", "x", "y"]})}
AB = {"int": pa.table({"k": [2, 3, 9, None], "w": [20, 30, 30, 40]}),
      "str": pa.table({"k": ["b", "c", "z", None], "w": [20, 30, 30, 40]})}


@pytest.mark.parametrize("how", sorted(KIND))
@pytest.mark.parametrize("kind", ["int", "str"])
@pytest.mark.parametrize("group", [None, "w", "g", "k"])
def test_aggregates_of_the_joined_key_as_using(how, kind, group):
    """count/sum/min/max/avg(k) in right / full joins aggregate the joined key (its build value on
    build-only rows), as DuckDB's ``USING (k)``; they read the probe's null there before."""
    p, b = AP[kind], AB[kind]
    funcs = ["count", "min", "max"] + (["sum", "avg"] if kind == "int" else [])
    con = duckdb.connect()
    con.register("p", p)
    con.register("b", b)
    sel = ", ".join(f'{f}(k) AS "{f}(k)"' for f in funcs) + ", " + ", ".join(f'{f}(p.k) AS "{f}(probe.k)"' for f in funcs)
    gsel = f"{group}, " if group else ""
    want = con.sql(f"SELECT {gsel}{sel} FROM p {KIND[how]} JOIN b USING (k)" + (f" GROUP BY {group}" if group else ""))
    want = want.to_arrow_table()
    aggs = [f"{f}(k)" for f in funcs] + [f"{f}(probe.k)" for f in funcs]
    got = hash_join(p, b, on="k", how=how, aggregates=aggs, group_by=group)
    norm = lambda r: {c: (float(x) if c.startswith("sum") and x is not None else x) for c, x in r.items()}  # noqa: E731
    if group is None:
        assert norm(got) == norm(want.to_pylist()[0])
    else:
        assert sorted(map(norm, got.to_pylist()), key=repr) == sorted(map(norm, want.to_pylist()), key=repr)
