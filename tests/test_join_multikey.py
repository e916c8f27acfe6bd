"""Multi-column keys of fixed-width columns (integers, floats, dates, timestamps) against DuckDB:
hashed and compared as a typed tuple (one word per column, :mod:`bloomdb.join._join_kernels`),
with duplicates on both sides, nulls in any key column, every ``how``, every pushdown mode."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_join_fuzz import _SETTINGS, _keys, _store
from test_join_outer import JOIN_SQL, _same, _sorted

from bloomdb.join import _join_kernels as K
from bloomdb.join import hash_join
from bloomdb.join.build import BuildSide
from bloomdb.join.compare import key_domain
from bloomdb.join.keys import combine, from_arrow

duckdb = pytest.importorskip("duckdb")

HOWS = ["inner", "left", "right", "full", "semi", "anti"]
# (probe type, build type) of one key column: pairs that compare by value (DuckDB's rules)
COLUMN_TYPES = [("int64", "int64"), ("int64", "int32"), ("int32", "uint8"), ("uint64", "uint64"),
                ("date32", "ts_us"), ("float64", "float64"), ("ts_ms_tz", "ts_ms_tz")]


@st.composite
def multikey_shapes(draw):
    width = draw(st.sampled_from([2, 2, 3]))
    return dict(
        seed=draw(st.integers(0, 2**32 - 1)),
        types=[draw(st.sampled_from(COLUMN_TYPES)) for _ in range(width)],
        ranges=[draw(st.sampled_from([1, 2, 5, 40])) for _ in range(width)],
        n_probe=draw(st.sampled_from([0, 1, 9, 200, 3000])),
        n_build=draw(st.sampled_from([0, 1, 6, 80, 500])),
        null_frac=draw(st.sampled_from([0.0, 0.1, 0.5])),
        how=draw(st.sampled_from(HOWS)),
        source=draw(st.sampled_from(["arrow", "parquet", "columnar"])),
        pushdown=draw(st.sampled_from(["on", "off", "adaptive"])),
        filter=draw(st.sampled_from(["register:2", "blocked:10", None])),
        threads=draw(st.sampled_from([1, 2])),
        chunk_rows=draw(st.sampled_from([7, 256, 65536])),
        aggregates=draw(st.booleans()),
    )


def _tables(s: dict) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(s["seed"])
    cols_p, cols_b = {}, {}
    for j, ((tp, tb), r) in enumerate(zip(s["types"], s["ranges"])):
        for cols, t, n in ((cols_p, tp, s["n_probe"]), (cols_b, tb, s["n_build"])):
            cols[f"k{j}"] = _keys(t, rng.integers(0, r, n), rng.random(n) < s["null_frac"] / len(s["types"]))
    n = s["n_probe"]
    probe = pa.table({**cols_p, "rid": np.arange(n, dtype=np.int64),
                      "v": pa.array(rng.integers(-1000, 1000, n), pa.int64(), mask=rng.random(n) < 0.2)})
    build = pa.table({**cols_b, "bid": np.arange(s["n_build"], dtype=np.int64)})
    return probe, build


def check(tmp_path, s: dict) -> None:
    probe, build = _tables(s)
    psrc, pheld = _store(tmp_path, probe, s["source"], "p", s["chunk_rows"])
    keys = [f"k{j}" for j in range(len(s["types"]))]
    how = s["how"]
    kw = dict(on=keys, how=how, pushdown=s["pushdown"], filter=s["filter"], threads=s["threads"],
              chunk_rows=s["chunk_rows"])
    con = duckdb.connect()
    con.register("p", pheld)
    con.register("b", build)
    on = " AND ".join(f"p.{k} = b.{k}" for k in keys)
    both = how in ("inner", "left", "right", "full")
    if s["aggregates"]:
        aggs = ["count(*)", "sum(v)", "count(v)"] + (["sum(bid)", "count(bid)"] if both else [])
        got = hash_join(psrc, build, aggregates=aggs, **kw)
        sel = "count(*), sum(p.v), count(p.v)" + (", sum(b.bid), count(b.bid)" if both else "")
        (want,) = con.sql(f"SELECT {sel} FROM p {JOIN_SQL[how]} b ON {on}").fetchall()
        assert all(_same(got[a], w) for a, w in zip(aggs, want)), (got, want, s)
        return
    cols = ["rid", "bid"] if both else ["rid"]
    got = hash_join(psrc, build, columns=cols, **kw)
    want = con.sql(f"SELECT {', '.join(('p.' if c == 'rid' else 'b.') + c for c in cols)} "
                   f"FROM p {JOIN_SQL[how]} b ON {on}").fetchall()
    assert _sorted(zip(*[got.column(c).to_pylist() for c in cols])) == _sorted(want), s


@settings(max_examples=50, **_SETTINGS)
@given(multikey_shapes())
def test_fixed_width_multi_column_keys_match_duckdb(tmp_path_factory, s):
    check(tmp_path_factory.mktemp("multikey"), s)


@pytest.mark.slow
@settings(max_examples=120, **_SETTINGS)
@given(multikey_shapes())
def test_fixed_width_multi_column_keys_match_duckdb_long(tmp_path_factory, s):
    check(tmp_path_factory.mktemp("multikey"), s)


def test_fixed_width_keys_are_a_typed_tuple_not_bytes():
    """Integer and date key columns become one word per column (hashed in a kernel, compared as
    words); a string column among them keeps the byte-string path."""
    build = pa.table({"a": pa.array([1, 2, None, 2], pa.int64()), "b": pa.array([5, 6, 7, 6], pa.int32())})
    domains = [key_domain("a", pa.int64(), "a", pa.int64()), key_domain("b", pa.int32(), "b", pa.int32())]
    keys = combine([from_arrow(build[c], d) for c, d in zip("ab", domains)])
    assert keys.words is not None and keys.words.shape == (2, 4) and keys.data is None
    assert keys.valid.tolist() == [True, True, False, True]
    bs = BuildSide(build, "a", domains[0], "blocked:10", combined=keys)
    assert bs.kind == "words" and bs.groups == 2  # (1, 5) and (2, 6): duplicates share a group
    mixed = pa.table({"a": [1], "s": ["x"]})
    sd = key_domain("s", pa.string(), "s", pa.string())
    assert combine([from_arrow(mixed["a"], domains[0]), from_arrow(mixed["s"], sd)]).words is None


def test_keys_whose_hashes_collide_are_compared_by_value():
    """(0, 0) and (1, -C) fold to the same word, so they share a hash: the table must still tell
    them apart (the filter lets both through)."""
    c = 0x9E3779B97F4A7C15
    minus_c = np.array([(1 << 64) - c], np.uint64).view(np.int64)[0]
    words = np.array([[0, 1], [0, (1 << 64) - c]], np.uint64)
    h = np.empty(2, np.uint64)
    K.hash_words(words, h)
    assert h[0] == h[1]
    probe = pa.table({"a": pa.array([0, 1, 1], pa.int64()), "b": pa.array([0, 0, minus_c], pa.int64())})
    # (5, 0) widens the build keys' ranges past 2^63 combined: the words table, not a packed key
    build = pa.table({"a": pa.array([1, 5], pa.int64()), "b": pa.array([minus_c, 0], pa.int64()), "w": [9, 8]})
    for pushdown in ("on", "off"):
        got = hash_join(probe, build, on=["a", "b"], pushdown=pushdown, filter="blocked:10")
        assert got.to_pydict() == {"a": [1], "b": [minus_c], "w": [9]}
        assert hash_join(probe, build, on=["a", "b"], how="anti", pushdown=pushdown).num_rows == 2


def test_three_column_key_with_float_and_date():
    probe = pa.table({"x": pa.array([1.0, -0.0, float("nan"), 2.0]), "d": pa.array([0, 1, 2, 3], pa.int32()).view(
        pa.date32()), "i": pa.array([1, 2, 3, None], pa.int16())})
    build = pa.table({"x": pa.array([1.0, 0.0, float("nan"), 2.0]), "d": pa.array([0, 86_400, 172_800, 259_200],
                                                                                     pa.int64()).view(pa.timestamp("s")),
                      "i": pa.array([1, 2, 3, None], pa.int64())})
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    for how in HOWS:
        got = hash_join(probe, build, on=["x", "d", "i"], how=how, aggregates=["count(*)"])
        (want,) = con.sql(f"SELECT count(*) FROM p {JOIN_SQL[how]} b ON p.x = b.x AND p.d = b.d AND p.i = b.i"
                          ).fetchall()
        assert got["count(*)"] == want[0], how


# ---- rows output with fan-out: build columns of every type copied by key group ------------------


def _typed_columns(rng, n: int) -> dict[str, pa.Array]:
    import datetime
    import decimal

    null = lambda: rng.random(n) < 0.2  # noqa: E731
    ints = rng.integers(-100, 100, n)
    return {
        "i8": pa.array(ints.astype(np.int8), mask=null()),
        "u16": pa.array(np.abs(ints).astype(np.uint16)),
        "f16": pa.array(ints.astype(np.float16), mask=null()),
        "f32": pa.array(ints.astype(np.float32) / 3, mask=null()),
        "d64": pa.array(ints.astype(np.int64) * 86_400_000, pa.int64(), mask=null()).view(pa.date64()),
        "t64": pa.array(np.abs(ints).astype(np.int64) * 1000, pa.time64("us")),
        "dur": pa.array(ints.astype(np.int64), pa.duration("ms"), mask=null()),
        "tz": pa.array(ints.astype(np.int64), pa.timestamp("s", tz="Europe/Paris"), mask=null()),
        "dec": pa.array([decimal.Decimal(int(x)).scaleb(-4) * 7 for x in ints], pa.decimal128(12, 4)),
        "s": pa.array([f"s{x}" for x in ints], mask=null()),
        "b": pa.array(ints > 0, mask=null()),
        "dict": pa.array([f"d{x % 3}" for x in ints]).dictionary_encode(),
        "day": pa.array([datetime.date(2020, 1, 1 + int(x) % 28) for x in np.abs(ints)]),
    }


@pytest.mark.parametrize("how", ["inner", "left", "right", "full"])
def test_fan_out_rows_of_every_column_type_equal_a_plain_model(how):
    rng = np.random.default_rng(5)
    probe = pa.table({"k": pa.array(rng.integers(0, 30, 400), mask=rng.random(400) < 0.05), "rid": np.arange(400),
                      **{f"p_{c}": a for c, a in _typed_columns(rng, 400).items()}})
    build = pa.table({"k": pa.array(rng.integers(0, 40, 150), mask=rng.random(150) < 0.05), "bid": np.arange(150),
                      **_typed_columns(rng, 150)})
    got = hash_join(probe, build, on="k", how=how, chunk_rows=64)
    pk, bk = probe.column("k").to_pylist(), build.column("k").to_pylist()
    prow, brow = probe.to_pylist(), build.to_pylist()
    by_key: dict = {}
    for j, k in enumerate(bk):
        if k is not None:
            by_key.setdefault(k, []).append(j)
    want, seen = [], set()
    for i, k in enumerate(pk):
        hits = by_key.get(k, []) if k is not None else []
        seen.update(hits)
        for j in hits or ([None] if how in ("left", "full") else []):
            want.append((i, j))
    if how in ("right", "full"):
        want += [(None, j) for j in range(150) if j not in seen]
    bcols = [c for c in build.column_names if c != "k"]
    rows = got.to_pylist()
    assert len(rows) == len(want)
    model = []
    for i, j in want:
        r = {c: None for c in probe.column_names} if i is None else dict(prow[i])
        if i is None:
            r["k"] = brow[j]["k"]
        r.update({c: (None if j is None else brow[j][c]) for c in bcols})
        model.append(r)
    key = lambda r: (r["rid"] is None, r["rid"] or 0, r["bid"] is None, r["bid"] or 0)  # noqa: E731
    assert sorted(rows, key=key) == sorted(model, key=key)
    assert got.schema.field("f16").type == pa.float16() and got.schema.field("dec").type == pa.decimal128(12, 4)
