"""``parquet.read_filters`` gives filters that take the column's own values: a value the column
holds is never reported absent, whatever its physical type (INT32 hashes 4 bytes, FLOAT 4, unsigned
columns their two's-complement bits, dates their days) -- checked on pyarrow- and DuckDB-written
files with every value of the column, one by one and as batches."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb import errors, parquet

N = 300
TABLE = pa.table({
    "i8": pa.array(np.arange(N) % 200 - 100, pa.int8()), "u16": pa.array(np.arange(N) * 211, pa.uint16()),
    "i32": pa.array(np.arange(N) * 7919 - 2**30, pa.int32()), "u32": pa.array(2**32 - 1 - np.arange(N) * 7, pa.uint32()),
    "i64": pa.array(np.arange(N) * 104729, pa.int64()), "u64": pa.array(2**64 - 1 - np.arange(N, dtype=np.uint64), pa.uint64()),
    "f32": pa.array(np.arange(N) / 7, pa.float32()), "f64": pa.array(np.arange(N) / 7, pa.float64()),
    "d": pa.array(np.arange(N) * 13, pa.int32()).cast(pa.date32()),
    "ts": pa.array(np.arange(N) * 3_600_000, pa.int64()).cast(pa.timestamp("ms")),
    "s": pa.array([f"v{i}" for i in range(N)]), "b": pa.array([f"b{i}".encode() for i in range(N)]),
})  # fmt: skip


def _check(path, table):
    checked = 0
    for name in table.column_names:
        fs = [f for f in parquet.read_filters(path, name) if f is not None]
        col = table.column(name).combine_chunks()
        for f in fs:
            assert f.might_contain_many(col).all(), name
            assert f.might_contain_many(col.to_pylist()).all(), name
            if not pa.types.is_temporal(col.type):
                assert f.might_contain_many(col.to_numpy(zero_copy_only=False)).all(), name
            assert all(f.might_contain(v) for v in col.to_pylist()[:40]), name
            assert f.copy().might_contain_many(col).all(), name
            assert pickle.loads(pickle.dumps(f, protocol=5)).might_contain_many(col).all(), name
            checked += 1
    return checked


def test_pyarrow_files_never_report_a_held_value_absent(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(TABLE, path, bloom_filter_options={c: {"ndv": N, "fpp": 0.01} for c in TABLE.column_names})
    assert _check(path, TABLE) == len(TABLE.column_names)


def test_duckdb_files_never_report_a_held_value_absent(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "d.parquet"
    con = duckdb.connect()
    con.register("t", pa.Table.from_batches(TABLE.to_batches() * 8))  # repeated: dictionary chunks get filters
    con.execute(f"COPY (SELECT * FROM t) TO '{path}' (FORMAT parquet)")
    if _check(path, TABLE) == 0:
        pytest.skip("this DuckDB wrote no Bloom filters")


def test_values_the_column_cannot_hold_are_absent_and_bad_adds_change_nothing(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(TABLE, path, bloom_filter_options={"i32": True, "u32": True})
    f32 = parquet.read_filters(path, "i32")[0]
    assert f32.might_contain_many([2**40, -(2**31) - 1]).tolist() == [False, False]
    u32 = parquet.read_filters(path, "u32")[0]
    assert u32.might_contain(2**32 - 1) and not u32.might_contain(-1)
    before = f32.to_parquet_bitset()
    with pytest.raises(errors.InvalidArgument):
        f32.add_many([5, 2**40])
    with pytest.raises(errors.InvalidArgument):
        f32.might_contain_many(["a"])
    assert f32.to_parquet_bitset() == before
    f32.add(123_456)
    assert f32.might_contain(123_456) and f32.might_contain_many(np.array([123_456], np.int32)).all()
