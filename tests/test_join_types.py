"""Join keys of two Arrow types compare as DuckDB compares them (issue 12 item 7).

Every pair of key types, edge values included, is joined by bloomdb (probe from an Arrow table, a
Parquet file with Bloom filters and small row groups, and a columnar table) and by DuckDB over the
same Arrow tables; the rows must agree. Where DuckDB refuses a pair by type, bloomdb must raise
InvalidArgument; the pairs bloomdb refuses although DuckDB answers are listed (REFUSED_ON_PURPOSE).
Where DuckDB stops on a value it cannot convert (an instant outside the finer unit's range), the
answer is checked against :func:`reference_key` (such a value equals nothing).
"""

from __future__ import annotations

import functools
import itertools
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bloomdb import columnar
from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

TYPES = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "float32": pa.float32(), "float64": pa.float64(), "bool": pa.bool_(),
    "date32": pa.date32(), "date64": pa.date64(),
    "ts_s": pa.timestamp("s"), "ts_ms": pa.timestamp("ms"), "ts_us": pa.timestamp("us"), "ts_ns": pa.timestamp("ns"),
    "tsz_s": pa.timestamp("s", tz="UTC"), "tsz_ms": pa.timestamp("ms", tz="Asia/Tokyo"),
    "tsz_ns": pa.timestamp("ns", tz="America/New_York"),
    "string": pa.string(), "large_string": pa.large_string(), "binary": pa.binary(),
    "decimal": pa.decimal128(12, 2),
}  # fmt: skip
NUMBER = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "bool"}
TEMPORAL = {"date32", "date64", "ts_s", "ts_ms", "ts_us", "ts_ns", "tsz_s", "tsz_ms", "tsz_ns"}
STRINGS = {"string", "large_string"}


def _refused_on_purpose(a: str, b: str) -> bool:
    """Pairs DuckDB answers but bloomdb refuses (documented in bloomdb.join.compare)."""
    pair = {a, b}
    if "decimal" in pair:
        return True
    if pair & STRINGS and pair - STRINGS - {"binary"}:  # DuckDB casts the strings and fails on bad ones
        return True
    tz = {t for t in pair if t.startswith("tsz")}
    return bool(tz) and bool(pair - tz) and pair <= TEMPORAL  # session time zone dependent


def _int_edges(t: pa.DataType) -> list[int]:
    info = np.iinfo(t.to_pandas_dtype())
    lo, hi = int(info.min), int(info.max)
    pool = [0, 1, -1, 2, 127, 128, 255, 256, 1000, 86400, 86_400_000, 2**31 - 1, 2**31, 2**32 - 1, 2**53 + 1,
            16_777_217, 2**63 - 1, 2**63, 2**64 - 1, -(2**31), -(2**63), lo, hi, lo + 1, hi - 1]
    return sorted({v for v in pool if lo <= v <= hi})


EDGES = {
    **{n: _int_edges(TYPES[n]) for n in NUMBER - {"float32", "float64", "bool"}},
    "bool": [True, False],
    "float32": [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 16_777_216.0, 2.0**31, 2.0**63, float("nan"), float("inf"), -float("inf"),
                3.4e38, 1000.0],
    "float64": [0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 16_777_217.0, 2.0**53, 2.0**53 + 2, 2.0**63, 2.0**64, float("nan"),
                float("inf"), 86400.0, 1.7e308],
    "date32": [0, 1, -1, 10_957, 2**31 - 1, -(2**31 - 1), 2_932_896, -2_932_896, 1000],
    "date64": [0, 86_400_000, -86_400_000, 1, -1, 86_400_001, 946_684_800_000, 253_402_214_400_000],
    "string": ["1", "a", "", "01", "-1", "é", "1000"],
    "binary": [b"1", b"a", b"", b"\xff", b"01"],
    "decimal": [Decimal("1.00"), Decimal("0.50"), Decimal("-1.00"), Decimal("1000.00")],
}
EDGES["large_string"] = EDGES["string"]
for _n in TEMPORAL - {"date32", "date64"}:
    EDGES[_n] = [0, 1, -1, 1000, 86_400, 86_400_000, 86_400_000_000, 86_400 * 10**9, 1_000_000, 10**9, 2**31,
                 2**62, 2**63 - 1, -(2**63 - 1), -(2**63), 946_684_800, 946_684_800_000_000]


def _arrow(name: str, values: list) -> pa.Array:
    t = TYPES[name]
    if name in TEMPORAL:
        storage = pa.int32() if name == "date32" else pa.int64()
        return pa.array(values, storage).view(t)
    return pa.array(values, t)


# ---- what bloomdb and DuckDB answer ---------------------------------------------------------------


SQL = {
    "inner": "select p.pid, b.bid from p join b on p.k = b.k",
    "semi": "select p.pid from p semi join b on p.k = b.k",
    "anti": "select p.pid from p anti join b on p.k = b.k",
}


