"""bloomdb.join.hash_join against DuckDB on the same data, in every pushdown mode."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb import columnar
from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

MODES = ("on", "off", "adaptive")
AGGS = ["count(*)", "sum(v)", "sum(f)", "count(v)", "min(v)", "max(v)", "min(f)", "max(f)", "sum(u)"]


def make_data(n_probe: int, n_build: int, frac: float, kind: str = "int", seed: int = 0, nulls: bool = True,
              dups: bool = True) -> tuple[pa.Table, pa.Table]:
    """Probe rows match a build key with probability ``frac``; duplicates on both sides; nulls."""
    rng = np.random.default_rng(seed)
    distinct = max(1, n_build // 2 if dups else n_build)
    bkeys = rng.choice(1_000_000, distinct, replace=False).astype(np.int64) - 500_000
    build_k = np.concatenate([bkeys, rng.choice(bkeys, n_build - distinct)]) if n_build else np.zeros(0, np.int64)
    hit = rng.random(n_probe) < frac
    miss_keys = rng.integers(2_000_000, 3_000_000, n_probe)
    pk = np.where(hit, rng.choice(bkeys, n_probe), miss_keys) if n_build else miss_keys
    pnull = (rng.random(n_probe) < 0.05) if nulls else np.zeros(n_probe, bool)
    bnull = (rng.random(n_build) < 0.05) if nulls else np.zeros(n_build, bool)

    def col(keys, mask):
        if kind == "int":
            return pa.array(keys, pa.int64(), mask=mask)
        return pa.array([f"key-{x}" if x % 3 else f"a much longer key number {x} to pass sixteen" for x in keys],
                        pa.string(), mask=mask)

    probe = pa.table({
        "rid": np.arange(n_probe, dtype=np.int64),
        "k": col(pk, pnull),
        "v": pa.array(rng.integers(-1000, 1000, n_probe), mask=rng.random(n_probe) < 0.1),
        "f": pa.array(rng.normal(size=n_probe), mask=rng.random(n_probe) < 0.1),
        "u": pa.array(rng.integers(0, 2**40, n_probe, dtype=np.uint64)),
    })  # fmt: skip
    build = pa.table({"k": col(build_k, bnull), "b": np.arange(n_build, dtype=np.int64)})
    return probe, build


def duck(sql: str, **tables) -> duckdb.DuckDBPyRelation:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return con.sql(sql)


def duck_aggs(how: str, probe: pa.Table, build: pa.Table) -> dict:
    sel = ", ".join(AGGS)
    where = {
        "inner": "FROM p JOIN b ON p.k = b.k",
        "semi": "FROM p WHERE EXISTS (SELECT 1 FROM b WHERE b.k = p.k)",
        "anti": "FROM p WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = p.k)",
    }[how]
    row = duck(f"SELECT {sel} {where}", p=probe, b=build).fetchall()[0]
    return dict(zip(AGGS, row))


def assert_aggs_equal(ours: dict, ref: dict) -> None:
    assert ours.keys() == ref.keys()
    for k in ref:
        a, b = ours[k], ref[k]
        if b is None or a is None:
            assert a is None and b is None, (k, a, b)
        elif isinstance(b, float):
            assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (k, a, b)
        else:
            assert a == b, (k, a, b)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """Columnar probe tables (many small chunks) for each selectivity and key kind."""
    root = tmp_path_factory.mktemp("join")
    out = {}
    for kind in ("int", "str"):
        for frac in (0.0, 0.01, 0.1, 0.5, 1.0):
            probe, build = make_data(4000, 300, frac, kind, seed=int(frac * 100) + (7 if kind == "str" else 0))
            path = root / f"{kind}-{frac}"
            columnar.write(path, probe, chunk_rows=256)
            out[kind, frac] = (path, probe, build)
    return out


@pytest.mark.parametrize("kind", ["int", "str"])
@pytest.mark.parametrize("frac", [0.0, 0.01, 0.1, 0.5, 1.0])
def test_aggregates_equal_duckdb_in_every_mode(tables, kind, frac):
    path, probe, build = tables[kind, frac]
    for how in ("inner", "semi", "anti"):
        ref = duck_aggs(how, probe, build)
        for mode in MODES:
            ours = hash_join(path, build, on="k", how=how, aggregates=AGGS, pushdown=mode)
            assert_aggs_equal(ours, ref)


@pytest.mark.parametrize("kind", ["int", "str"])
@pytest.mark.parametrize("frac", [0.01, 0.5])
def test_rows_equal_duckdb_in_every_mode(tables, kind, frac):
    path, probe, build = tables[kind, frac]
    queries = {
        "inner": "SELECT p.rid, p.k, p.v, p.f, b.b FROM p JOIN b ON p.k = b.k",
        "semi": "SELECT rid, k, v, f FROM p WHERE EXISTS (SELECT 1 FROM b WHERE b.k = p.k)",
        "anti": "SELECT rid, k, v, f FROM p WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = p.k)",
    }
    for how, sql in queries.items():
        ref = duck(sql, p=probe, b=build).to_arrow_table()
        cols = ["rid", "k", "v", "f"] + (["b"] if how == "inner" else [])
        ref = ref.rename_columns(cols).sort_by([("rid", "ascending"), *([("b", "ascending")] if how == "inner" else [])])
        for mode in MODES:
            got = hash_join(path, build, on="k", how=how, columns=cols, pushdown=mode)
            assert got.column_names == cols
            # rows come in probe order; duplicate build keys follow build order
            assert got.column("rid").to_numpy().tolist() == sorted(got.column("rid").to_numpy().tolist())
            got = got.sort_by([("rid", "ascending"), *([("b", "ascending")] if how == "inner" else [])])
            assert got.equals(ref.cast(got.schema)), (how, mode)


def test_parquet_and_arrow_probe_inputs(tmp_path):
    probe, build = make_data(5000, 400, 0.05, seed=11)
    pq.write_table(probe, tmp_path / "p.parquet", row_group_size=500)
    pq.write_table(build, tmp_path / "b.parquet")
    ref = duck_aggs("inner", probe, build)
    import polars as pl

    for src in (tmp_path / "p.parquet", str(tmp_path / "p.parquet"), probe, pl.from_arrow(probe)):
        for mode in MODES:
            assert_aggs_equal(hash_join(src, tmp_path / "b.parquet", on="k", aggregates=AGGS, pushdown=mode,
                                        chunk_rows=700), ref)


@pytest.mark.parametrize("how", ["inner", "semi", "anti"])
@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
def test_parquet_probe_decodes_payload_at_surviving_rows_only(tmp_path, how, compression):
    """The page reader decodes the payload of a Parquet probe only at the rows that matched, and
    the result (rows and aggregates) equals DuckDB's, in every pushdown mode."""
    probe, build = make_data(6000, 300, 0.02, seed=5)
    path = tmp_path / "p.parquet"
    pq.write_table(probe, path, row_group_size=2000, data_page_size=4096, compression=compression)
    if how != "anti":
        res, st = hash_join(path, build, on="k", how=how, aggregates=["sum(v)", "count(f)", "count(*)"],
                            pushdown="on", explain=True)
        assert st.rows_decoded["k"] == 6000
        assert st.rows_decoded["v"] == st.rows_decoded["f"] == st.matched_rows < 6000 * 0.1
    sql = {
        "inner": "SELECT p.rid, p.k, p.v, p.f, p.u, b.b FROM p JOIN b ON p.k = b.k",
        "semi": "SELECT rid, k, v, f, u FROM p WHERE EXISTS (SELECT 1 FROM b WHERE b.k = p.k)",
        "anti": "SELECT rid, k, v, f, u FROM p WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = p.k)",
    }[how]
    cols = ["rid", "k", "v", "f", "u"] + (["b"] if how == "inner" else [])
    order = [("rid", "ascending"), *([("b", "ascending")] if how == "inner" else [])]
    ref = duck(sql, p=probe, b=build).to_arrow_table().rename_columns(cols).sort_by(order)
    for mode in MODES:
        got = hash_join(path, build, on="k", how=how, pushdown=mode, columns=cols).sort_by(order)
        assert got.equals(ref.cast(got.schema)), (how, mode)
        assert_aggs_equal(hash_join(path, build, on="k", how=how, aggregates=AGGS, pushdown=mode),
                          duck_aggs(how, probe, build))


