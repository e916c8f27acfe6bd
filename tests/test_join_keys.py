"""Join key semantics: how ``on`` names keys, and how key values of two types compare (as DuckDB)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*[t.column(c).to_pylist() for c in t.column_names]), key=repr)


# ---- issue 12 item 6: a list in ``on`` is never a (probe key, build key) pair --------------------


def test_multi_column_on_is_refused_not_a_pair():
    probe = pa.table({"a": [1, 2, 3], "b": [10, 20, 30]})
    build = pa.table({"a": [1, 2, 3], "b": [1, 2, 99]})
    with pytest.raises(InvalidArgument, match="multi-column"):
        hash_join(probe, build, on=["a", "b"])
    with pytest.raises(InvalidArgument, match="multi-column"):
        hash_join(probe, build, on=("a", "b"))
    with pytest.raises(InvalidArgument, match="multi-column"):
        hash_join(probe, build, left_on=["a", "b"], right_on=["a", "b"])


def test_one_name_list_means_that_column_on_both_sides():
    probe = pa.table({"a": [1, 2, 3], "b": [10, 20, 30]})
    build = pa.table({"a": [1, 2, 3], "b": [1, 2, 99]})
    got = hash_join(probe, build, on=["b"], columns=["a", "b"])
    assert got.to_pydict() == {"a": [], "b": []}
    want = duckdb.sql("select probe.a, probe.b from probe join build using (b)").to_arrow_table()
    assert _rows(got) == _rows(want)
    assert hash_join(probe, build, on=["a"], aggregates=["count(*)"]) == {"count(*)": 3}


def test_left_on_right_on():
    probe = pa.table({"pk": [1, 2, 3], "x": [10, 20, 30]})
    build = pa.table({"bk": [3, 3, 1]})
    got = hash_join(probe, build, left_on="pk", right_on=["bk"])
    assert _rows(got) == [(1, 10), (3, 30), (3, 30)]
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
