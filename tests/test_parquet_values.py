"""bloomdb.parquet.row_groups_that_may_contain on every column type writers give Bloom filters:
values are hashed as the column stores them (unsigned ones as their two's-complement bits), and a
row group holding a value is never ruled out -- ground truth is pyarrow reading the row group."""

from __future__ import annotations

import datetime
import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb import errors, parquet

ROWS, GROUPS = 300, 3


def _ints(rng, t: pa.DataType, n: int) -> np.ndarray:
    info = np.iinfo(t.to_pandas_dtype())
    v = rng.integers(info.min, info.max, n, dtype=t.to_pandas_dtype(), endpoint=True)
    v[:4] = [info.min, info.max, info.max // 2 + 1, 0]  # the ends and the signed/unsigned boundary
    return v


def _typed_table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = ROWS * GROUPS
    cols = {}
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
        cols[str(t)] = pa.array(_ints(rng, t, n), t)
    cols["float"] = pa.array(np.r_[[-0.0, 0.0, np.inf], rng.normal(size=n - 3)].astype(np.float32))
    cols["double"] = pa.array(np.r_[[0.0, -0.0, -np.inf], rng.normal(size=n - 3)])
    cols["date32"] = pa.array(rng.integers(-100_000, 100_000, n).astype(np.int32), pa.date32())
    cols["ts_ms"] = pa.array(rng.integers(-(10**15), 10**15, n), pa.timestamp("ms"))
    cols["ts_us_utc"] = pa.array(rng.integers(-(10**17), 10**17, n), pa.timestamp("us", tz="UTC"))
    cols["string"] = pa.array([f"s{x}" for x in rng.integers(0, 10**9, n)])
    cols["binary"] = pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 12, n)],
                              pa.binary())
    cols["fixed"] = pa.array([bytes(rng.integers(0, 256, 4, dtype=np.uint8)) for _ in range(n)], pa.binary(4))
    cols["decimal"] = pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-99999, 99999, n)],
                               pa.decimal128(7, 2))
    return pa.table(cols)


