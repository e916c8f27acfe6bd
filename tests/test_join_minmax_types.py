"""``min`` / ``max`` over non-numeric columns -- dates, times, timestamps (with and without a time
zone), decimals, strings, large strings, binary, dictionary strings -- on either side of every
join kind, with and without ``group_by`` (a probe and a build group column), from memory,
Parquet and a columnar table: answers (values and, per group, Arrow types) equal DuckDB's; nulls
are skipped, a group or a join of no value gives null. Refused before (InvalidArgument "is not
numeric")."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb import columnar
from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

D = dt.date
PROBE = pa.table({
    "k": [1, 1, 2, 3, None, 7, 2],
    "g": ["a", "b", "a", "b", "a", "c", "c"],
    "d": pa.array([D(2020, 1, 1), D(2021, 5, 1), None, D(1999, 1, 2), D(1970, 1, 1), None, D(2030, 1, 1)]),
    "ts": pa.array([5, None, 3, 9, 1, None, 4], pa.timestamp("us")),
    "tz": pa.array([5, 6, 3, None, 1, None, 8], pa.timestamp("ms", "UTC")),
    "t": pa.array([5, 2, None, 9, 1, None, 4], pa.time64("us")),
    "dec": pa.array([Decimal("1.50"), Decimal("-2.25"), None, Decimal("10"), Decimal("0"), None, Decimal("3")],
                    pa.decimal128(10, 2)),
    "s": ["b", "ä", None, "B", "zz", None, ""],
    "ls": pa.array(["q", None, "a", "ab", "b", None, "c"], pa.large_string()),
    "bin": pa.array([b"\x00", b"\xff", None, b"", b"a", None, b"\x00\x00"]),
    "ds": pa.array(["x", "y", None, "a", "x", None, "m"]).dictionary_encode(),
})  # fmt: skip
BUILD = pa.table({
    "k": [1, 1, 3, 4, None, 2],
    "bg": [10, 20, 10, 30, 30, 20],
    "bd": pa.array([D(2001, 1, 1), None, D(2000, 1, 1), D(1990, 1, 1), D(1980, 1, 1), None]),
    "bs": ["m", "a", None, "zz", "0", None],
    "bdec": pa.array([Decimal("1.1"), Decimal("-1.1"), None, Decimal("9.9"), None, None], pa.decimal128(5, 1)),
})  # fmt: skip
PCOLS = ["d", "ts", "tz", "t", "dec", "s", "ls", "bin", "ds"]
BCOLS = ["bd", "bs", "bdec"]
KIND = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "full": "FULL OUTER", "semi": "SEMI", "anti": "ANTI"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("minmax")
    pq.write_table(PROBE, d / "p.parquet", row_group_size=3)
    columnar.write(str(d / "c"), PROBE.select(["k", "g", "d", "ts", "s"]), chunk_rows=3)
    return {"memory": PROBE, "parquet": str(d / "p.parquet"), "columnar": str(d / "c")}


def _cols(source: str, how: str) -> list[str]:
    probe = ["d", "ts", "s"] if source == "columnar" else PCOLS
    return probe + ([] if how in ("semi", "anti") else BCOLS)


def _duck(how: str, cols: list[str], group: str | None) -> pa.Table:
    con = duckdb.connect()
    con.register("p", PROBE)
    con.register("b", BUILD)
    ref = {c: ("b" if c in BCOLS else "p") + f".{c}" for c in cols}
    sel = ", ".join(f'{f}({ref[c]}) AS "{f}({c})"' for c in cols for f in ("min", "max"))
    gsel = f"{'b' if group == 'bg' else 'p'}.{group}" if group else None
    sql = f"SELECT {gsel + ' AS ' + group + ', ' if group else ''}{sel} FROM p {KIND[how]} JOIN b ON p.k = b.k"
    return con.sql(sql + (f" GROUP BY {gsel}" if group else "")).to_arrow_table()


@pytest.mark.parametrize("source", ["memory", "parquet", "columnar"])
@pytest.mark.parametrize("how", sorted(KIND))
def test_min_max_of_ordered_columns_equal_duckdb(sources, source, how):
    cols = _cols(source, how)
    aggs = [f"{f}({c})" for c in cols for f in ("min", "max")]
    want = _duck(how, cols, None).to_pylist()[0]
    got = hash_join(sources[source], BUILD, on="k", how=how, aggregates=aggs)
    assert got == want


def _same(t: pa.DataType, w: pa.DataType) -> bool:
    text = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    return t == w or any(f(t) for f in text) and any(f(w) for f in text)


@pytest.mark.parametrize("source", ["memory", "parquet"])
@pytest.mark.parametrize("how", sorted(KIND))
@pytest.mark.parametrize("group", ["g", "bg"])
def test_min_max_of_ordered_columns_per_group_equal_duckdb(sources, source, how, group):
    if group == "bg" and how in ("semi", "anti"):
        pytest.skip("a semi / anti join has no build columns")
    cols = _cols(source, how)
    aggs = [f"{f}({c})" for c in cols for f in ("min", "max")]
    want = _duck(how, cols, group)
    got = hash_join(sources[source], BUILD, on="k", how=how, aggregates=aggs, group_by=group)
    assert got.column_names == want.column_names
    for name in aggs:  # the column's own type (a dictionary's: its values')
        col = name[4:-1]
        t = (BUILD if col in BCOLS else PROBE).schema.field(col).type
        assert got.schema.field(name).type == (t.value_type if pa.types.is_dictionary(t) else t)
        if not pa.types.is_timestamp(t):  # DuckDB holds timestamps in us, time zones as TIMESTAMPTZ
            assert _same(got.schema.field(name).type, want.schema.field(name).type), name
    key = lambda r: (r[group] is None, r[group])  # noqa: E731
    assert sorted(got.to_pylist(), key=key) == sorted(want.to_pylist(), key=key)


def test_min_max_of_no_rows_is_null():
    empty_build = BUILD.slice(0, 0)
    got = hash_join(PROBE, empty_build, on="k", aggregates=["min(d)", "max(s)", "max(build.bd)", "min(dec)"])
    assert got == {"min(d)": None, "max(s)": None, "max(build.bd)": None, "min(dec)": None}
    t = hash_join(PROBE, empty_build, on="k", aggregates=["min(d)", "max(s)"], group_by="g")
    assert t.num_rows == 0 and t.schema.field("min(d)").type == pa.date32() and t.schema.field("max(s)").type == pa.string()


def test_min_max_of_durations():
    probe = pa.table({"k": [1, 2, 2, 3], "du": pa.array([5, None, -7, 100], pa.duration("ms"))})
    build = pa.table({"k": [1, 2], "bdu": pa.array([None, 3], pa.duration("s"))})
    got = hash_join(probe, build, on="k", aggregates=["min(du)", "max(du)", "max(bdu)", "min(bdu)"])
    assert got == {"min(du)": dt.timedelta(milliseconds=-7), "max(du)": dt.timedelta(milliseconds=5),
                   "max(bdu)": dt.timedelta(seconds=3), "min(bdu)": dt.timedelta(seconds=3)}
    t = hash_join(probe, build, on="k", how="full", aggregates=["min(du)", "max(bdu)"], group_by="k")
    assert t.schema.field("min(du)").type == pa.duration("ms")
    assert sorted(t.to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "min(du)": dt.timedelta(milliseconds=5), "max(bdu)": None},
        {"k": 2, "min(du)": dt.timedelta(milliseconds=-7), "max(bdu)": dt.timedelta(seconds=3)},
        {"k": 3, "min(du)": dt.timedelta(milliseconds=100), "max(bdu)": None}]


@pytest.mark.parametrize("agg", ["sum(d)", "avg(s)", "min(l)", "max(iv)"])
def test_what_has_no_order_or_sum_stays_refused(agg):
    probe = pa.table({"k": [1], "d": pa.array([D(2020, 1, 1)]), "s": ["a"], "l": pa.array([[1]]),
                      "iv": pa.array([pa.MonthDayNano([1, 0, 0])], pa.month_day_nano_interval())})
    with pytest.raises(InvalidArgument, match=agg.split("(")[0]):
        hash_join(probe, pa.table({"k": [1]}), on="k", aggregates=[agg])


@pytest.mark.parametrize("how", sorted(KIND))
def test_min_max_of_a_null_typed_column_is_null(how):
    """A column of Arrow's null type (an all-None pandas column) has no value: min / max are null,
    as DuckDB's over a NULL column (refused before), plain and per group."""
    probe = pa.table({"k": [1, 2, 3, 1], "g": [1, 1, 2, 2], "x": pa.nulls(4)})
    build = pa.table({"k": [1, 2, 5]})
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    sql = f"FROM p {KIND[how]} JOIN b USING (k)"
    got = hash_join(probe, build, on="k", how=how, aggregates=["min(x)", "max(x)", "count(x)", "count(*)"])
    assert tuple(got.values()) == con.execute(f"SELECT min(x), max(x), count(x), count(*) {sql}").fetchone()
    grouped = hash_join(probe, build, on="k", how=how, aggregates=["min(x)", "max(x)"], group_by="g")
    want = con.execute(f"SELECT g, min(x), max(x) {sql} GROUP BY g").fetchall()
    rows = list(zip(*grouped.to_pydict().values()))
    assert sorted(rows, key=repr) == sorted(want, key=repr)
