"""The Parquet page reader's byte strings, DELTA encodings and temporal types (ParquetColumns.read_arrow)
against pyarrow's own reading, values and types alike."""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bloomdb.errors import CorruptionError
from bloomdb.parquet import ParquetColumns

from parquet_helpers import check_arrow, flipped_copy

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "vectors", "parquet")


def mixed_table(n: int, seed: int, nulls: bool = True) -> pa.Table:
    """Strings (low and high cardinality, empty ones, multi-byte UTF-8), binary, fixed-size
    binary, UUID, dates, times and timestamps of every unit, and integers."""
    rng = np.random.default_rng(seed)
    words = np.array([f"wörd{i}" * (i % 6) for i in range(300)], dtype=object)

    def mask():
        return rng.random(n) < 0.2 if nulls else None

    ticks = rng.integers(-10**12, 10**12, n)
    return pa.table({
        "s": pa.array(words[rng.integers(0, 300, n)], pa.string(), mask=mask()),
        "u": pa.array([f"k{v:08d}" for v in rng.integers(0, 10**8, n)], pa.string()),
        "b": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 20, n)],
                      pa.binary(), mask=mask()),
        "ls": pa.array(words[rng.integers(0, 300, n)], pa.large_string()),
        "fx": pa.array([bytes(rng.integers(0, 4, 5, dtype=np.uint8)) for _ in range(n)], pa.binary(5), mask=mask()),
        "uuid": pa.ExtensionArray.from_storage(
            pa.uuid(), pa.array([bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(n)], pa.binary(16))),
        "d": pa.array(rng.integers(-40000, 40000, n).astype(np.int32), pa.date32(), mask=mask()),
        "t32": pa.array(rng.integers(0, 86_400_000, n).astype(np.int32), pa.time32("ms")),
        "t64": pa.array(rng.integers(0, 86_400 * 10**6, n), pa.time64("us"), mask=mask()),
        "ts_ms": pa.array(ticks, pa.timestamp("ms")),
        "ts_us": pa.array(ticks, pa.timestamp("us", tz="UTC"), mask=mask()),
        "ts_ns": pa.array(ticks, pa.timestamp("ns", tz="Asia/Kolkata")),
        "i": pa.array(rng.integers(-(1 << 63), (1 << 63) - 1, n, endpoint=True), mask=mask()),
        "j": pa.array(rng.integers(-100, 100, n).astype(np.int32)),
    })


ENCODINGS = {
    "dictionary": dict(),
    "plain": dict(use_dictionary=False),
    "delta": dict(use_dictionary=False, column_encoding={
        "s": "DELTA_BYTE_ARRAY", "u": "DELTA_BYTE_ARRAY", "b": "DELTA_LENGTH_BYTE_ARRAY",
        "ls": "DELTA_LENGTH_BYTE_ARRAY", "fx": "DELTA_BYTE_ARRAY", "uuid": "DELTA_BYTE_ARRAY",
        "d": "DELTA_BINARY_PACKED", "t32": "DELTA_BINARY_PACKED", "t64": "DELTA_BINARY_PACKED",
        "ts_ms": "DELTA_BINARY_PACKED", "ts_us": "DELTA_BINARY_PACKED", "ts_ns": "DELTA_BINARY_PACKED",
        "i": "DELTA_BINARY_PACKED", "j": "DELTA_BINARY_PACKED"}),
    "byte_stream_split": dict(use_dictionary=False, use_byte_stream_split=["fx", "uuid", "d", "i", "ts_ms"]),
}


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@pytest.mark.parametrize("compression,version", [("snappy", "1.0"), ("snappy", "2.0"), ("none", "2.0"), ("zstd", "1.0")])
def test_every_encoding_matches_pyarrow(tmp_path, encoding, compression, version):
    t = mixed_table(2500, hash((encoding, compression)) % 1000)
    p = tmp_path / "m.parquet"
    pq.write_table(t, p, compression=compression, data_page_version=version, row_group_size=1100,
                   data_page_size=3000, **ENCODINGS[encoding])
    md = pq.ParquetFile(p).metadata
    wanted = {"delta": "DELTA", "byte_stream_split": "BYTE_STREAM_SPLIT", "plain": "PLAIN",
              "dictionary": "RLE_DICTIONARY"}[encoding]
    assert any(wanted in e for e in md.row_group(0).column(0 if encoding != "byte_stream_split" else 4).encodings)
    assert check_arrow(p) > 0


def test_read_gives_numbers_and_temporal_ticks_but_not_strings(tmp_path):
    t = mixed_table(500, 3)
    p = tmp_path / "r.parquet"
    pq.write_table(t, p)
    with ParquetColumns(p) as pc:
        assert pc.read(0, "s") is None and pc.supports("s")
        values, valid = pc.read(0, "ts_us")
        m = t["ts_us"].is_valid().to_numpy(zero_copy_only=False)
        assert values.dtype == np.int64 and np.array_equal(valid, m)
        assert np.array_equal(values[m], t["ts_us"].combine_chunks().cast(pa.int64()).to_numpy(zero_copy_only=False)[m])
        values, _ = pc.read(0, "d")
        assert values.dtype == np.int32