def test_minmax_skips_chunks_and_parquet_row_groups(tmp_path):
    n = 20_000
    probe = pa.table({"k": np.arange(n, dtype=np.int64), "v": np.ones(n, np.int64)})  # sorted: tight min/max
    build = pa.table({"k": np.array([5, 12_345, 19_999], np.int64)})
    columnar.write(tmp_path / "c", probe, chunk_rows=1000)
    pq.write_table(probe, tmp_path / "p.parquet", row_group_size=1000)
    for src in (tmp_path / "c", tmp_path / "p.parquet"):
        res, st = hash_join(src, build, on="k", aggregates=["sum(v)", "count(*)"], explain=True)
        assert res == {"sum(v)": 3, "count(*)": 3}
        assert st.chunks == 20 and st.chunks_skipped_minmax == 17
        assert st.rows_decoded["k"] == 3000  # only the 3 chunks that may hold a build key
    res = hash_join(tmp_path / "c", build, on="k", how="anti", aggregates=["count(*)"])
    assert res == {"count(*)": n - 3}


def test_filter_pushdown_decodes_only_surviving_rows(tables):
    path, probe, build = tables["int", 0.01]
    res, st = hash_join(path, build, on="k", aggregates=["sum(v)", "sum(f)"], pushdown="on", explain=True)
    assert st.chunks_filtered == st.chunks - st.chunks_skipped_minmax
    assert st.rows_filter_checked == st.rows_decoded["k"] > 0.5 * probe.num_rows
    assert st.rows_rejected_by_filter > 0.9 * st.rows_filter_checked
    assert st.false_positives == st.rows_probed - st.matched_rows
    assert st.rows_decoded["v"] == st.rows_decoded["f"] == st.matched_rows < 0.05 * probe.num_rows
    _, off = hash_join(path, build, on="k", aggregates=["sum(v)", "sum(f)"], pushdown="off", explain=True)
    assert off.rows_filter_checked == 0 and off.rows_decoded["v"] == off.rows_decoded["k"] == st.rows_decoded["k"]
    assert "rows decoded per column" in st.explain()