def _tables(a: str, pvals: list, b: str, bvals: list) -> tuple[pa.Table, pa.Table]:
    probe = pa.table({"pid": np.arange(len(pvals), dtype=np.int64), "k": _arrow(a, pvals)})
    build = pa.table({"bid": np.arange(len(bvals), dtype=np.int64), "k": _arrow(b, bvals)})
    return probe, build


def duck_answer(probe: pa.Table, build: pa.Table, how: str) -> list[tuple] | Exception:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.register("p", probe)
    con.register("b", build)
    try:
        return sorted(con.sql(SQL[how]).fetchall())
    except duckdb.Error as exc:
        return exc


def ours(probe_src, build: pa.Table, how: str, **kw) -> list[tuple]:
    cols = ["pid", "bid"] if how == "inner" else ["pid"]
    t = hash_join(probe_src, build, on="k", how=how, columns=cols, **kw)
    return sorted(zip(*[t.column(c).to_pylist() for c in cols]))


def _type_refusal(exc: Exception) -> bool:
    """DuckDB refused the pair by type (not a value it could not convert)."""
    return isinstance(exc, duckdb.BinderException) or "Unimplemented type for cast" in str(exc)


# ---- the reference: the documented rules, in plain Python ----------------------------------------

_EXP = {"ts_s": 0, "ts_ms": 3, "ts_us": 6, "ts_ns": 9, "tsz_s": 0, "tsz_ms": 3, "tsz_ns": 9}
_I64 = 2**63 - 1


def reference_key(name: str, other: str, v):
    """The value ``v`` of type ``name`` is compared as, joined with type ``other``; None = equals nothing."""
    if v is None:
        return None
    if {name, other} <= {"string", "large_string", "binary"}:
        return v.encode() if isinstance(v, str) else v
    if name in NUMBER and other in NUMBER:
        if "float32" in (name, other) or "float64" in (name, other):
            f32 = all(t == "float32" for t in (name, other) if t.startswith("float"))
            x = float(np.float32(v)) if f32 else float(v)
            return "nan" if math.isnan(x) else x
        return int(v)
    unit = max(_EXP.get(t, -1) for t in (name, other))
    if name.startswith("date"):
        days = v if name == "date32" else int(v / 86_400_000)  # truncated toward zero, as DuckDB reads date64
        if abs(days) > 2**31 - 1:
            return None
        if unit < 0:
            return days
        if abs(days) == 2**31 - 1:  # DuckDB's date +-infinity is timestamp +-infinity
            return ("inf", days > 0)
        x = days * 86_400 * 10**unit
    else:
        if abs(v) == _I64:  # DuckDB's timestamp +-infinity, in every unit
            return ("inf", v > 0)
        x = v * 10 ** (unit - _EXP[name])
    return x if -(2**63) <= x <= _I64 else None


def reference(a: str, pvals: list, b: str, bvals: list, how: str) -> list[tuple]:
    pk = [reference_key(a, b, v) for v in pvals]
    bk = [reference_key(b, a, v) for v in bvals]
    pairs = [(i, j) for i, x in enumerate(pk) for j, y in enumerate(bk) if x is not None and x == y]
    if how == "inner":
        return sorted(pairs)
    hit = {i for i, _ in pairs}
    return sorted((i,) for i in range(len(pvals)) if (i in hit) == (how == "semi"))


# ---- the check -------------------------------------------------------------------------------------


def _sources(tmp_path, probe: pa.Table, a: str):
    yield "arrow", probe, {"chunk_rows": 3}
    path = tmp_path / f"p-{a}.parquet"
    try:
        bloom = {} if a == "bool" else {"bloom_filter_options": {"k": {"ndv": 16, "fpp": 0.01}}}
        pq.write_table(probe, path, row_group_size=3, **bloom)
    except (pa.ArrowException, NotImplementedError):
        path = None
    if path is not None:
        yield "parquet", path, {}
    folder = tmp_path / f"c-{a}"
    try:
        columnar.write(folder, probe, chunk_rows=3)
    except (InvalidArgument, pa.ArrowException):
        return
    yield "columnar", folder, {}


SAFE = {**{n: 1 for n in NUMBER}, "bool": True, **{n: 0 for n in TEMPORAL}, "string": "1", "large_string": "1",
        "binary": b"1", "decimal": Decimal("1.00")}


@functools.lru_cache(maxsize=None)
def duck_refuses_types(a: str, b: str) -> bool:
    """DuckDB refuses to compare ``a`` with ``b`` whatever the values (asked with one plain value each)."""
    probe, build = _tables(a, [SAFE[a]], b, [SAFE[b]])
    got = duck_answer(probe, build, "inner")
    return isinstance(got, Exception) and _type_refusal(got)