def test_types_pyarrow_converts_are_read_or_declined(tmp_path):
    """Decimals, float16 and INT96 timestamps read equal to pyarrow's reading (issue 16; they
    were declined before); dictionary-typed (categorical) columns are left to pyarrow: None,
    never a wrong value or type."""
    n = 300
    t = pa.table({
        "dec": pa.array([i * 3 for i in range(n)], pa.decimal128(12, 2)),
        "f16": pa.array(np.arange(n, dtype=np.float16), pa.float16()),
        "cat": pa.array([str(i % 7) for i in range(n)]).dictionary_encode(),
        "ts96": pa.array(np.arange(n) * 10**9, pa.timestamp("ns")),
        "ok": pa.array([str(i) for i in range(n)]),
    })
    p = tmp_path / "dec.parquet"
    pq.write_table(t, p, use_deprecated_int96_timestamps=True)
    assert check_arrow(p, declined=("cat",)) > 0
    q = tmp_path / "strings_as_dictionary.parquet"
    pq.write_table(t.select(["ok"]), q)
    with ParquetColumns(q) as pc:
        assert pc.read_arrow(0, "ok").equals(t["ok"].combine_chunks())


def test_long_values_grow_the_output(tmp_path):
    """Values far larger than the first output buffer (1 MiB strings from a small dictionary:
    the kernel asks for more room and is called again)."""
    big = ["x" * (1 << 20), "y" * 70_000, ""]
    t = pa.table({"s": pa.array([big[i % 3] for i in range(40)]), "k": np.arange(40)})
    for enc in ({}, {"use_dictionary": False}):
        p = tmp_path / "big.parquet"
        pq.write_table(t, p, **enc)
        check_arrow(p)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=700),
       small=st.booleans(), data=st.data())
def test_delta_binary_packed_at_the_extremes(tmp_path, values, small, data):
    """Deltas that wrap around (INT64_MIN next to INT64_MAX), every bit width, INT32 columns."""
    if small:
        values = [v >> 32 for v in values]
    arr = pa.array(values, pa.int32() if small else pa.int64())
    p = tmp_path / "dbp.parquet"
    pq.write_table(pa.table({"x": arr}), p, use_dictionary=False, column_encoding={"x": "DELTA_BINARY_PACKED"},
                   data_page_version=data.draw(st.sampled_from(["1.0", "2.0"])))
    check_arrow(p, seed=len(values))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["ab", "abc", "abd", "b"])),
                       max_size=400),
       encoding=st.sampled_from(["PLAIN", "DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY", "DICT"]))
def test_random_strings(tmp_path, values, encoding):
    p = tmp_path / "s.parquet"
    opts = {} if encoding == "DICT" else {"use_dictionary": False, "column_encoding": {"s": encoding}}
    pq.write_table(pa.table({"s": pa.array(values, pa.string())}), p, data_page_size=256, **opts)
    check_arrow(p, seed=len(values))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_flipped_bytes_in_string_pages_never_crash(tmp_path, data):
    """A damaged byte-string column chunk gives CorruptionError, None or an array of the right
    length -- never a crash or a read outside the chunk."""
    enc = data.draw(st.sampled_from(["dictionary", "plain", "delta"]))
    p = tmp_path / f"f-{enc}.parquet"
    if not p.exists():
        t = mixed_table(1500, 5).select(["s", "b", "fx", "i"])
        pq.write_table(t, p, row_group_size=1500, data_page_size=1024, compression="snappy", **ENCODINGS[enc])
    q = tmp_path / "g.parquet"
    md, c = flipped_copy(p, q, data)
    with ParquetColumns(q, metadata=md, verify=False) as pc:
        for positions in (None, np.array([0, 700, 1499])):
            try:
                got = pc.read_arrow(0, c.path_in_schema, positions)
            except CorruptionError:
                continue
            if got is not None:
                assert len(got) == (1500 if positions is None else 3)