def test_adaptive_switches_off_and_back_on(tmp_path):
    # first half: every row matches (the filter rejects nothing); second half: nothing matches
    n, half = 64 * 512, 32 * 512
    keys = np.arange(1000, dtype=np.int64)
    miss = np.arange(n - half, dtype=np.int64)
    miss = np.where(miss % 2 == 0, -1 - miss, 10**6 + miss)  # min/max of every chunk spans the build keys
    k = np.concatenate([np.resize(keys, half), miss])
    probe = pa.table({"k": k, "v": np.ones(n, np.int64)})
    columnar.write(tmp_path / "t", probe, chunk_rows=512)
    build = pa.table({"k": keys})
    res, st = hash_join(tmp_path / "t", build, on="k", aggregates=["sum(v)"], pushdown="adaptive", threads=1,
                        explain=True)
    assert res == {"sum(v)": half}
    assert [t.to for t in st.transitions][:2] == ["off", "on"]
    assert st.transitions[0].chunk < 8 and 32 <= st.transitions[1].chunk <= 32 + 16
    assert 0 < st.chunks_unfiltered < 32


def test_empty_sides_and_all_null_keys(tmp_path):
    probe, build = make_data(600, 50, 0.3, seed=3)
    empty_p, empty_b = probe.slice(0, 0), build.slice(0, 0)
    null_b = pa.table({"k": pa.array([None, None], pa.int64()), "b": [1, 2]})
    columnar.write(tmp_path / "e", empty_p)
    for p, b in ((probe, empty_b), (empty_p, build), (tmp_path / "e", build), (probe, null_b)):
        for how in ("inner", "semi", "anti"):
            pt = columnar.read(p) if not isinstance(p, pa.Table) else p
            ref = duck_aggs(how, pt, b)
            for mode in MODES:
                assert_aggs_equal(hash_join(p, b, on="k", how=how, aggregates=AGGS, pushdown=mode), ref)
            rows = hash_join(p, b, on="k", how=how, columns=["rid", "v"])
            assert rows.num_rows == ref["count(*)"] and rows.schema.field("v").type == pa.int64()


def test_filters_other_families_and_no_filter(tables):
    path, probe, build = tables["str", 0.1]
    ref = duck_aggs("inner", probe, build)
    for spec in ("blocked:10", "standard:8", "register:1", None):
        assert_aggs_equal(hash_join(path, build, on="k", aggregates=AGGS, filter=spec, pushdown="on"), ref)
    _, st = hash_join(path, build, on="k", aggregates=AGGS, filter="register:2", filter_size_bytes=64, explain=True)
    assert st.filter_bytes == 64


