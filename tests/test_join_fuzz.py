"""Differential fuzz test of join shapes against DuckDB (issue 12's Done-when).

Random sizes (empty sides included), duplicates on both sides (many-to-many), nulls, key types
of both kinds, the probe from an Arrow table, a Parquet file (small row groups, sometimes Bloom
filters) and a columnar table, the build from memory or a file; inner / semi / anti; rows and
aggregates; every pushdown mode, threads, chunk sizes and filter families. Every answer must
equal DuckDB's on the same data.
"""

from __future__ import annotations

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

KEY_TYPES = {
    "int64": pa.int64(), "int32": pa.int32(), "uint64": pa.uint64(), "uint8": pa.uint8(), "date32": pa.date32(),
    "ts_us": pa.timestamp("us"), "ts_ms_tz": pa.timestamp("ms", tz="UTC"), "float64": pa.float64(),
    "string": pa.string(), "large_string": pa.large_string(), "binary": pa.binary(), "dict_string": "dict",
}  # fmt: skip
# a build key type that compares with the probe key type (None: the same type)
PARTNERS = {
    "int64": [None, "int32", "uint64", "uint8"], "int32": [None, "int64", "uint8"], "uint64": [None, "int64"],
    "uint8": [None, "int64", "uint64"], "date32": [None, "ts_us"], "ts_us": [None, "date32"],
    "ts_ms_tz": [None], "float64": [None, "int32"], "string": [None, "large_string", "binary", "dict_string"],
    "large_string": [None, "string"], "binary": [None, "string"], "dict_string": [None, "string"],
}  # fmt: skip
AGGS = ["count(*)", "sum(v)", "count(v)", "min(v)", "max(v)", "sum(f)", "min(f)", "max(f)"]
DUCK_AGGS = "count(*), sum(p.v), count(p.v), min(p.v), max(p.v), sum(p.f), min(p.f), max(p.f)"
SQL_FROM = {
    "inner": "FROM p JOIN b ON p.k = b.k",
    "semi": "FROM p SEMI JOIN b ON p.k = b.k",
    "anti": "FROM p ANTI JOIN b ON p.k = b.k",
}


def _keys(name: str, ints: np.ndarray, null: np.ndarray) -> pa.Array:
    """Key column of type ``name`` from small integers (equal ints give equal keys across types)."""
    if name == "dict_string":
        return _keys("string", ints, null).dictionary_encode()
    t = KEY_TYPES[name]
    if name in ("string", "large_string", "binary"):
        vals = [f"key{x}" if x % 4 else f"a longer key to pass sixteen bytes {x}" for x in ints.tolist()]
        return pa.array([v.encode() for v in vals] if name == "binary" else vals, t, mask=null)
    if name == "date32":
        return pa.array(ints.astype(np.int32), pa.int32(), mask=null).view(t)
    if name == "ts_us":  # midnights, so dates and timestamps meet
        return pa.array(ints.astype(np.int64) * 86_400_000_000, pa.int64(), mask=null).view(t)
    if name == "ts_ms_tz":
        return pa.array(ints.astype(np.int64) * 1000 + 7, pa.int64(), mask=null).view(t)
    if name == "float64":
        return pa.array(ints.astype(np.float64), t, mask=null)
    return pa.array(ints, t, mask=null)


@st.composite
def shapes(draw):
    ptype = draw(st.sampled_from(sorted(KEY_TYPES)))
    btype = draw(st.sampled_from(PARTNERS[ptype])) or ptype
    return dict(
        seed=draw(st.integers(0, 2**32 - 1)),
        ptype=ptype,
        btype=btype,
        n_probe=draw(st.sampled_from([0, 1, 7, 50, 300, 2000])),
        n_build=draw(st.sampled_from([0, 1, 5, 40, 300])),
        key_range=draw(st.sampled_from([1, 4, 50, 1000, 100_000])),
        null_frac=draw(st.sampled_from([0.0, 0.1, 0.9])),
        how=draw(st.sampled_from(["inner", "semi", "anti"])),
        source=draw(st.sampled_from(["arrow", "parquet", "parquet_bloom", "columnar"])),
        build_source=draw(st.sampled_from(["arrow", "arrow", "parquet", "columnar"])),
        pushdown=draw(st.sampled_from(["on", "off", "adaptive"])),
        filter=draw(st.sampled_from(["register:2", "blocked:10", "ribbon:10", "cuckoo:12", None])),
        threads=draw(st.sampled_from([1, 2])),
        chunk_rows=draw(st.sampled_from([1, 16, 256, 65536])),
        aggregates=draw(st.booleans()),
        # a second key column (a multi-column key): probe type, build type, key range
        k2=draw(st.none() | st.sampled_from([("int64", "int32", 3), ("string", "large_string", 2), ("date32", "ts_us", 4),
                                             ("uint8", "int64", 2), ("float64", "float64", 3)])),
    )