def _pylist(arr) -> list:
    """Values to compare; temporal ones as their integer ticks (far dates have no datetime)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_temporal(arr.type):
        arr = arr.view(pa.int32() if arr.type.bit_width == 32 else pa.int64())
    return arr.to_pylist()


def _present(path, column: str) -> list[set]:
    pf = pq.ParquetFile(path)
    return [set(_pylist(pf.read_row_group(g, columns=[column]).column(0))) for g in range(pf.metadata.num_row_groups)]


def _never_false_where_present(path, column: str, probes: pa.Array, as_given=None) -> np.ndarray:
    got = parquet.row_groups_that_may_contain(path, column, probes if as_given is None else as_given)
    present = _present(path, column)
    assert got.shape == (len(probes), len(present))
    for i, v in enumerate(_pylist(probes)):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        for g, vals in enumerate(present):
            if v in vals:
                assert got[i, g], (column, v, g)
    return got


def _absent_probes(rng, t: pa.DataType, n: int = 200) -> pa.Array:
    if pa.types.is_integer(t):
        return pa.array(_ints(rng, t, n), t)
    if pa.types.is_floating(t):
        return pa.array(rng.normal(size=n).astype(t.to_pandas_dtype()), t)
    if pa.types.is_date(t):
        return pa.array(rng.integers(-100_000, 100_000, n).astype(np.int32), t)
    if pa.types.is_timestamp(t):
        return pa.array(rng.integers(-(10**15), 10**15, n), t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array([bytes(rng.integers(0, 256, t.byte_width, dtype=np.uint8)) for _ in range(n)], t)
    if pa.types.is_string(t):
        return pa.array([f"s{x}" for x in rng.integers(0, 10**9, n)], t)
    return pa.array([bytes(rng.integers(0, 256, 6, dtype=np.uint8)) for _ in range(n)], t)


def _check_every_column(path, table: pa.Table, expect_filters: bool) -> None:
    rng = np.random.default_rng(1)
    for name in table.column_names:
        col = pq.read_table(path, columns=[name]).column(0).combine_chunks()
        got = _never_false_where_present(path, name, col)
        if pa.types.is_decimal(col.type):
            assert got.all()  # declined: no proof of absence
            continue
        absent = _absent_probes(rng, col.type)
        other = _never_false_where_present(path, name, absent)
        if expect_filters and len(set(_pylist(absent)) & set(_pylist(col))) < 5:
            assert other.mean() < 0.2, name  # the filters (and min/max) do rule values out
        if pa.types.is_integer(col.type):  # the same values as Python ints and as numpy
            _never_false_where_present(path, name, col, as_given=col.to_pylist())
            _never_false_where_present(path, name, col, as_given=col.to_numpy())


def test_pyarrow_written_every_type(tmp_path):
    table = _typed_table(0)
    path = tmp_path / "types.parquet"
    pq.write_table(table, path, row_group_size=ROWS,
                   bloom_filter_options={c: {"ndv": ROWS, "fpp": 0.01} for c in table.column_names})
    filters = {c: parquet.read_filters(path, c) for c in table.column_names}
    assert all(f is not None for c, fs in filters.items() if c != "decimal" for f in fs)
    _check_every_column(path, table, expect_filters=True)


def test_duckdb_written_every_type(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "duck.parquet"
    # row groups of 2048 (DuckDB's smallest); each value 16 times, so chunks are dictionary
    # encoded, which is when DuckDB writes Bloom filters
    duckdb.connect().execute(f"""COPY (SELECT (j % 200)::UTINYINT u8, (j * 61 % 65536)::USMALLINT u16,
        (4294967295 - j * 7919)::UINTEGER u32, (18446744073709551615 - j * 104729)::UBIGINT u64,
        (j % 200 - 100)::TINYINT i8, (j * 7919 - 2147483648)::INTEGER i32, (j * 104729 - 9223372036854775807)::BIGINT i64,
        (j / 7)::FLOAT f, (j / 7)::DOUBLE d, DATE '1900-01-01' + (j * 13)::INTEGER dt,
        TIMESTAMP '2001-01-01' + INTERVAL (j * 3601) SECOND ts, 'v' || (j * 31) s, ('b' || j)::BLOB bl,
        (j / 3)::DECIMAL(10, 2) dec FROM (SELECT i // 16 AS j FROM range(6144) t(i)))
        TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 2048)""")
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 3 and md.row_group(0).column(2).bloom_filter_offset
    assert md.schema.column(2).physical_type == "INT32"  # uint32 stored as INT32 bits
    _check_every_column(path, pq.read_table(path), expect_filters=True)


def test_uint32_values_above_2_31(tmp_path):
    """The issue's case: a uint32 key >= 2**31 is found (not an error), and values the column
    cannot hold at all are in no row group."""
    keys = np.array([1, 2**31, 2**31 + 5, 2**32 - 1, 5, 6], np.uint32)
    path = tmp_path / "u32.parquet"
    pq.write_table(pa.table({"k": keys}), path, row_group_size=2, bloom_filter_options={"k": True})
    got = parquet.row_groups_that_may_contain(path, "k", [2**31, 2**32 - 1, 2**31 + 5])
    assert got.tolist() == [[True, False, False], [False, True, False], [False, True, False]]
    assert not parquet.row_groups_that_may_contain(path, "k", [2**40, -1, 2**64 - 1, -(2**63), 2**70]).any()
    mixed = parquet.row_groups_that_may_contain(path, "k", [-1, 2**63, 2**31])  # one batch, both ends
    assert mixed.tolist() == [[False] * 3, [False] * 3, [True, False, False]]
    got = parquet.row_groups_that_may_contain(path, "k", pa.array([2**31, None, 6], pa.int64()))
    assert got.tolist() == [[True, False, False], [False] * 3, [False, False, True]]  # a null is nowhere


def test_unsigned_statistics_prune_as_unsigned(tmp_path):
    """No filters: min/max alone, in the column's own order (uint64 2**63 is above 1, not below)."""
    path = tmp_path / "stats.parquet"
    for t, big in ((pa.uint32(), 2**31), (pa.uint64(), 2**63)):
        pq.write_table(pa.table({"k": pa.array([big + 5, big + 10, 1, 2], t)}), path, row_group_size=2)
        got = parquet.row_groups_that_may_contain(path, "k", [big + 7, 1, big + 11, 3])
        assert got.tolist() == [[True, False], [False, True], [False, False], [False, False]]


def test_temporal_values_converted_exactly(tmp_path):
    path = tmp_path / "t.parquet"
    ms = np.array([1_000, 2_000, 1_700_000_000_123], np.int64)
    pq.write_table(pa.table({"ts": pa.array(ms, pa.timestamp("ms")), "d": pa.array([0, 1, 19000], pa.date32())}),
                   path, bloom_filter_options={"ts": True, "d": True})
    probes = pa.array([1, 2, 3], pa.timestamp("s"))  # 1 s == 1000 ms
    assert parquet.row_groups_that_may_contain(path, "ts", probes)[:, 0].tolist() == [True, True, False]
    ns = pa.array([1_700_000_000_123_000_000, 1_700_000_000_123_000_001], pa.timestamp("ns"))
    assert parquet.row_groups_that_may_contain(path, "ts", ns)[:, 0].tolist() == [True, False]  # not whole ms
    assert parquet.row_groups_that_may_contain(path, "ts", [1_000])[:, 0].tolist() == [True]  # physical ticks
    assert parquet.row_groups_that_may_contain(path, "ts", pa.array([1], pa.timestamp("s", tz="UTC"))).all()  # declined
    days = pa.array([datetime.date(1970, 1, 2), datetime.date(2022, 1, 8), datetime.date(2000, 1, 1)])
    assert parquet.row_groups_that_may_contain(path, "d", days)[:, 0].tolist() == [True, True, False]
    midnight = pa.array([86_400, 86_401], pa.timestamp("s"))  # day 1 at midnight, and a second later
    assert parquet.row_groups_that_may_contain(path, "d", midnight)[:, 0].tolist() == [True, False]


def test_bad_value_batches(tmp_path):
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.uint32()), "s": ["a", "b"]}), path,
                   bloom_filter_options={"k": True, "s": True})
    with pytest.raises(errors.InvalidArgument):
        parquet.row_groups_that_may_contain(path, "k", 5)
    with pytest.raises(errors.InvalidArgument):
        parquet.row_groups_that_may_contain(path, "k", ["a"])
    with pytest.raises(errors.InvalidArgument):
        parquet.row_groups_that_may_contain(path, "s", [1])
    with pytest.raises(errors.InvalidArgument):
        parquet.row_groups_that_may_contain(tmp_path / "nothing.parquet", "k", [1])
    assert parquet.row_groups_that_may_contain(path, "k", []).shape == (0, 1)


