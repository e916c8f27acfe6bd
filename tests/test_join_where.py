"""``where=`` predicates answer as DuckDB's WHERE on the same rows, for literals at the edges of a
column's type: NaN (equal to NaN, above every number), -0.0 (equal to 0.0, in ``in`` too), integers
outside the column's range (decided by the range, never an error or a wrapped value) and floats
against integer columns (compared as float64), from memory, Parquet and a columnar table alike."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bloomdb import columnar
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

NAN = float("nan")
PROBE = pa.table({
    "k": pa.array(range(8), pa.int64()),
    "f": pa.array([NAN, 1.0, -0.0, 0.0, math.inf, None, 200.0, 3.0]),
    "g": pa.array([NAN, 1.0, -0.0, 0.0, math.inf, None, 200.0, 3.0], pa.float32()),
    "u8": pa.array([0, 1, 255, 200, None, 5, 6, 7], pa.uint8()),
    "i8": pa.array([-128, 1, 127, -1, None, 5, 6, 7], pa.int8()),
    "u64": pa.array([0, 2**64 - 1, 2**63, 5, None, 5, 6, 7], pa.uint64()),
    "di": pa.array([1, 2, 3, None, 1, 2, 3, 4], pa.int8()).dictionary_encode(),
})  # fmt: skip
BUILD = pa.table({"k": pa.array(range(8), pa.int64())})

PREDICATES = [
    ("f", "==", NAN), ("f", "!=", NAN), ("f", "<", NAN), ("f", "<=", NAN), ("f", ">", NAN), ("f", ">=", NAN),
    ("g", "==", NAN), ("g", "<", NAN), ("f", "in", [0.0]), ("f", "not in", [0.0]), ("g", "in", [-0.0, 3.0]),
    ("f", "in", [NAN]), ("f", ">", 100), ("f", "!=", 0),
    ("u8", "<", 300), ("u8", ">", -1), ("u8", "==", 256), ("u8", "!=", 256), ("u8", "<", 2**64),
    ("u8", "in", [255, 300, -1]), ("u8", "not in", [300, 1]), ("u8", ">", 199.5), ("u8", "<", NAN),
    ("u8", ">=", NAN), ("u8", "in", [1.0, 2.5]), ("i8", "<", 200), ("i8", ">", -129), ("i8", "in", [-1, 255]),
    ("u64", ">", -1), ("u64", "<", -1), ("u64", "in", [-1, 2**63]), ("u64", "<", 1.5e19),
    ("u64", "==", 1.8446744073709552e19), ("di", "<", 300), ("di", "in", [1, 300]),
]  # fmt: skip


def _sql_value(v) -> str:
    if isinstance(v, float):
        return f"'{v!r}'::DOUBLE"  # 'nan', 'inf', '-inf', '-0.0' and numbers alike
    return str(v)


def _sql(pred) -> str:
    col, op, v = pred
    if op in ("in", "not in"):
        return f"{col} {op.upper()} ({', '.join(_sql_value(x) for x in v)})"
    return f"{col} {'=' if op == '==' else op} {_sql_value(v)}"


def _duck(table: pa.Table, pred) -> list[int]:
    con = duckdb.connect()
    con.register("p", table)
    return sorted(r[0] for r in con.execute(f"SELECT k FROM p WHERE {_sql(pred)}").fetchall())


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("where")
    pq.write_table(PROBE, d / "p.parquet", row_group_size=3)
    columnar.write(str(d / "c"), PROBE.drop_columns(["di"]))
    return {"memory": PROBE, "parquet": str(d / "p.parquet"), "columnar": str(d / "c")}


@pytest.mark.parametrize("pred", PREDICATES, ids=repr)
@pytest.mark.parametrize("source", ["memory", "parquet", "columnar"])
def test_where_literal_edges_match_duckdb(sources, source, pred):
    if source == "columnar" and pred[0] == "di":
        pytest.skip("columnar stores no dictionary columns")
    got = hash_join(sources[source], BUILD, on="k", how="semi", where=pred)
    assert sorted(got.column("k").to_pylist()) == _duck(PROBE, pred)


EDGE_FLOATS = [NAN, -0.0, 0.0, math.inf, -math.inf, 0.5, 1.0, 255.0, 256.0, -1.0, 1.8446744073709552e19]
EDGE_INTS = [0, 1, -1, 127, 128, -128, -129, 255, 256, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]
COLUMN_TYPES = [pa.int8(), pa.uint8(), pa.int32(), pa.uint64(), pa.int64(), pa.float32(), pa.float64()]


def _fit(t: pa.DataType, ints: list[int]) -> list[int]:
    if pa.types.is_floating(t):
        return ints
    bits = t.bit_width
    lo, hi = (0, (1 << bits) - 1) if pa.types.is_unsigned_integer(t) else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return [min(max(x, lo), hi) for x in ints]


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(t=st.sampled_from(COLUMN_TYPES),
       ints=st.lists(st.sampled_from(EDGE_INTS), min_size=1, max_size=12),
       op=st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]),
       literal=st.one_of(st.sampled_from(EDGE_FLOATS), st.sampled_from(EDGE_INTS)),
       extra=st.lists(st.one_of(st.sampled_from(EDGE_FLOATS), st.sampled_from(EDGE_INTS)), max_size=3))
def test_where_property_against_duckdb(t, ints, op, literal, extra):
    vals = _fit(t, ints)
    if pa.types.is_floating(t):
        vals = [float(v) for v in vals] + [NAN, -0.0]
    table = pa.table({"k": pa.array(range(len(vals)), pa.int64()), "x": pa.array(vals, t)})
    pred = ("x", op, [literal] + extra if op in ("in", "not in") else literal)
    got = hash_join(table, pa.table({"k": table.column("k")}), on="k", how="semi", where=pred)
    assert sorted(got.column("k").to_pylist()) == _duck(table, pred)


def test_date_literals_still_compare():
    t = pa.table({"k": pa.array([0, 1, 2]), "d": pa.array([0, 1, 2], pa.date32())})
    got = hash_join(t, t.select(["k"]), on="k", how="semi", where=("d", ">", datetime.date(1970, 1, 2)))
    assert got.column("k").to_pylist() == [2]


TEMPORAL = pa.table({
    "k": [0, 1, 2, 3], "d": pa.array([18262, 18263, 18264, None], pa.date32()),
    "ts": pa.array([0, 1500, 2000, None], pa.timestamp("ms")),
    "tz": pa.array([0, 1500, 2000, None], pa.timestamp("ms", tz="UTC")),
    "ns": pa.array([0, 1_500_000_001, 2, None], pa.timestamp("ns")),
})  # fmt: skip
TEMPORAL_LITERALS = [
    ("d", datetime.datetime(2020, 1, 1, 12)), ("d", datetime.datetime(2020, 1, 2)), ("d", datetime.date(2020, 1, 2)),
    ("ts", datetime.date(1970, 1, 1)), ("ts", datetime.datetime(1970, 1, 1, 0, 0, 1, 500001)),
    ("ts", datetime.datetime(1970, 1, 1, 0, 0, 1, 499999)), ("ts", datetime.datetime(1970, 1, 1, 0, 0, 1, 500000)),
    ("tz", datetime.datetime(1970, 1, 1, 1, 0, 1, 500000, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))),
    ("tz", datetime.datetime(1970, 1, 1, 0, 0, 1, 500001, tzinfo=datetime.timezone.utc)),
    ("ns", datetime.datetime(1970, 1, 1, 0, 0, 1, 500000)), ("ns", datetime.date(1970, 1, 1)),
]  # fmt: skip


@pytest.fixture(scope="module")
def temporal_sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("where_temporal")
    pq.write_table(TEMPORAL, d / "t.parquet", row_group_size=2)
    columnar.write(str(d / "c"), TEMPORAL, chunk_rows=2)
    return {"memory": TEMPORAL, "parquet": str(d / "t.parquet"), "columnar": str(d / "c")}


@pytest.mark.parametrize("source", ["memory", "parquet", "columnar"])
@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">=", "in"])
@pytest.mark.parametrize("col,literal", TEMPORAL_LITERALS, ids=repr)
def test_temporal_literals_finer_than_the_column_compare_exactly(temporal_sources, source, op, col, literal):
    """A datetime literal against a DATE column, or one with more precision than a timestamp
    column's unit, was cast to the column's type first (truncated): d >= '2020-01-01 12:00' held for
    2020-01-01; a date literal against a timestamp column raised."""
    pred = (col, op, [literal] if op == "in" else literal)
    got = hash_join(temporal_sources[source], TEMPORAL.select(["k"]), on="k", how="semi", where=pred)
    con = duckdb.connect()
    con.register("p", TEMPORAL)
    sql_op = {"==": "=", "in": "IN"}.get(op, op)
    want = sorted(r[0] for r in con.execute(f"SELECT k FROM p WHERE {col} {sql_op} " + ("(?)" if op == "in" else "?"),
                                            [literal]).fetchall())
    assert sorted(got.column("k").to_pylist()) == want
