"""``where=`` on a boolean column with integer literals answers as DuckDB's WHERE (the column
compared as 1 / 0), where it used to refuse them; boolean literals keep working; a float literal
is refused with our error, as DuckDB refuses ``BOOLEAN < DOUBLE``."""

from __future__ import annotations

import pyarrow as pa
import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

from test_join_where import _duck

duckdb = pytest.importorskip("duckdb")

TABLE = pa.table({"k": pa.array([0, 1, 2, 3], pa.int64()), "x": pa.array([True, False, None, True])})
PREDS = [("x", op, lit) for op in ("==", "!=", "<", "<=", ">", ">=") for lit in (0, 1, 2, -1, True, False)]
PREDS += [("x", op, lits) for op in ("in", "not in") for lits in ([1], [0], [2], [1, 0], [-1, 7], [True], [False, True])]


@pytest.mark.parametrize("pred", PREDS, ids=repr)
def test_bool_column_against_number_and_bool_literals(pred):
    got = hash_join(TABLE, TABLE.select(["k"]), on="k", how="semi", where=pred)
    assert sorted(got.column("k").to_pylist()) == _duck(TABLE, pred)


@pytest.mark.parametrize("lit", [0.5, 1.0])
def test_bool_column_against_a_float_literal_is_refused_cleanly(lit):
    with pytest.raises(InvalidArgument):
        hash_join(TABLE, TABLE.select(["k"]), on="k", how="semi", where=("x", ">", lit))