def check_pair(tmp_path, a: str, pvals: list, b: str, bvals: list, hows=("inner", "semi", "anti"), sources=True,
               pushdowns=("on", "off")):
    probe, build = _tables(a, pvals, b, bvals)
    answers = {how: duck_answer(probe, build, how) for how in hows}
    if _refused_on_purpose(a, b) or duck_refuses_types(a, b) \
            or any(isinstance(w, Exception) and _type_refusal(w) for w in answers.values()):
        for how in hows:
            with pytest.raises(InvalidArgument, match="cannot join"):
                hash_join(probe, build, on="k", how=how)
        return
    for label, src, kw in (_sources(tmp_path, probe, a) if sources else [("arrow", probe, {})]):
        # the probe as this source holds it (Parquet stores date64 as days, timestamp[s] as ms)
        held = probe if label == "arrow" else (pq.read_table(src) if label == "parquet" else columnar.read(src))
        held_vals = held.column("k").combine_chunks().cast(probe.schema.field("k").type)
        for how in hows:
            want = duck_answer(held, build, how) if label != "arrow" else answers[how]
            pv = _storage_values(held_vals, a)
            if isinstance(want, Exception):  # a value DuckDB cannot convert: it equals nothing
                assert isinstance(want, duckdb.ConversionException), want
                want = reference(a, pv, b, bvals, how)
            else:
                assert want == reference(a, pv, b, bvals, how), (a, b, how, "the reference disagrees with DuckDB")
            for pushdown in pushdowns if sources else ("on",):
                got = ours(src, build, how, pushdown=pushdown, **kw)
                assert got == want, (a, b, how, label, pushdown, pvals, bvals)


def _storage_values(arr: pa.Array, name: str) -> list:
    if name in TEMPORAL:
        return arr.view(pa.int32() if name == "date32" else pa.int64()).to_pylist()
    return arr.to_pylist()


PAIRS = list(itertools.product(TYPES, TYPES))
# pairs whose probe is also written to Parquet (Bloom filters, 3-row groups) and a columnar table
# by default (every pair is, under `slow`): each conversion into a finer or a wider domain
SOURCE_PAIRS = [("uint64", "int64"), ("int64", "uint64"), ("uint32", "int8"), ("int16", "uint32"), ("uint64", "uint64"),
                ("int32", "float32"), ("float64", "int64"), ("bool", "int8"), ("date32", "ts_ms"), ("ts_s", "ts_ns"),
                ("ts_ns", "ts_s"), ("date64", "date32"), ("ts_us", "date32"), ("tsz_s", "tsz_ns"),
                ("string", "binary"), ("large_string", "string"), ("date32", "int32"), ("string", "int64")]


def _edge_case(tmp_path, a, b, sources, hows=("inner", "semi", "anti"), pushdowns=("on", "off")):
    pvals = EDGES[a] + [None]
    bvals = list(reversed(EDGES[b])) + [None, EDGES[b][0]]
    check_pair(tmp_path, a, pvals, b, bvals, hows, sources=sources, pushdowns=pushdowns)


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_every_type_pair_with_edge_values_matches_duckdb(tmp_path, a, b):
    _edge_case(tmp_path, a, b, sources=False, hows=("inner", "anti"))  # semi: under slow, and for SOURCE_PAIRS


@pytest.mark.parametrize("a,b", SOURCE_PAIRS, ids=[f"{a}-{b}" for a, b in SOURCE_PAIRS])
def test_type_pairs_from_parquet_and_columnar_probes(tmp_path, a, b):
    _edge_case(tmp_path, a, b, sources=True)


@pytest.mark.slow
@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_every_type_pair_from_every_probe_source(tmp_path, a, b):
    # semi joins and pushdown "off" are checked from every source for SOURCE_PAIRS
    _edge_case(tmp_path, a, b, sources=True, hows=("inner", "anti"), pushdowns=("on",))


def _values(name: str):
    t = TYPES[name]
    edge = st.sampled_from(EDGES[name])
    if name in NUMBER - {"float32", "float64", "bool"}:
        info = np.iinfo(t.to_pandas_dtype())
        other = st.integers(int(info.min), int(info.max))
    elif name.startswith("float"):
        other = st.floats(width=32 if name == "float32" else 64) | st.integers(-1000, 1000).map(float)
    elif name in TEMPORAL:
        bits = 32 if name == "date32" else 64
        other = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) | st.integers(-3, 3).map(lambda d: d * 86_400_000)
    elif name in STRINGS:
        other = st.text(max_size=4)
    elif name == "binary":
        other = st.binary(max_size=4)
    else:
        other = edge
    return st.lists(st.none() | edge | other, max_size=8)


@st.composite
def _pair(draw):
    a = draw(st.sampled_from(sorted(TYPES)))
    b = draw(st.sampled_from(sorted(TYPES)))
    return a, draw(_values(a)), b, draw(_values(b))


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=60, **_SETTINGS)
@given(_pair())
def test_random_type_pairs_and_values_match_duckdb(tmp_path_factory, drawn):
    a, pvals, b, bvals = drawn
    check_pair(tmp_path_factory.mktemp("pair"), a, pvals, b, bvals, sources=False)


@pytest.mark.slow
@settings(max_examples=80, **_SETTINGS)
@given(_pair())
def test_random_type_pairs_and_values_match_duckdb_long(tmp_path_factory, drawn):
    a, pvals, b, bvals = drawn
    check_pair(tmp_path_factory.mktemp("pair"), a, pvals, b, bvals)