@pytest.mark.parametrize("build_type", [pa.uint32(), pa.int64(), pa.uint64()])
def test_join_keeps_uint32_keys_above_2_31(tmp_path, build_type):
    """The join's row-group pruning must not drop row groups holding uint32 keys >= 2**31
    (they were filtered out of the Bloom probe, so their row groups were skipped)."""
    duckdb = pytest.importorskip("duckdb")
    from bloomdb.join import hash_join

    rng = np.random.default_rng(9)
    per, groups = 500, 6
    keys = np.concatenate([rng.choice(2**32, per, replace=False) for _ in range(groups)]).astype(np.uint32)
    keys[::per] = 0
    keys[per - 1 :: per] = 2**32 - 1  # every row group spans the whole range: min/max prune nothing
    probe = pa.table({"k": pa.array(keys), "v": np.arange(keys.size, dtype=np.int64)})
    path = tmp_path / "p.parquet"
    pq.write_table(probe, path, row_group_size=per, bloom_filter_options={"k": {"ndv": per, "fpp": 0.01}})
    big = keys[keys >= 2**31]
    first = keys[:per]
    small = first[(first > 0) & (first < 2**31)][:5]  # keys below 2**31, of row group 0 only
    wanted = np.concatenate([rng.choice(big, 20, replace=False), small]).astype(np.int64)
    build = pa.table({"k": pa.array(wanted, build_type)})
    res, st = hash_join(path, build, on="k", columns=["v"], explain=True)
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    want = sorted(r[0] for r in con.execute("SELECT p.v FROM p JOIN b ON p.k = b.k").fetchall())
    assert len(want) >= 25
    assert sorted(res.column("v").to_pylist()) == want
    assert st.chunks_skipped_minmax == 0
