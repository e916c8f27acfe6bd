"""``where=`` on a decimal column, as DuckDB answers: a float literal compares as float64 (DECIMAL
with DOUBLE is DOUBLE; NaN above every number), a Decimal or integer literal exactly even when it
has a finer scale or more digits than the column (Arrow's cast refused those: InvalidArgument
"int or Decimal object expected" / "Rescaling Decimal value would cause data loss"), in
comparisons and ``in`` lists, from memory and Parquet (statistics pruning included)."""

from __future__ import annotations

from decimal import Decimal as D

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

PROBE = pa.table({"k": [1, 2, 3, 4, 5, 6],
                  "dec": pa.array([D("1.5"), D("2.5"), None, D("-1"), D("999.99"), D("0")], pa.decimal128(5, 2))})
BUILD = pa.table({"k": [1, 2, 3, 4, 5, 6]})
CASES = [
    (("dec", ">", 1.6), "dec > 1.6::DOUBLE"), (("dec", "!=", 1.5), "dec != 1.5::DOUBLE"),
    (("dec", "==", 2.5), "dec = 2.5::DOUBLE"), (("dec", ">=", float("nan")), "dec >= 'nan'::DOUBLE"),
    (("dec", "<", float("nan")), "dec < 'nan'::DOUBLE"), (("dec", "<", float("inf")), "dec < 'inf'::DOUBLE"),
    (("dec", ">", D("1.499")), "dec > 1.499"), (("dec", "==", D("1.500")), "dec = 1.500"),
    (("dec", "==", D("1.501")), "dec = 1.501"), (("dec", "<", 10**20), "dec < 100000000000000000000"),
    (("dec", ">", -(10**40)), "dec IS NOT NULL"), (("dec", "<", -(10**35)), "dec < -" + "1" + "0" * 35),
    (("dec", "<=", D("999.989")), "dec <= 999.989"),
    (("dec", "in", [1.5, D("2.5")]), "dec in (1.5::DOUBLE, 2.5)"), (("dec", "in", [D("1.5000001"), -1]), "dec in (1.5000001, -1)"),
    (("dec", "not in", [D("2.50"), 0]), "dec not in (2.50, 0)"), (("dec", "in", [float("nan"), 0.0]), "dec in ('nan'::DOUBLE, 0.0::DOUBLE)"),
]  # fmt: skip


@pytest.fixture(scope="module")
def parquet_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("dec") / "p.parquet"
    pq.write_table(PROBE, path, row_group_size=2)
    return str(path)


@pytest.mark.parametrize("where,sql", CASES, ids=[c[1] for c in CASES])
def test_where_on_a_decimal_column_as_duckdb(parquet_path, where, sql):
    con = duckdb.connect()
    con.register("p", PROBE)
    want = sorted(r[0] for r in con.sql(f"SELECT k FROM p WHERE {sql}").fetchall())
    for src in (PROBE, parquet_path):
        assert sorted(hash_join(src, BUILD, on="k", where=where)["k"].to_pylist()) == want