def test_exact_integer_sums_beyond_int64(tmp_path):
    big = 2**62
    probe = pa.table({"k": np.array([1, 1, 2, 3], np.int64), "v": np.array([big, big, big, -5], np.int64),
                      "u": np.array([2**64 - 1, 2**64 - 1, 1, 1], np.uint64)})
    build = pa.table({"k": np.array([1, 1, 1, 2], np.int64)})
    for mode in MODES:
        res = hash_join(probe, build, on="k", aggregates=["sum(v)", "sum(u)", "count(*)"], pushdown=mode)
        assert res == {"sum(v)": 7 * big, "sum(u)": 6 * (2**64 - 1) + 1, "count(*)": 7}


def test_different_key_names_widths_and_threads():
    probe = pa.table({"pk": pa.array([1, 2, 3, None, 5], pa.int32()), "x": [10, 20, 30, 40, 50]})
    build = pa.table({"bk": pa.array([5, 3, 3], pa.int64()), "y": ["a", "b", "c"]})
    for threads in (1, 2):
        got = hash_join(probe, build, left_on="pk", right_on="bk", chunk_rows=2, threads=threads)
        assert got.to_pydict() == {"pk": [3, 3, 5], "x": [30, 30, 50], "bk": [3, 3, 5], "y": ["b", "c", "a"]}


def test_bad_arguments(tables):
    path, probe, build = tables["int", 0.1]
    sbuild = tables["str", 0.1][2]
    with pytest.raises(InvalidArgument):
        hash_join(path, sbuild, on="k")
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="nope")
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", how="outer")
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", pushdown="sometimes")
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", aggregates=["median(v)"])
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", aggregates=["sum(nope)"])
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", how="anti", aggregates=["sum(b)"])  # an anti join has no build rows
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", chunk_rows=0)
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", how="semi", columns=["b"])
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", filter="nosuch:3")
    with pytest.raises(InvalidArgument):
        hash_join(path, build, on="k", threads=0)
    with pytest.raises(InvalidArgument):
        hash_join(probe.append_column("g", pa.array([b"x"] * probe.num_rows)), build, left_on="g", right_on="k")


@pytest.mark.parametrize("kind", ["int", "str"])
def test_parquet_bloom_filters_skip_row_groups(tmp_path, kind):
    # every row group spans the whole key range (min/max prune nothing); keys differ per row group
    rng = np.random.default_rng(5)
    groups, per = 10, 1000
    k = np.concatenate([rng.permutation(np.arange(g, 100_000, groups)[:per]) for g in range(groups)])
    k[::per] = 0
    k[per - 1 :: per] = 10**6  # same min and max in every row group
    col = pa.array(k) if kind == "int" else pa.array([f"s{x:07d}" for x in k])
    probe = pa.table({"k": col, "v": np.ones(k.size, np.int64)})
    pq.write_table(probe, tmp_path / "p.parquet", row_group_size=per, bloom_filter_options={"k": {"ndv": per, "fpp": 0.001}})
    wanted = k[3 * per + 10 : 3 * per + 15]  # five keys of row group 3 only
    build = pa.table({"k": pa.array(wanted) if kind == "int" else pa.array([f"s{x:07d}" for x in wanted])})
    res, st = hash_join(tmp_path / "p.parquet", build, on="k", aggregates=["count(*)"], explain=True)
    assert res == duck_aggs_count(probe, build)
    assert st.chunks_skipped_minmax == 0 and st.chunks_skipped_bloom >= groups - 2
    assert st.rows_decoded["k"] <= 2 * per


def duck_aggs_count(probe: pa.Table, build: pa.Table) -> dict:
    return {"count(*)": duck("SELECT count(*) FROM p JOIN b ON p.k = b.k", p=probe, b=build).fetchall()[0][0]}


def test_integer_sum_paths_are_exact():
    from bloomdb.join.aggregate import exact_sum as _sum

    rng = np.random.default_rng(9)
    v = rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64)
    w = rng.integers(1, 2**40, 5000).astype(np.int64)  # float bound too loose: the Python path
    valid = rng.random(5000) < 0.9
    pos = np.sort(rng.choice(5000, 3000, replace=False)).astype(np.int64)
    exact = sum(int(a) * int(b) for a, b, ok in zip(v[pos].tolist(), w[:3000].tolist(), valid[pos]) if ok)
    assert _sum(v, valid, pos, w[:3000]) == exact
    small = w % 7 + 1  # the wrapped + float-estimate path
    exact = sum(int(a) * int(b) for a, b, ok in zip(v[pos].tolist(), small[:3000].tolist(), valid[pos]) if ok)
    assert _sum(v, valid, pos, small[:3000]) == exact
    u = v.view(np.uint64)
    assert _sum(u, None, None, None) == sum(int(x) for x in u.tolist())


