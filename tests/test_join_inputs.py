"""Inputs a pandas / Polars / DuckDB user hands ``hash_join`` as they come: Arrow view columns
(``string_view`` / ``binary_view``, what Polars' and DuckDB's newer Arrow output carries) in a
table, a ``RecordBatchReader`` or a Dataset on either side; a Polars LazyFrame; a pandas or Polars
Series; a pandas column Arrow cannot convert (``InvalidArgument``, not pyarrow's own error)."""

from __future__ import annotations

import collections

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

PROBE = pa.table({"k": pa.array(["a", "b", None, "a", ""], pa.string_view()),
                  "v": pa.array(["x", "y", "z", None, "é"], pa.string_view())})
BUILD = pa.table({"k": pa.array(["a", "c", "", "a"], pa.string_view()),
                  "w": pa.array([b"q", None, b"\0", b"r"], pa.binary_view())})
KIND = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "full": "FULL OUTER", "semi": "SEMI", "anti": "ANTI"}
FORMS = {"table": lambda t: t, "reader": lambda t: t.to_reader(), "dataset": ds.dataset}


def _duck(how: str) -> collections.Counter:
    con = duckdb.connect()
    con.register("p", PROBE.cast(pa.schema({"k": pa.large_string(), "v": pa.large_string()})))
    con.register("b", BUILD.cast(pa.schema({"k": pa.large_string(), "w": pa.large_binary()})))
    cols = "p.*" if how in ("semi", "anti") else "coalesce(p.k, b.k) AS k, p.v, b.w"
    return collections.Counter(con.sql(f"SELECT {cols} FROM p {KIND[how]} JOIN b ON p.k = b.k").fetchall())


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("how", sorted(KIND))
def test_view_columns_join_as_their_values(form, how):
    got = hash_join(FORMS[form](PROBE), FORMS[form](BUILD), on="k", how=how)
    assert collections.Counter(tuple(r.values()) for r in got.to_pylist()) == _duck(how)
    assert pa.string_view() not in got.schema.types


def test_view_columns_group_and_aggregate():
    got = hash_join(PROBE, BUILD, on="k", aggregates=["count(*)", "count(w)"], group_by="v")
    assert sorted(map(str, got.to_pylist())) == sorted(map(str, [{"v": "x", "count(*)": 2, "count(w)": 2},
                                                                 {"v": None, "count(*)": 2, "count(w)": 2},
                                                                 {"v": "é", "count(*)": 1, "count(w)": 1}]))


def test_polars_lazyframe_and_series_are_read():
    assert hash_join(pl.LazyFrame({"k": [1, 2, 2]}), pl.DataFrame({"k": [2]}), on="k").to_pylist() == [{"k": 2}] * 2
    assert hash_join(pd.Series([1, 2], name="k"), pl.Series("k", [2]), on="k").to_pylist() == [{"k": 2}]


def test_a_pandas_column_arrow_cannot_convert_is_invalid_argument():
    with pytest.raises(InvalidArgument, match="pandas DataFrame"):
        hash_join(pd.DataFrame({"k": [1, "a"]}, dtype=object), pd.DataFrame({"k": ["a"]}), on="k")


def test_pandas_timestamps_in_a_dict_of_lists_keep_their_nanoseconds(tmp_path):
    """``pa.array`` infers microseconds from pandas Timestamps: the build key 1.000000123 s
    became 1 s and joined the wrong probe row; ``columnar.write`` stored the truncated instant."""
    probe = pa.table({"k": [1, 2], "ts": pa.array([1_000_000_123, 1_000_000_000], pa.timestamp("ns"))})
    key = pd.Timestamp(1_000_000_123, unit="ns")
    got = hash_join(probe, {"ts": [key]}, on="ts")
    assert got.column("k").to_pylist() == [1]
    from bloomdb import columnar

    aware = pd.Timestamp(5, unit="ns", tz="Europe/Paris")
    t = columnar.write(tmp_path / "t", {"ts": [key, None, pd.NaT], "tz": [aware, None, None]}).read()
    assert t.column("ts").cast(pa.int64()).to_pylist() == [1_000_000_123, None, None]
    assert t.column("tz").cast(pa.int64()).to_pylist() == [5, None, None]
    assert t.schema.field("tz").type == pa.timestamp("ns", tz="Europe/Paris")