def test_duckdb_v2_strings_and_dates(tmp_path):
    """DuckDB's PARQUET_VERSION V2 writes DELTA_BINARY_PACKED integers and DELTA_LENGTH_BYTE_ARRAY
    strings (the encodings this reader declined before)."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for version in ("V1", "V2"):
        p = tmp_path / f"duck-{version}.parquet"
        con.execute(f"""COPY (SELECT i::BIGINT a, 'key-' || (i * 7919 % 100000)::VARCHAR s,
                       CASE WHEN i % 5 = 0 THEN NULL ELSE repeat('z', (i % 13)::INTEGER) END n,
                       (DATE '2020-01-01' + (i % 900)::INTEGER) d,
                       (TIMESTAMP '2020-01-01' + to_microseconds(i * 1000)) ts,
                       (TIMESTAMPTZ '2020-01-01 00:00:00+00' + to_seconds(i)) tz,
                       gen_random_uuid() g, (i % 77)::UINTEGER u
                       FROM range(20000) t(i)) TO '{p}' (FORMAT parquet, PARQUET_VERSION {version},
                       ROW_GROUP_SIZE 7000)""")
        assert check_arrow(p) > 0
        if version == "V2":
            encs = {e for j in range(8) for e in pq.ParquetFile(p).metadata.row_group(0).column(j).encodings}
            assert "DELTA_BINARY_PACKED" in encs


def test_polars_strings(tmp_path):
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(4)
    n = 20_000
    df = pl.DataFrame({"s": [f"v{i}" for i in rng.integers(0, 10**6, n)],
                       "c": pl.Series([f"c{i % 40}" for i in range(n)]).set(pl.Series(rng.random(n) < 0.1), None),
                       "b": [bytes([i % 256]) * (i % 9) for i in range(n)],
                       "d": [datetime.date(2020, 1, 1) + datetime.timedelta(days=int(i)) for i in rng.integers(0, 999, n)],
                       "t": pl.Series(rng.integers(0, 10**15, n)).cast(pl.Datetime("us", "Europe/Berlin"))})
    for compression in ("zstd", "snappy", "lz4", "uncompressed"):
        p = tmp_path / f"polars-{compression}.parquet"
        df.write_parquet(p, compression=compression, row_group_size=8000)
        assert check_arrow(p) > 0


@pytest.mark.parametrize("name", ["duckdb_sbbf.parquet", "arrow_sbbf.parquet"])
def test_reference_files_strings(name):
    path = os.path.join(VECTORS, name)
    if not os.path.exists(path):
        pytest.skip(f"reference vectors not found at {VECTORS} (shared/ beside the checkout)")
    assert check_arrow(path) > 0


@pytest.mark.parametrize("encoding", ["dictionary", "plain", "delta"])
def test_join_reads_string_payloads_at_the_surviving_rows(tmp_path, encoding):
    """The join's Parquet scan decodes string, binary, UUID and timestamp payloads only at the
    rows the filter let through (pyarrow decoded them whole before), equal to DuckDB's answer."""
    duckdb = pytest.importorskip("duckdb")
    from bloomdb.join import hash_join

    n = 40_000
    t = mixed_table(n, 11).select(["s", "b", "fx", "ts_us", "d"]).append_column("k", pa.array(np.arange(n) * 7))
    p = tmp_path / "probe.parquet"
    opts = dict(ENCODINGS[encoding])
    if "column_encoding" in opts:
        opts["column_encoding"] = {c: e for c, e in opts["column_encoding"].items() if c in t.column_names}
    pq.write_table(t, p, row_group_size=10_000, data_page_size=4096, **opts)
    build = pa.table({"k": pa.array(np.random.default_rng(2).choice(n, n // 100, replace=False) * 7)})
    cols = ["k", "s", "b", "fx", "ts_us", "d"]
    got, st = hash_join(p, build, on="k", columns=cols, pushdown="on", explain=True)
    ref = duckdb.sql(f"SELECT {', '.join('p.' + c for c in cols)} FROM read_parquet('{p}') p JOIN build USING (k)") \
        .to_arrow_table()
    assert got.sort_by("k").equals(ref.sort_by("k").cast(got.schema))
    for c in ("s", "b", "fx", "ts_us"):
        assert st.rows_decoded[c] == st.matched_rows == build.num_rows, (c, st.rows_decoded)


@pytest.mark.parametrize("encoding", ["dictionary", "plain", "delta"])
@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti"])
def test_join_on_string_keys_read_by_the_page_reader(tmp_path, encoding, how):
    """String keys (nulls, duplicates, empty strings, multi-byte UTF-8) from the page reader
    give DuckDB's answer for every encoding."""
    duckdb = pytest.importorskip("duckdb")
    from bloomdb.join import hash_join

    rng = np.random.default_rng(5)
    n = 30_000
    words = np.array([f"ключ-{i}" if i % 11 else "" for i in range(5000)], dtype=object)
    t = pa.table({"s": pa.array(words[rng.integers(0, 5000, n)], mask=rng.random(n) < 0.05),
                  "v": pa.array(np.arange(n))})
    p = tmp_path / "probe.parquet"
    opts = {"delta": dict(use_dictionary=False, column_encoding={"s": "DELTA_BYTE_ARRAY"}),
            "plain": dict(use_dictionary=False), "dictionary": {}}[encoding]
    pq.write_table(t, p, row_group_size=8000, data_page_size=2048, **opts)
    build = pa.table({"s": pa.array(list(words[rng.integers(0, 5000, 300)]) + [None, ""]), "w": np.arange(302)})
    cols = ["v", "s"] + (["w"] if how in ("inner", "left") else [])
    got = hash_join(p, build, on="s", how=how, columns=cols)
    join = {"inner": "JOIN", "left": "LEFT JOIN", "semi": "SEMI JOIN", "anti": "ANTI JOIN"}[how]
    sel = ", ".join("b.w" if c == "w" else f"p.{c}" for c in cols)
    ref = duckdb.sql(f"SELECT {sel} FROM read_parquet('{p}') p {join} build b ON p.s = b.s").to_arrow_table()
    order = [(c, "ascending") for c in cols]
    assert got.sort_by(order).equals(ref.rename_columns(cols).sort_by(order).cast(got.schema))
