"""bloomdb.columnar: round trips of every supported type, encodings, random access, damage."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb import columnar
from bloomdb.errors import CorruptionError, InvalidArgument


def _mixed_table(n: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.1
    words = np.array(["apple", "pear", "", "fig", "ünïcode", "kiwi" * 20])
    return pa.table({
        "i64": pa.array(rng.integers(-(2**62), 2**62, n), mask=nulls),
        "narrow": pa.array(rng.integers(1000, 1010, n)),
        "const": pa.array(np.full(n, 7, np.int32)),
        "u64": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1, pa.uint64()),
        "i8": pa.array(rng.integers(-128, 128, n).astype(np.int8), mask=nulls),
        "u16": pa.array(rng.integers(0, 65536, n).astype(np.uint16)),
        "b": pa.array(rng.random(n) < 0.5, mask=~nulls & (rng.random(n) < 0.05)),
        "f64": pa.array(rng.normal(size=n), mask=nulls),
        "f32": pa.array(rng.normal(size=n).astype(np.float32)),
        "s": pa.array(words[rng.integers(0, len(words), n)], mask=nulls),
        "ls": pa.array(words[rng.integers(0, 3, n)], pa.large_string()),
        "bin": pa.array([bytes([i % 256, 0, 255]) for i in range(n)], pa.binary()),
        "d": pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.int32()).view(pa.date32()),
        "ts": pa.array(rng.integers(0, 2**50, n), pa.int64()).view(pa.timestamp("us", tz="UTC")),
        "allnull": pa.array([None] * n, pa.int64()),
        "allnull_s": pa.array([None] * n, pa.string()),
    })  # fmt: skip


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_round_trip_every_type(tmp_path, compression):
    t = _mixed_table(3000)
    out = columnar.write(tmp_path / "t", t, chunk_rows=1000, compression=compression)
    assert len(out.row_groups) == 3
    back = columnar.read(tmp_path / "t")
    assert back.schema == t.schema
    assert back.equals(t)
    assert columnar.read(tmp_path / "t", columns=["s", "i64"]).equals(t.select(["s", "i64"]))


def test_inputs_pandas_polars_dict_and_ragged_chunks(tmp_path):
    import pandas as pd
    import polars as pl

    d = {"k": np.arange(10, dtype=np.int64), "v": np.linspace(0, 1, 10)}
    ref = pa.table(d)
    for i, src in enumerate([d, pd.DataFrame(d), pl.DataFrame(d)]):
        columnar.write(tmp_path / f"t{i}", src, chunk_rows=3)
        assert columnar.read(tmp_path / f"t{i}").equals(ref)
    assert [g.num_rows for g in columnar.open(tmp_path / "t0").row_groups] == [3, 3, 3, 1]


def test_random_access_matches_full_decode(tmp_path):
    t = _mixed_table(5000, seed=3)
    tab = columnar.write(tmp_path / "t", t, chunk_rows=5000)
    pos = np.random.default_rng(0).integers(0, 5000, 700).astype(np.int64)
    for name in t.column_names:
        ch = tab.chunk(0, name)
        assert ch.arrow(pos).equals(t[name].combine_chunks().take(pa.array(pos))), name


def test_encodings_and_stats(tmp_path):
    t = _mixed_table(2000, seed=5)
    tab = columnar.write(tmp_path / "t", t, chunk_rows=2000)
    info = {n: tab.row_groups[0].chunks[i] for i, n in enumerate(tab.names)}
    assert info["i64"].encoding == "for-bitpack" and info["f64"].encoding == "plain"
    assert info["s"].encoding == "dict-bitpack"
    assert tab.chunk(0, "narrow").width == 4  # 1000..1009: 10 values -> 4 bits
    assert tab.chunk(0, "const").width == 0
    assert tab.chunk(0, "s").width == 3  # 6 distinct words -> 3-bit codes
    live = t["i64"].drop_null().to_numpy()
    assert info["i64"].min == live.min() and info["i64"].max == live.max()
    assert info["i64"].null_count == t["i64"].null_count
    assert info["allnull"].min is None and info["s"].min == min(t["s"].drop_null().to_pylist())
    # bit-packing really packs: 2000 4-bit values take ~1 KB
    assert info["narrow"].length < 48 + 2000 * 4 // 8 + 16


def test_import_parquet(tmp_path):
    t = _mixed_table(2500, seed=7).drop_columns(["ts"])
    pq.write_table(t, tmp_path / "x.parquet", row_group_size=700)
    columnar.import_parquet(tmp_path / "x.parquet", tmp_path / "t", chunk_rows=1000)
    assert columnar.read(tmp_path / "t").equals(t)


def test_bad_inputs(tmp_path):
    with pytest.raises(InvalidArgument):
        columnar.write(tmp_path / "a", {"x": pa.array([[1], [2]])})
    with pytest.raises(InvalidArgument):
        columnar.write(tmp_path / "b", [1, 2, 3])
    with pytest.raises(InvalidArgument):
        columnar.write(tmp_path / "c", {"x": np.arange(3)}, chunk_rows=0)
    columnar.write(tmp_path / "d", {"x": np.arange(3)})
    with pytest.raises(InvalidArgument):
        columnar.write(tmp_path / "d", {"x": np.arange(3)})
    with pytest.raises(InvalidArgument):
        columnar.read(tmp_path / "nowhere")
    with pytest.raises(InvalidArgument):
        columnar.read(tmp_path / "d", columns=["nope"])


def test_empty_table(tmp_path):
    t = pa.table({"k": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    columnar.write(tmp_path / "e", t)
    assert columnar.read(tmp_path / "e").equals(t)


def test_damage_is_detected(tmp_path):
    tab = columnar.write(tmp_path / "t", {"x": np.arange(1000)}, chunk_rows=1000)
    p = os.path.join(tab.path, tab.row_groups[0].file)
    raw = bytearray(open(p, "rb").read())
    raw[60] ^= 0xFF
    open(p, "wb").write(bytes(raw))
    with pytest.raises(CorruptionError):
        columnar.read(tmp_path / "t")
    raw[60] ^= 0xFF
    raw[0:4] = b"XXXX"
    open(p, "wb").write(bytes(raw))
    with pytest.raises(CorruptionError):
        columnar.read(tmp_path / "t")
    m = os.path.join(tab.path, "_table.json")
    open(m, "w").write("{not json")
    with pytest.raises(CorruptionError):
        columnar.read(tmp_path / "t")
    open(m, "w").write(json.dumps({"format": "bloomdb-columnar", "version": 99}))
    with pytest.raises(CorruptionError):
        columnar.read(tmp_path / "t")


from hypothesis import given
from hypothesis import strategies as st


@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.none(), max_size=300), st.integers(1, 97))
def test_int64_round_trip_any_values(tmp_path_factory, values, chunk_rows):
    d = tmp_path_factory.mktemp("h")
    t = pa.table({"x": pa.array(values, pa.int64())})
    tab = columnar.write(d / "t", t, chunk_rows=chunk_rows)
    assert columnar.read(d / "t").equals(t)
    if values:
        pos = np.arange(len(values), dtype=np.int64)[::-1].copy()
        got = [tab.chunk(g, "x") for g in range(len(tab.row_groups))]
        assert sum(c.num_rows for c in got) == len(values)
        first = got[0]
        p = pos[pos < first.num_rows]
        assert first.arrow(p).to_pylist() == [values[i] for i in p]


@given(st.integers(0, 64), st.integers(0, 200), st.randoms(use_true_random=False))
def test_bitpacking_every_width(width, n, rnd):
    from bloomdb.columnar import _kernels as K

    hi = (1 << width) - 1
    vals = np.array([rnd.randint(0, hi) for _ in range(n)], dtype=np.uint64)
    words = np.zeros(K.packed_words(n, width), np.uint64)
    K.pack(vals, width, words)
    ref = np.uint64(rnd.randint(0, 2**64 - 1))
    out = np.empty(n, np.uint64)
    K.unpack_all(words, width, ref, out)
    assert np.array_equal(out, vals + ref)
    pos = np.array([rnd.randrange(n) for _ in range(min(n, 50))], dtype=np.int64)
    at = np.empty(pos.shape[0], np.uint64)
    K.unpack_at(words, width, ref, pos, at)
    assert np.array_equal(at, vals[pos] + ref)