def test_zstd_probe_table_decodes_whole_chunks(tmp_path, tables):
    _, probe, build = tables["str", 0.1]
    probe = probe.append_column("c", pa.array(np.arange(probe.num_rows) % 3 * 1_000_003))  # compresses well
    tab = columnar.write(tmp_path / "z", probe, chunk_rows=256, compression="zstd")
    assert all(tab.chunk(g, "c").compressed for g in range(len(tab.row_groups)))
    ref = duck_aggs("inner", probe, build)
    res, st = hash_join(tmp_path / "z", build, on="k", aggregates=AGGS + ["sum(c)"], pushdown="on", explain=True)
    assert res.pop("sum(c)") == duck("SELECT sum(c) FROM p JOIN b ON p.k = b.k", p=probe, b=build).fetchall()[0][0]
    assert_aggs_equal(res, ref)
    assert st.rows_decoded["c"] == st.rows_decoded["k"]  # a zstd chunk decompresses whole
    rows = hash_join(tmp_path / "z", build, on="k", how="semi", columns=["rid", "k"], verify=True)
    assert rows.num_rows == duck_aggs("semi", probe, build)["count(*)"]


from hypothesis import given
from hypothesis import strategies as st

_keys = st.lists(st.integers(-3, 12) | st.none(), max_size=60)


@given(_keys, _keys, st.sampled_from(MODES), st.integers(1, 9), st.booleans())
def test_join_matches_a_python_model(pk, bk, mode, chunk_rows, as_str):
    conv = (lambda x: None if x is None else f"k{x}") if as_str else (lambda x: x)
    probe = pa.table({"k": pa.array([conv(x) for x in pk], pa.string() if as_str else pa.int64()),
                      "rid": np.arange(len(pk), dtype=np.int64)})
    build = pa.table({"k": pa.array([conv(x) for x in bk], pa.string() if as_str else pa.int64()),
                      "b": np.arange(len(bk), dtype=np.int64)})
    inner = [(i, j) for i, x in enumerate(pk) for j, y in enumerate(bk) if x is not None and x == y]
    bset = {y for y in bk if y is not None}
    got = hash_join(probe, build, on="k", columns=["rid", "b"], pushdown=mode, chunk_rows=chunk_rows, threads=1)
    assert list(zip(got["rid"].to_pylist(), got["b"].to_pylist())) == inner
    semi = hash_join(probe, build, on="k", how="semi", columns=["rid"], pushdown=mode, chunk_rows=chunk_rows)
    assert semi["rid"].to_pylist() == [i for i, x in enumerate(pk) if x in bset]
    anti = hash_join(probe, build, on="k", how="anti", aggregates=["count(*)", "sum(rid)"], pushdown=mode,
                     chunk_rows=chunk_rows)
    rest = [i for i, x in enumerate(pk) if x not in bset]
    assert anti == {"count(*)": len(rest), "sum(rid)": sum(rest) if rest else None}


def test_inputs_kept_open_between_joins_see_rewrites(tmp_path):
    """Probe files stay mapped between joins, but a table or Parquet file rewritten at the same
    path (same size, same second) is read anew, never from the old mapping."""
    import shutil

    from bloomdb.join import release_files

    build = pa.table({"k": np.arange(10, dtype=np.int64)})
    for kind in ("columnar", "parquet"):
        path = tmp_path / kind
        for version in range(3):
            probe = pa.table({"k": np.arange(100, dtype=np.int64), "v": np.full(100, version, np.int64)})
            if kind == "columnar":
                shutil.rmtree(path, ignore_errors=True)
                columnar.write(path, probe)
            else:
                pq.write_table(probe, path)
            assert hash_join(path, build, on="k", aggregates=["sum(v)"]) == {"sum(v)": 10 * version}
            assert hash_join(path, build, on="k", aggregates=["sum(v)"]) == {"sum(v)": 10 * version}
    release_files()
    assert hash_join(tmp_path / "parquet", build, on="k", aggregates=["sum(v)"]) == {"sum(v)": 20}
