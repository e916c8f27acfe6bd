"""Differential fuzz of multi-column keys against DuckDB: 1-3 key columns whose types differ per
side within a comparable family (integers of every width and sign with floats; string with
large_string; dates with timestamps of every unit), named alike or not (``left_on`` /
``right_on``) and given in any order, nulls and duplicates on both sides, every ``how``, the probe
from memory, Parquet or a columnar table, every pushdown mode. Rows must equal DuckDB's (keys named
alike are one column, coalesced in right / full joins as USING; keys named apart are both kept, as
DuckDB's ``SELECT *``)."""

from __future__ import annotations

import collections
import datetime
import decimal
import random

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

TYPES = {"i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(), "u8": pa.uint8(), "u32": pa.uint32(),
         "u64": pa.uint64(), "f32": pa.float32(), "f64": pa.float64(), "str": pa.string(), "lstr": pa.large_string(),
         "bin": pa.binary(), "bool": pa.bool_(), "d32": pa.date32(), "ts_s": pa.timestamp("s"),
         "ts_ms": pa.timestamp("ms"), "ts_us": pa.timestamp("us"), "ts_ns": pa.timestamp("ns")}  # fmt: skip
FAMILIES = [["i8", "i16", "i32", "i64", "u8", "u32", "u64", "f32", "f64"], ["str", "lstr"], ["bin"], ["bool"],
            ["d32", "ts_s", "ts_ms", "ts_us", "ts_ns"]]
DAY = {"ts_s": 86400, "ts_ms": 86400_000, "ts_us": 86400_000_000, "ts_ns": 86400_000_000_000}
KIND = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "full": "FULL OUTER", "semi": "SEMI", "anti": "ANTI"}


def _column(t: str, ints: list[int], nulls: list[bool]) -> pa.Array:
    mask = np.array(nulls, dtype=bool)
    if t in ("str", "lstr", "bin"):
        vals = [f"k{x}" if x % 3 else "é" * x for x in ints]
        return pa.array([v.encode() for v in vals] if t == "bin" else vals, TYPES[t], mask=mask)
    if t == "bool":
        return pa.array([bool(x % 2) for x in ints], pa.bool_(), mask=mask)
    if t == "d32":
        return pa.array(np.array(ints, np.int32), pa.int32(), mask=mask).view(pa.date32())
    if t in DAY:
        return pa.array(np.array(ints, np.int64) * DAY[t], pa.int64(), mask=mask).view(TYPES[t])
    if t in ("f32", "f64"):
        return pa.array([x * 0.5 if x % 5 == 0 else float(x) for x in ints], TYPES[t], mask=mask)
    return pa.array(ints, TYPES[t], mask=mask)


def _table(rng: random.Random, n: int, types: list[str], names: list[str], payload: str) -> pa.Table:
    cols = {nm: _column(t, [rng.randrange(0, 6) for _ in range(n)], [rng.random() < 0.15 for _ in range(n)])
            for nm, t in zip(names, types)}
    cols[payload] = pa.array([rng.randrange(-5, 100) for _ in range(n)], pa.int64())
    return pa.table(cols)


def _canon(v):
    if isinstance(v, datetime.datetime):
        return ("T", v.replace(tzinfo=None).isoformat())
    if isinstance(v, datetime.date):
        return ("T", datetime.datetime(v.year, v.month, v.day).isoformat())
    if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
        return ("N", float(v))
    return v


def _rows(t: pa.Table) -> collections.Counter:
    return collections.Counter(tuple(sorted((k, repr(_canon(v))) for k, v in r.items())) for r in t.to_pylist())


def _duck(p, b, lk, rk, how) -> pa.Table:
    con = duckdb.connect()
    con.register("p", p)
    con.register("b", b)
    if how in ("semi", "anti"):
        sel = "p.*"
    else:
        outer = how in ("right", "full")  # a key named alike is coalesced (USING); keys named apart are both kept
        same = {c for c, r in zip(lk, rk) if c == r}
        sel = ", ".join(f'coalesce(p."{c}", b."{c}") AS "{c}"' if outer and c in same else f'p."{c}"'
                        for c in p.column_names)
        sel += "".join(f', b."{c}"' for c in b.column_names if c not in same)
    cond = " AND ".join(f'p."{a}" = b."{c}"' for a, c in zip(lk, rk))
    return con.sql(f"SELECT {sel} FROM p {KIND[how]} JOIN b ON {cond}").to_arrow_table()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), how=st.sampled_from(sorted(KIND)))
def test_multikey_joins_match_duckdb(tmp_path_factory, seed, how):
    rng = random.Random(seed)
    nk = rng.choice([1, 2, 3])
    fams = [rng.choice(FAMILIES) for _ in range(nk)]
    lt, rt = [rng.choice(f) for f in fams], [rng.choice(f) for f in fams]
    lnames = [f"a{i}" for i in range(nk)]
    rnames = lnames if rng.random() < 0.5 else [f"b{i}" for i in range(nk)]
    p = _table(rng, rng.choice([0, 1, 5, 40, 150]), lt, lnames, "pv")
    b = _table(rng, rng.choice([0, 1, 5, 30]), rt, rnames, "bv")
    order = rng.sample(range(nk), nk)
    lk, rk = [lnames[i] for i in order], [rnames[i] for i in order]
    probe = p
    source = rng.choice(["memory", "parquet", "columnar"])
    d = tmp_path_factory.mktemp("mk")
    if source == "parquet":
        pq.write_table(p, d / "p.parquet", row_group_size=rng.choice([3, 50, 1000]))
        probe = str(d / "p.parquet")
    elif source == "columnar":
        probe = str(columnar.write(str(d / "c"), p, chunk_rows=rng.choice([3, 50, 1000])).path)
    kw = dict(how=how, chunk_rows=rng.choice([7, 64, 65536]), pushdown=rng.choice(["adaptive", "on", "off"]))
    try:
        if lk == rk:
            got = hash_join(probe, b, on=lk if nk > 1 else lk[0], **kw)
        else:
            got = hash_join(probe, b, left_on=lk, right_on=rk, **kw)
    except InvalidArgument as exc:  # documented: build keys coalesced into a probe key type they do not fit
        assert how in ("right", "full") and "do not fit the probe key's type" in str(exc)
        return
    assert _rows(got) == _rows(_duck(p, b, lk, rk, how)), (lt, rt, lk, rk, source, kw)
