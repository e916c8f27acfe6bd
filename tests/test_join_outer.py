"""Issue 16's join forms against DuckDB on random data: every ``how`` (left / right / full too),
columns from both sides, aggregates over probe and build columns, ``group_by`` on either side,
``where`` predicates, ``stream=True`` read to the end, every pushdown mode and filter."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_join_fuzz import _SETTINGS, PARTNERS, KEY_TYPES, _data, _store

from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

HOWS = ["inner", "left", "right", "full", "semi", "anti"]
JOIN_SQL = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN", "semi": "SEMI JOIN",
            "anti": "ANTI JOIN"}
WITH_BUILD = ("inner", "left", "right", "full")
PREDICATES = [
    None,
    ("v", ">", 0),
    [("v", "<=", 2**39), ("f", "is not null")],
    ("rid", "in", [0, 3, 5, 7, 11, 13, 40, 41, 42]),
    ("g", "not in", [1, 2]),
    ("f", "<", 0.5),
    ("f", ">", 0.5),  # NaN orders above every number (DuckDB)
    [("rid", ">=", 100), ("rid", "<", 140), ("g", "!=", 0)],  # statistics skip most chunks
]


def _sql_pred(p) -> str:
    if p is None:
        return "TRUE"
    if isinstance(p, list):
        return " AND ".join(_sql_pred(x) for x in p)
    col, op, *rest = p
    if op in ("is null", "is not null"):
        return f"{col} {op}"
    v = rest[0]
    if op in ("in", "not in"):
        return f"{col} {op} ({', '.join(map(str, v))})"
    return f"{col} {op} {v}"


@st.composite
def outer_shapes(draw):
    ptype = draw(st.sampled_from(sorted(KEY_TYPES)))
    return dict(
        seed=draw(st.integers(0, 2**32 - 1)),
        ptype=ptype,
        btype=draw(st.sampled_from(PARTNERS[ptype])) or ptype,
        n_probe=draw(st.sampled_from([0, 1, 7, 50, 300, 2000])),
        n_build=draw(st.sampled_from([0, 1, 5, 40, 300])),
        key_range=draw(st.sampled_from([1, 4, 50, 1000, 100_000])),
        null_frac=draw(st.sampled_from([0.0, 0.1, 0.9])),
        how=draw(st.sampled_from(HOWS)),
        source=draw(st.sampled_from(["arrow", "parquet", "parquet_bloom", "columnar"])),
        build_source=draw(st.sampled_from(["arrow", "parquet"])),
        pushdown=draw(st.sampled_from(["on", "off", "adaptive"])),
        filter=draw(st.sampled_from(["register:2", "blocked:10", None])),
        threads=draw(st.sampled_from([1, 2])),
        chunk_rows=draw(st.sampled_from([1, 16, 256, 65536])),
        mode=draw(st.sampled_from(["rows", "stream", "aggregates", "group_probe", "group_build", "group_both"])),
        where=draw(st.sampled_from(range(len(PREDICATES)))),
        k2=draw(st.none() | st.sampled_from([("int64", "int32", 3), ("string", "large_string", 2)])),
    )


def _tables(s: dict) -> tuple[pa.Table, pa.Table]:
    probe, build = _data(s)
    rng = np.random.default_rng(s["seed"] + 1)
    probe = probe.append_column("g", pa.array(rng.integers(0, 4, probe.num_rows), pa.int64(),
                                              mask=rng.random(probe.num_rows) < 0.1))
    build = build.append_column("bg", pa.array(rng.integers(0, 3, build.num_rows).astype(str),
                                               mask=rng.random(build.num_rows) < 0.1))
    build = build.append_column("bv", pa.array(rng.integers(-1000, 1000, build.num_rows), pa.int32(),
                                               mask=rng.random(build.num_rows) < 0.1))
    return probe, build


def _duck(s: dict, select: str, p: pa.Table, b: pa.Table, tail: str = "") -> list[tuple]:
    on = "p.k = b.k" + (" AND p.k2 = b.k2" if s["k2"] is not None else "")
    pred = _sql_pred(PREDICATES[s["where"]])
    con = duckdb.connect()
    con.register("p0", p)
    con.register("b", b)
    sql = f"SELECT {select} FROM (SELECT * FROM p0 WHERE {pred}) p {JOIN_SQL[s['how']]} b ON {on} {tail}"
    return con.sql(sql).fetchall()


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isnan(a) and math.isnan(b) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return a == b


def _sorted(rows) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple((x is None, repr(x)) for x in r))


AGGS = ["count(*)", "sum(v)", "count(v)", "avg(v)", "min(f)", "max(f)", "sum(f)"]
DUCK_AGGS = "count(*), sum(p.v), count(p.v), avg(p.v), min(p.f), max(p.f), sum(p.f)"
BUILD_AGGS = ["sum(bv)", "avg(bv)", "min(bv)", "max(bid)", "count(bv)"]
DUCK_BUILD_AGGS = "sum(b.bv), avg(b.bv), min(b.bv), max(b.bid), count(b.bv)"


def check(tmp_path, s: dict) -> None:
    probe, build = _tables(s)
    psrc, pheld = _store(tmp_path, probe, s["source"], "p", s["chunk_rows"])
    bsrc, bheld = _store(tmp_path, build, s["build_source"], "b", s["chunk_rows"])
    how, mode = s["how"], s["mode"]
    kw = dict(on="k" if s["k2"] is None else ["k", "k2"], how=how, pushdown=s["pushdown"], filter=s["filter"],
              threads=s["threads"], chunk_rows=s["chunk_rows"], where=PREDICATES[s["where"]])
    both = how in WITH_BUILD
    if mode in ("rows", "stream"):
        cols = ["rid", "bid", "bg"] if both else ["rid", "g"]
        got = hash_join(psrc, bsrc, columns=cols, stream=mode == "stream", **kw)
        if mode == "stream":
            assert isinstance(got, pa.RecordBatchReader)
            got = got.read_all()
        want = _duck(s, "p.rid, b.bid, b.bg" if both else "p.rid, p.g", pheld, bheld)
        assert _sorted(zip(*[got.column(c).to_pylist() for c in cols])) == _sorted(want), s
        return
    aggs = AGGS + (BUILD_AGGS if both else [])
    duck_aggs = DUCK_AGGS + (", " + DUCK_BUILD_AGGS if both else "")
    if mode == "aggregates":
        got = hash_join(psrc, bsrc, aggregates=aggs, **kw)
        (want,) = _duck(s, duck_aggs, pheld, bheld)
        for a, w in zip(aggs, want):
            assert _same(got[a], w), (a, got[a], w, s)
        return
    groups = {"group_probe": ["g"], "group_build": ["bg"], "group_both": ["g", "bg"]}[mode]
    if not both:
        groups = ["g"]
    gsql = ", ".join(("p." if g == "g" else "b.") + g for g in groups)
    got = hash_join(psrc, bsrc, aggregates=aggs, group_by=groups, **kw)
    assert got.column_names == groups + aggs
    want = _sorted(_duck(s, f"{gsql}, {duck_aggs}", pheld, bheld, f"GROUP BY {gsql}"))
    got_rows = _sorted(zip(*[got.column(c).to_pylist() for c in got.column_names]))
    assert len(got_rows) == len(want), (got_rows, want, s)
    for g, w in zip(got_rows, want):
        assert all(_same(x, y) for x, y in zip(g, w)), (g, w, s)


@settings(max_examples=60, **_SETTINGS)
@given(outer_shapes())
def test_join_forms_match_duckdb(tmp_path_factory, s):
    check(tmp_path_factory.mktemp("outer"), s)


@pytest.mark.slow
@settings(max_examples=150, **_SETTINGS)
@given(outer_shapes())
def test_join_forms_match_duckdb_long(tmp_path_factory, s):
    check(tmp_path_factory.mktemp("outer"), s)


# ---- fixed cases: conventions ----------------------------------------------------------------


def test_outer_joins_null_the_side_without_a_match_and_fill_the_key():
    probe = pa.table({"k": [1, 2, None, 4], "x": [10, 20, 30, 40]})
    build = pa.table({"k": [2, 2, 3, None], "y": ["a", "b", "c", "d"]})
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    for how in ("left", "right", "full"):
        got = hash_join(probe, build, on="k", how=how)
        assert got.column_names == ["k", "x", "y"]
        want = con.sql(f"SELECT k, x, y FROM p {how.upper()} JOIN b USING (k)").fetchall()
        assert _sorted(zip(*got.to_pydict().values())) == _sorted(want), how


def test_same_column_names_get_a_suffix_as_polars():
    pl = pytest.importorskip("polars")
    probe = pa.table({"k": [1, 2], "v": [1, 2]})
    build = pa.table({"k": [1, 1], "v": [5, 6]})
    got = hash_join(probe, build, on="k")
    want = pl.from_arrow(probe).join(pl.from_arrow(build), on="k")
    assert got.column_names == want.columns == ["k", "v", "v_right"]
    assert sorted(got.column(2).to_pylist()) == [5, 6]
    assert hash_join(probe, build, on="k", suffix="_b").column_names == ["k", "v", "v_b"]
    with pytest.raises(InvalidArgument, match="clash"):
        hash_join(pa.table({"k": [1], "v": [1], "v_right": [2]}), build, on="k")


def test_group_by_star_schema_matches_duckdb():
    rng = np.random.default_rng(3)
    fact = pa.table({"dk": rng.integers(0, 200, 20_000), "amount": rng.integers(0, 1000, 20_000),
                     "price": rng.random(20_000)})
    dim = pa.table({"dk": np.arange(0, 200, 2), "region": pa.array([f"r{i % 7}" for i in range(100)])})
    got, stats = hash_join(fact, dim, on="dk", aggregates={"total": "sum(amount)", "n": "count(*)",
                                                           "p": "avg(price)"}, group_by="region", explain=True)
    con = duckdb.connect()
    con.register("fact", fact)
    con.register("dim", dim)
    want = con.sql("SELECT region, sum(amount), count(*), avg(price) FROM fact JOIN dim USING (dk) GROUP BY region"
                   " ORDER BY region").fetchall()
    got = got.sort_by("region")
    assert got.column_names == ["region", "total", "n", "p"]
    for g, w in zip(zip(*got.to_pydict().values()), want):
        assert all(_same(x, y) for x, y in zip(g, w))
    assert stats.result_rows == sum(w[2] for w in want)


def test_grouped_integer_sum_that_could_overflow_is_refused():
    probe = pa.table({"k": [1, 1, 1], "v": pa.array([2**62, 2**62, 2**62], pa.int64())})
    build = pa.table({"k": [1], "g": ["a"]})
    with pytest.raises(InvalidArgument, match="64 bits"):
        hash_join(probe, build, on="k", aggregates=["sum(v)"], group_by="g")
    assert hash_join(probe, build, on="k", aggregates=["sum(v)"]) == {"sum(v)": 3 * 2**62}


def test_where_is_evaluated_before_other_columns_are_decoded(tmp_path):
    from bloomdb import columnar

    rng = np.random.default_rng(4)
    n = 200_000
    probe = pa.table({"k": rng.integers(0, 1000, n), "v": rng.integers(0, 100, n), "w": rng.random(n),
                      "t": np.arange(n)})
    columnar.write(tmp_path / "p", probe, chunk_rows=10_000)
    build = pa.table({"k": np.arange(0, 1000, 2)})
    where = [("v", "<", 5), ("t", ">=", 50_000)]
    got, st = hash_join(tmp_path / "p", build, on="k", where=where, aggregates=["sum(w)", "count(*)"], explain=True,
                        pushdown="on", filter="blocked:10")
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    want = con.sql("SELECT sum(w), count(*) FROM p JOIN b USING (k) WHERE v < 5 AND t >= 50000").fetchall()[0]
    assert _same(got["sum(w)"], want[0]) and got["count(*)"] == want[1]
    assert st.chunks_skipped_where == 5  # t < 50,000 in the first 5 chunks: skipped by their statistics
    assert st.rows_decoded["w"] == want[1]  # w decoded only at rows that matched and passed where
    assert st.rows_decoded["v"] < 0.6 * 150_000  # v only where the key survived the filter
    assert "5 by where" in st.explain()


def test_bad_forms_are_refused():
    probe = pa.table({"k": [1, 2], "v": [1, 2]})
    build = pa.table({"k": [1], "w": [3]})
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, on="k", group_by="v")  # group_by without aggregates
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, on="k", how="semi", aggregates=["count(*)"], group_by="w")
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, on="k", where=("w", ">", 1))  # predicates read probe columns
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, on="k", where=("v", "~", 1))
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, on="k", aggregates=["count(*)"], stream=True)
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, on="k", how="outer")


@pytest.mark.parametrize("how", ["inner", "left", "right", "full"])
def test_dense_and_hash_group_paths_agree(monkeypatch, how):
    import bloomdb.join.groupby as G

    rng = np.random.default_rng(8)
    n = 5000
    probe = pa.table({"k": pa.array(rng.integers(0, 300, n), mask=rng.random(n) < 0.05),
                      "v": pa.array(rng.integers(-9, 9, n), pa.int8(), mask=rng.random(n) < 0.1),
                      "f": np.where(rng.random(n) < 0.01, np.nan, rng.normal(size=n))})
    build = pa.table({"k": rng.integers(0, 400, 500), "g": pa.array(rng.integers(0, 9, 500).astype(str),
                                                                    mask=rng.random(500) < 0.1),
                      "w": pa.array(rng.random(500), mask=rng.random(500) < 0.1)})
    aggs = ["count(*)", "sum(v)", "min(v)", "max(f)", "min(f)", "avg(w)", "count(w)", "max(w)"]
    dense = hash_join(probe, build, on="k", how=how, aggregates=aggs, group_by="g", chunk_rows=700)
    monkeypatch.setattr(G, "DENSE_GROUPS", 0)
    hashed = hash_join(probe, build, on="k", how=how, aggregates=aggs, group_by="g", chunk_rows=700)
    assert dense.schema == hashed.schema
    a, b = (_sorted(zip(*t.to_pydict().values())) for t in (dense, hashed))
    assert len(a) == len(b) and all(_same(x, y) for r, s in zip(a, b) for x, y in zip(r, s))
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    want = _sorted(con.sql(f"SELECT b.g, count(*), sum(v), min(v), max(f), min(f), avg(w), count(w), max(w) FROM p "
                           f"{how.upper()} JOIN b ON p.k = b.k GROUP BY b.g").fetchall())
    assert len(a) == len(want) and all(_same(x, y) for r, s in zip(a, want) for x, y in zip(r, s))


@pytest.mark.parametrize("source", ["parquet", "columnar"])
def test_many_to_many_decodes_each_probe_row_once(tmp_path, source):
    """A Parquet probe row matching 10 build rows is decoded once and repeated (it was decoded 10
    times, and the Parquet reader took some repeated positions for a whole page)."""
    from test_join_fuzz import _store

    rng = np.random.default_rng(12)
    n = 50_000
    probe = pa.table({"k": rng.integers(0, 20_000, n), "v": rng.integers(0, 1 << 30, n), "f": rng.random(n)})
    psrc, _ = _store(tmp_path, probe, source, "p", 65536)
    build = pa.table({"k": np.repeat(np.arange(0, 20_000, 50), 10), "w": np.arange(4000)})
    got, st = hash_join(psrc, build, on="k", columns=["k", "v", "f", "w"], explain=True, pushdown="on",
                        filter="blocked:10")
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    want = con.sql("SELECT p.k, v, f, w FROM p JOIN b ON p.k = b.k").fetchall()
    assert _sorted(zip(*got.to_pydict().values())) == _sorted(want)
    assert st.result_rows == 10 * st.matched_rows
    if source == "parquet":  # page decoding: each row once (columnar gathers repeats as cheaply as a take)
        assert st.rows_decoded["v"] == st.rows_decoded["f"] == st.matched_rows
