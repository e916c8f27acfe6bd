"""``where=`` on float columns answers as DuckDB's WHERE: a float literal is a double, so a float32
column meets it as float64 (``float32(0.1) == 0.1`` is false, ``float32(16777216) in [16777217.0]``
too), an integer literal is cast to the column's type (``float32(16777216) == 16777217`` is true),
and integer literals beyond what a double holds exactly (``2**63 - 1``, ``2**64 - 1``, ``-2**63 - 1``)
in ``in`` lists, with or without NaN beside them, are compared, never refused."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bloomdb.join import hash_join

from test_join_where import _duck

duckdb = pytest.importorskip("duckdb")

NAN = math.nan
HUGE = [2**63 - 1, 2**63, 2**64 - 1, -(2**63) - 1, 2**53 + 1]
VALUES = [0.1, 16777216.0, 16777218.0, NAN, -0.0, 0.0, 1.0, 9.223372036854776e18, -9.223372036854776e18, None]

CASES = [(op, lit) for op in ("==", "!=", "<", "<=", ">", ">=") for lit in (0.1, 16777217, 16777217.0, 2**63 - 1, 2**64 - 1)]
CASES += [(op, lits) for op in ("in", "not in") for lits in (
    [0.1], [16777217], [16777217.0], [16777217, 0.5], [2**63 - 1, NAN], [2**63], [2**64 - 1, NAN],
    [-(2**63) - 1, 0.5], [2**63 - 1], [NAN, 1.8446744073709552e19], [0, -0.0], [2**53 + 1, 1])]


def _table(t: pa.DataType) -> pa.Table:
    return pa.table({"k": pa.array(range(len(VALUES)), pa.int64()), "x": pa.array(VALUES, pa.float64()).cast(t)})


@pytest.mark.parametrize("case", CASES, ids=repr)
@pytest.mark.parametrize("t", [pa.float32(), pa.float64()], ids=str)
def test_float_columns_against_int_and_float_literals(tmp_path, t, case):
    table = _table(t)
    pred = ("x", *case)
    want = _duck(table, pred)
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=3)
    for source in (table, str(tmp_path / "p.parquet")):
        got = hash_join(source, table.select(["k"]), on="k", how="semi", where=pred)
        assert sorted(got.column("k").to_pylist()) == want, (source if isinstance(source, str) else "memory", pred)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(t=st.sampled_from([pa.float32(), pa.float64()]),
       vals=st.lists(st.floats(width=32), min_size=1, max_size=10),
       op=st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]),
       lits=st.lists(st.one_of(st.floats(), st.integers(-(2**53), 2**53), st.sampled_from(HUGE)), min_size=1, max_size=4))
def test_float_where_property_against_duckdb(t, vals, op, lits):
    table = pa.table({"k": pa.array(range(len(vals)), pa.int64()), "x": pa.array(vals, pa.float32()).cast(t)})
    pred = ("x", op, lits if op in ("in", "not in") else lits[0])
    got = hash_join(table, table.select(["k"]), on="k", how="semi", where=pred)
    assert sorted(got.column("k").to_pylist()) == _duck(table, pred)