def _data(s: dict) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(s["seed"])
    kr = s["key_range"]
    signed = s["ptype"] not in ("uint64", "uint8") and s["btype"] not in ("uint64", "uint8")
    lo = -kr // 2 if signed else 0
    if "uint8" in (s["ptype"], s["btype"]):
        lo, kr = 0, min(kr, 256)
    pk = rng.integers(lo, lo + kr, s["n_probe"])
    bk = rng.integers(lo, lo + kr, s["n_build"])
    pnull = rng.random(s["n_probe"]) < s["null_frac"]
    bnull = rng.random(s["n_build"]) < s["null_frac"]
    n = s["n_probe"]
    probe = pa.table({
        "rid": np.arange(n, dtype=np.int64),
        "k": _keys(s["ptype"], pk, pnull),
        "v": pa.array(rng.integers(-(2**40), 2**40, n), pa.int64(), mask=rng.random(n) < 0.2),
        "f": pa.array(np.where(rng.random(n) < 0.02, np.nan, rng.normal(size=n)), pa.float64(), mask=rng.random(n) < 0.2),
    })  # fmt: skip
    build = pa.table({"k": _keys(s["btype"], bk, bnull), "bid": np.arange(s["n_build"], dtype=np.int64)})
    if s["k2"] is not None:
        t2p, t2b, r2 = s["k2"]
        probe = probe.append_column("k2", _keys(t2p, rng.integers(0, r2, n), rng.random(n) < s["null_frac"] / 2))
        nb = s["n_build"]
        build = build.append_column("k2", _keys(t2b, rng.integers(0, r2, nb), rng.random(nb) < s["null_frac"] / 2))
    return probe, build


def _store(tmp_path, table: pa.Table, how: str, name: str, chunk_rows: int):
    """``table`` as the source ``how`` reads it, and the Arrow table that source holds."""
    if how == "arrow":
        return table, table
    plain = table.cast(pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
                                  for f in table.schema]))
    if how.startswith("parquet"):
        path = tmp_path / f"{name}.parquet"
        bloom = {"bloom_filter_options": {"k": {"ndv": 64, "fpp": 0.05}}} if how == "parquet_bloom" else {}
        pq.write_table(table, path, row_group_size=max(1, min(chunk_rows, 97)), **bloom)
        return path, pq.read_table(path)
    path = tmp_path / name
    columnar.write(path, plain, chunk_rows=max(1, min(chunk_rows, 97)))
    return path, columnar.read(path)


def _duck(sql: str, p: pa.Table, b: pa.Table):
    if "k2" in p.column_names:
        sql = sql.replace("ON p.k = b.k", "ON p.k = b.k AND p.k2 = b.k2")
    con = duckdb.connect()
    con.register("p", p)
    con.register("b", b)
    return con.sql(sql)


def check_shape(tmp_path, s: dict) -> None:
    probe, build = _data(s)
    psrc, pheld = _store(tmp_path, probe, s["source"], "p", s["chunk_rows"])
    bsrc, bheld = _store(tmp_path, build, s["build_source"], "b", s["chunk_rows"])
    on = "k" if s["k2"] is None else ["k", "k2"]
    kw = dict(on=on, how=s["how"], pushdown=s["pushdown"], filter=s["filter"], threads=s["threads"],
              chunk_rows=s["chunk_rows"])
    if s["aggregates"]:
        got = hash_join(psrc, bsrc, aggregates=AGGS, **kw)
        row = _duck(f"SELECT {DUCK_AGGS} {SQL_FROM[s['how']]}", pheld, bheld).fetchall()[0]
        for a, want in zip(AGGS, row):
            if isinstance(want, float) and got[a] is not None:
                same = math.isnan(want) and math.isnan(got[a]) or math.isclose(got[a], want, rel_tol=1e-9, abs_tol=1e-6)
                assert same, (a, got[a], want, s)
            else:
                assert got[a] == want, (a, got[a], want, s)
        return
    cols = ["rid", "bid"] if s["how"] == "inner" else ["rid"]
    got = hash_join(psrc, bsrc, columns=cols, **kw)
    sel = "p.rid, b.bid" if s["how"] == "inner" else "p.rid"
    want = sorted(_duck(f"SELECT {sel} {SQL_FROM[s['how']]}", pheld, bheld).fetchall())
    assert sorted(zip(*[got.column(c).to_pylist() for c in cols])) == want, s


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=40, **_SETTINGS)
@given(shapes())
def test_join_shapes_match_duckdb(tmp_path_factory, s):
    check_shape(tmp_path_factory.mktemp("shape"), s)


@pytest.mark.slow
@settings(max_examples=100, **_SETTINGS)
@given(shapes())
def test_join_shapes_match_duckdb_long(tmp_path_factory, s):
    check_shape(tmp_path_factory.mktemp("shape"), s)
