"""Join key semantics: how ``on`` names keys, and how key values of two types compare (as DuckDB)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*[t.column(c).to_pylist() for c in t.column_names]), key=repr)


# ---- issue 12 item 6: a list in ``on`` is a multi-column key, never a (probe key, build key) pair --


def _duck(sql: str, **tables) -> list[tuple]:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return sorted(con.sql(sql).fetchall(), key=repr)


def test_multi_column_on_is_a_composite_key_not_a_pair():
    probe = pa.table({"a": [1, 2, 3, 1], "b": [10, 2, 30, 99]})
    build = pa.table({"a": [1, 2, 3, 10], "b": [10, 1, 30, 1], "w": [5, 6, 7, 8]})
    got = hash_join(probe, build, on=["a", "b"])
    assert _rows(got) == _duck("select probe.a, probe.b, build.w from probe join build using (a, b)",
                               probe=probe, build=build) == [(1, 10, 5), (3, 30, 7)]
    got = hash_join(probe, build, on=("a", "b"), how="anti")
    assert _rows(got) == [(1, 99), (2, 2)]


def test_multi_column_keys_of_mixed_types_and_nulls():
    probe = pa.table({"a": pa.array([1, 2, None, 1, 2**40], pa.int64()), "s": ["x", "y", "x", None, "x"],
                      "d": pa.array([0, 1, 0, 0, 0], pa.int32()).view(pa.date32())})
    build = pa.table({"a2": pa.array([1, 2, 1, 0], pa.int32()), "s2": pa.array(["x", "y", "x", "x"], pa.large_string()),
                      "d2": pa.array([0, 86_400, 0, 0], pa.int64()).view(pa.timestamp("s"))})
    for how in ("inner", "semi", "anti"):
        got = hash_join(probe, build, left_on=["a", "s", "d"], right_on=["a2", "s2", "d2"], how=how,
                        aggregates=["count(*)"])
        sql = {"inner": "select count(*) from p join b on a = a2 and s = s2 and d = d2",
               "semi": "select count(*) from p semi join b on a = a2 and s = s2 and d = d2",
               "anti": "select count(*) from p anti join b on a = a2 and s = s2 and d = d2"}[how]
        assert got["count(*)"] == _duck(sql, p=probe, b=build)[0][0], how


def test_key_lists_must_pair_up():
    probe = pa.table({"a": [1, 2, 3], "b": [10, 20, 30]})
    with pytest.raises(InvalidArgument, match="pair up"):
        hash_join(probe, probe, left_on=["a", "b"], right_on=["a"])
    with pytest.raises(InvalidArgument, match="cannot join"):
        hash_join(probe, pa.table({"a": [1], "b": ["x"]}), on=["a", "b"])
    with pytest.raises(InvalidArgument):
        hash_join(probe, probe, on=[])


def test_one_name_list_means_that_column_on_both_sides():
    probe = pa.table({"a": [1, 2, 3], "b": [10, 20, 30]})
    build = pa.table({"a": [1, 2, 3], "b": [1, 2, 99]})
    got = hash_join(probe, build, on=["b"], columns=["a", "b"])
    assert got.to_pydict() == {"a": [], "b": []}
    assert hash_join(probe, build, on=["a"], aggregates=["count(*)"]) == {"count(*)": 3}


def test_left_on_right_on():
    probe = pa.table({"pk": [1, 2, 3], "x": [10, 20, 30]})
    build = pa.table({"bk": [3, 3, 1]})
    got = hash_join(probe, build, left_on="pk", right_on=["bk"])
    assert _rows(got) == [(1, 10, 1), (3, 30, 3), (3, 30, 3)]  # both key columns, as pandas' merge
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, on="pk", left_on="pk", right_on="bk")
    with pytest.raises(InvalidArgument):
        hash_join(probe, build, left_on="pk")
    with pytest.raises(InvalidArgument):
        hash_join(probe, build)


@pytest.mark.parametrize("rows", [0, -1, 1.5, True])
def test_chunk_rows_must_be_positive(rows):
    probe = pa.table({"k": [1, 2]})
    with pytest.raises(InvalidArgument, match="chunk_rows"):
        hash_join(probe, probe, on="k", chunk_rows=rows)


def test_float_min_max_order_nan_above_everything_as_duckdb():
    probe = pa.table({"k": [1, 1, 2, 2, 3], "f": [1.0, float("nan"), -2.0, 5.0, float("nan")]})
    build = pa.table({"k": [1, 2, 3]})
    for chunk_rows in (1, 2, 100):  # NaN inside a chunk, and NaN combined across chunks
        got = hash_join(probe, build, on="k", aggregates=["min(f)", "max(f)"], chunk_rows=chunk_rows)
        assert got["min(f)"] == -2.0 and got["max(f)"] != got["max(f)"], (chunk_rows, got)
    only_nan = hash_join(probe, pa.table({"k": [3]}), on="k", aggregates=["min(f)", "max(f)"])
    want = _duck("select min(f), max(f) from p semi join b using (k)", p=probe, b=pa.table({"k": [3]}))[0]
    assert all(x != x for x in want) and all(x != x for x in only_nan.values())


def test_no_result_columns_is_refused_not_an_empty_table():
    probe = pa.table({"k": [1, 2, 3]})
    with pytest.raises(InvalidArgument, match="columns is empty"):
        hash_join(probe, pa.table({"k": [1]}), on="k", columns=[])
