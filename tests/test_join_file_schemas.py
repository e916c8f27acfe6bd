"""A probe side of Parquet files written apart (a list or a glob) whose schemas differ -- a key
column int32 in one file and int64 in another, a column missing from one file -- joins as DuckDB's
``read_parquet([...], union_by_name=true)``: one unified schema (int32 with int64 is int64, a
missing column is null). Before, the first file's schema was taken: a key too wide for it raised
"build key values do not fit" in every join that returns keys, and later files' extra columns
were dropped."""

from __future__ import annotations

import collections

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")
KIND = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "full": "FULL OUTER", "semi": "SEMI", "anti": "ANTI"}
BUILD = pa.table({"k": [3, 2**40, 2], "w": [1, 2, 3]})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("schemas")
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int32()), "v": [1.0, 2.0, 3.0]}), d / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([3, 4, 2**40], pa.int64()), "v": [4.0, 5.0, 6.0]}), d / "b.parquet")
    pq.write_table(pa.table({"k": pa.array([3, 5], pa.int64()), "x": ["p", "q"]}), d / "c.parquet")
    return [str(d / n) for n in ("a.parquet", "b.parquet", "c.parquet")]


@pytest.mark.parametrize("how", sorted(KIND))
@pytest.mark.parametrize("order", [(0, 1), (1, 0), (0, 2), (0, 1, 2)])
def test_files_with_different_schemas_join_as_duckdb_union_by_name(files, how, order):
    paths = [files[i] for i in order]
    got = hash_join(paths, BUILD, on="k", how=how)
    con = duckdb.connect()
    con.register("b", BUILD)
    src = f"read_parquet([{', '.join(repr(p) for p in paths)}], union_by_name=true)"
    cols = [c for c in got.column_names if c != "w"]
    outer = how in ("right", "full")
    sel = ", ".join(f"coalesce(p.k, b.k) AS k" if outer and c == "k" else f"p.{c}" for c in cols)
    sel += "" if how in ("semi", "anti") else ", b.w"
    want = collections.Counter(con.sql(f"SELECT {sel} FROM {src} p {KIND[how]} JOIN b ON p.k = b.k").fetchall())
    assert collections.Counter(tuple(r.values()) for r in got.to_pylist()) == want
    assert got.schema.field("k").type == pa.int64()
    assert set(cols) == set(con.sql(f"SELECT * FROM {src}").columns)
    agg = hash_join(paths, BUILD, on="k", how=how, aggregates=["sum(k)", "count(*)"])
    key = "coalesce(p.k, b.k)" if outer else "p.k"  # sum(k): the joined key, as USING
    s, n = con.sql(f"SELECT sum({key}), count(*) FROM {src} p {KIND[how]} JOIN b ON p.k = b.k").fetchall()[0]
    assert (agg["sum(k)"], agg["count(*)"]) == (s, n)


@pytest.mark.parametrize("how", sorted(KIND))
def test_a_folder_whose_first_file_is_narrower_joins_as_duckdb(tmp_path, files, how):
    """pyarrow's dataset schema of a folder is its first file's (k int32): a later file's int64
    key must be read widened, never cast down (ArrowInvalid) or refused."""
    import shutil

    for i, f in enumerate(files[:2]):
        shutil.copy(f, tmp_path / f"{i}.parquet")
    got = hash_join(str(tmp_path), BUILD, on="k", how=how)
    con = duckdb.connect()
    con.register("b", BUILD)
    src = f"read_parquet('{tmp_path}/*.parquet', union_by_name=true)"
    outer = how in ("right", "full")
    sel = "p.*" if how in ("semi", "anti") else f"{'coalesce(p.k, b.k) AS k' if outer else 'p.k'}, p.v, b.w"
    want = collections.Counter(con.sql(f"SELECT {sel} FROM {src} p {KIND[how]} JOIN b ON p.k = b.k").fetchall())
    assert collections.Counter(tuple(r.values()) for r in got.to_pylist()) == want
