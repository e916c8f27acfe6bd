"""The Parquet page reader (bloomdb.parquet.ParquetColumns) against pyarrow and DuckDB's writers."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bloomdb.errors import CorruptionError, InvalidArgument
from bloomdb.parquet import ParquetColumns

from parquet_helpers import flipped_copy, varint
from bloomdb.parquet import _header_kernels as H
from bloomdb.parquet import _snappy_kernels as S

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "vectors", "parquet")

TYPES = {
    "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(),
    "u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64(),
    "f32": pa.float32(), "f64": pa.float64(),
}


def _table(n: int, seed: int, nulls: bool, low_cardinality: bool) -> pa.Table:
    rng = np.random.default_rng(seed)
    cols = {}
    for name, t in TYPES.items():
        if pa.types.is_floating(t):
            v = rng.normal(size=n).astype(t.to_pandas_dtype())
            if low_cardinality:
                v = np.round(v, 1).astype(v.dtype)
        else:
            info = np.iinfo(t.to_pandas_dtype())
            hi = 50 if low_cardinality else info.max
            v = rng.integers(info.min if not low_cardinality else 0, hi, n, dtype=t.to_pandas_dtype(), endpoint=True)
        mask = rng.random(n) < 0.2 if nulls else None
        cols[name] = pa.array(v, type=t, mask=mask)
    return pa.table(cols)


def _check_file(path, table: pa.Table, seed: int = 0, declines_ok: bool = False):
    """Every column, every row group: whole and at random positions, equal to pyarrow's reading
    (``declines_ok``: a chunk in an encoding the reader leaves to pyarrow may give None)."""
    rng = np.random.default_rng(seed)
    pf = pq.ParquetFile(path)
    with ParquetColumns(path) as pc:
        for g in range(pf.metadata.num_row_groups):
            ref = pf.read_row_group(g)
            n = ref.num_rows
            for name in ref.column_names:
                assert pc.supports(name, g)
                col = ref.column(name).combine_chunks()
                mask = col.is_valid().to_numpy(zero_copy_only=False)
                want = pa.compute.fill_null(col, 0).to_numpy(zero_copy_only=False)
                for positions in (None, np.sort(rng.choice(n, min(n, 37), replace=False)), np.array([max(n - 1, 0)]),
                                  np.zeros(0, np.int64)):
                    if n == 0 and positions is not None and positions.size:
                        continue
                    got = pc.read(g, name, positions)
                    if got is None and declines_ok:
                        continue
                    assert got is not None, (name, g)
                    values, valid = got
                    sel = slice(None) if positions is None else positions
                    m = mask[sel]
                    assert values.dtype == col.type.to_pandas_dtype(), name
                    assert np.array_equal(valid if valid is not None else np.ones(len(m), bool), m), name
                    assert np.array_equal(values[m], want[sel][m].astype(values.dtype)), (name, g, positions)
                    assert not values[~m].any()


@pytest.mark.parametrize("compression,dictionary,version,nulls", [
    (c, d, v, nl) for c, d, v, nl in itertools.product(
        ["NONE", "SNAPPY", "ZSTD", "GZIP", "LZ4"], [True, False], ["1.0", "2.0"], [False, True])
    if not (c in ("GZIP", "LZ4") and nl)  # the codec matrix needs no second null pass
])
def test_matches_pyarrow(tmp_path, compression, dictionary, version, nulls):
    t = _table(3000, 1, nulls, low_cardinality=dictionary)
    p = tmp_path / "t.parquet"
    pq.write_table(t, p, compression=compression, use_dictionary=dictionary, data_page_version=version,
                   row_group_size=1100, data_page_size=2048)  # several row groups and many pages
    _check_file(p, t)


def test_byte_stream_split_and_plain_fallback_after_dictionary(tmp_path):
    t = _table(5000, 2, True, low_cardinality=False)
    p = tmp_path / "bss.parquet"
    pq.write_table(t, p, use_dictionary=False, use_byte_stream_split=["f32", "f64"], data_page_size=4096)
    _check_file(p, t)
    # a dictionary that overflows its page limit mid-chunk: later pages fall back to PLAIN
    p2 = tmp_path / "overflow.parquet"
    pq.write_table(t, p2, dictionary_pagesize_limit=512, data_page_size=1024)
    _check_file(p2, t)


def test_single_literal_snappy_pages_read_in_place(tmp_path):
    """Incompressible pages and dictionaries (random 64-bit values) are Snappy literals: read in place."""
    rng = np.random.default_rng(3)
    t = pa.table({"x": rng.integers(-(1 << 62), 1 << 62, 40_000), "y": rng.normal(size=40_000)})
    p = tmp_path / "lit.parquet"
    pq.write_table(t, p, row_group_size=20_000)
    _check_file(p, t)


def test_duckdb_written_file(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    p = tmp_path / "duck.parquet"
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT i::BIGINT AS a, (i % 97)::INTEGER AS b, (i * 0.5)::DOUBLE AS c,
                   CASE WHEN i % 7 = 0 THEN NULL ELSE i * 3 END AS d FROM range(200000) t(i))
                   TO '{p}' (FORMAT parquet, ROW_GROUP_SIZE 70000)""")
    t = pq.read_table(p)
    _check_file(p, t)


@pytest.mark.parametrize("name", ["duckdb_sbbf.parquet", "arrow_sbbf.parquet"])
def test_reference_files(name):
    path = os.path.join(VECTORS, name)
    if not os.path.exists(path):
        pytest.skip(f"reference vectors not found at {VECTORS} (shared/ beside the checkout)")
    pf = pq.ParquetFile(path)
    with ParquetColumns(path) as pc:
        assert pc.supports("s") and pc.read(0, "s") is None  # strings: read_arrow, not read
        for g in range(pf.metadata.num_row_groups):
            values, valid = pc.read(g, "k")
            want = pf.read_row_group(g, columns=["k"]).column(0).to_numpy()
            assert valid is None and np.array_equal(values, want)


def test_unsupported_encodings_and_types_return_none(tmp_path):
    t = pa.table({"d": np.arange(1000, dtype=np.int64), "s": [str(i) for i in range(1000)],
                  "l": pa.array([[i] for i in range(1000)]), "ts": pa.array(np.arange(1000), pa.timestamp("ms"))})
    p = tmp_path / "u.parquet"
    pq.write_table(t, p, use_dictionary=False, column_encoding={"d": "DELTA_BINARY_PACKED"})
    with ParquetColumns(p) as pc:
        assert pc.supports("d")
        values, valid = pc.read(0, "d")  # DELTA_BINARY_PACKED (declined before)
        assert valid is None and np.array_equal(values, np.arange(1000))
        assert not pc.supports("l.list.element") and not pc.supports("l")  # nested: declined
        assert pc.read(0, "l.list.element") is None and pc.read_arrow(0, "l") is None
        assert pc.supports("s") and pc.supports("ts")  # strings (read_arrow) and timestamps
        with pytest.raises(InvalidArgument):
            pc.read(0, "nope")
        with pytest.raises(InvalidArgument):
            pc.supports("nope")


def test_bad_positions(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": np.arange(100)}), p)
    with ParquetColumns(p) as pc:
        with pytest.raises(InvalidArgument):
            pc.read(0, "x", np.array([100]))
        with pytest.raises(InvalidArgument):
            pc.read(0, "x", np.array([-1, 3]))
        with pytest.raises(InvalidArgument):
            pc.read(1, "x")
        with pytest.raises(CorruptionError):  # not ascending
            pc.read(0, "x", np.array([5, 3]))
        values, _ = pc.read(0, "x", np.array([3, 3, 7]))  # repeats are fine (expanded join rows)
        assert values.tolist() == [3, 3, 7]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_flipped_bytes_never_crash(tmp_path, data):
    """A damaged column chunk gives CorruptionError, None (unsupported-looking bytes) or values of
    the right shape -- never a crash or a read outside the chunk."""
    p = tmp_path / "f.parquet"
    if not p.exists():
        t = _table(2000, 4, True, low_cardinality=True)
        pq.write_table(t, p, row_group_size=2000, data_page_size=1024, compression="snappy")
    q = tmp_path / "g.parquet"
    md, c = flipped_copy(p, q, data)
    with ParquetColumns(q, metadata=md) as pc:
        for positions in (None, np.array([0, 999, 1999])):
            try:
                got = pc.read(0, c.path_in_schema, positions)
            except CorruptionError:
                continue
            if got is not None:
                assert got[0].shape[0] == (2000 if positions is None else 3)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 2))
def test_snappy_matches_pyarrow(payload, repeat):
    raw = payload * (1 + repeat * 7)  # repeats make copies, overlapping ones included
    comp = np.frombuffer(pa.compress(raw, codec="snappy", asbytes=True), np.uint8).copy()
    out = np.empty(len(raw), np.uint8)
    assert S.snappy_decompress(comp, 0, comp.shape[0], out) == H.ST_OK
    assert out.tobytes() == raw
    # wrong length or truncation: a status, never a crash
    assert S.snappy_decompress(comp, 0, comp.shape[0], np.empty(len(raw) + 1, np.uint8)) == H.ST_CORRUPT
    if comp.shape[0] > 1 and len(raw):
        assert S.snappy_decompress(comp, 0, comp.shape[0] - 1, out) != H.ST_OK or out.tobytes() == raw


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=400))
def test_snappy_random_bytes_never_crash(garbage):
    src = np.frombuffer(garbage, np.uint8).copy()
    for n in (0, 7, 64, 1000):
        assert S.snappy_decompress(src, 0, src.shape[0], np.empty(n, np.uint8)) in (H.ST_OK, H.ST_CORRUPT)
    pages = np.empty((8, H.P_FIELDS), np.int64)
    assert H.walk_pages(src, 0, src.shape[0], pages) in (H.ST_CORRUPT, H.ST_FULL) or \
        0 <= H.walk_pages(src, 0, src.shape[0], pages) <= 8


@pytest.mark.parametrize("compression", ["zstd", "lz4", "brotli"])
def test_polars_written_file(tmp_path, compression):
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(6)
    n = 30_000
    df = pl.DataFrame({"a": rng.integers(-10**12, 10**12, n), "b": rng.integers(0, 100, n).astype(np.int32),
                       "c": rng.normal(size=n), "e": rng.random(n).astype(np.float32),
                       "d": pl.Series(rng.integers(0, 1000, n)).set(pl.Series(rng.random(n) < 0.1), None)})
    p = tmp_path / "polars.parquet"
    df.write_parquet(p, compression=compression, row_group_size=10_000)
    _check_file(p, pq.read_table(p))


def test_dictionary_entry_count_beyond_its_page_is_corruption(tmp_path):
    """A dictionary header claiming more entries than its page holds is rejected before any gather,
    whether the page is decompressed or read in place (compressible and literal-only dictionaries)."""
    rng = np.random.default_rng(8)
    for values in (rng.integers(0, 1 << 20, 5000), rng.integers(-(1 << 62), 1 << 62, 5000)):
        p = tmp_path / "d.parquet"
        pq.write_table(pa.table({"x": values}), p, compression="snappy")
        md = pq.ParquetFile(p).metadata
        c = md.row_group(0).column(0)
        with ParquetColumns(p) as pc:
            start, end = pc._chunk_range(c)
            pages, n = pc._pages(start, end, "x")
        assert pages[0, H.P_TYPE] == 2
        raw = p.read_bytes()
        head = raw[start:pages[0, H.P_BODY]]
        entries = int(pages[0, H.P_NVALUES])
        # num_values is field 1 of DictionaryPageHeader: a zigzag varint; write a larger one
        old = _zigzag_varint(entries)
        new = _zigzag_varint(entries + 1)  # one entry more than the page holds
        assert len(new) == len(old) and head.count(old) >= 1
        q = tmp_path / "bad.parquet"
        i = head.index(old)
        q.write_bytes(raw[:start + i] + new + raw[start + i + len(old):])
        with ParquetColumns(q, metadata=md) as pc:
            for positions in (None, np.array([0, 4999])):
                with pytest.raises(CorruptionError):
                    pc.read(0, "x", positions)


def _zigzag_varint(v: int) -> bytes:
    return varint(((v << 1) ^ (v >> 63)) & ((1 << 64) - 1))


# ---- valid files are never called corrupt ----------------------------------------------------


@pytest.mark.parametrize("compression", ["NONE", "SNAPPY", "ZSTD", "GZIP", "LZ4", "BROTLI"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_empty_tables_and_zero_row_row_groups(tmp_path, compression, version):
    """An empty table (its chunk's data_page_offset is 0) and a zero-row row group between two
    others read as what pyarrow reads, not as a chunk "outside the file"."""
    t = _table(50, 9, True, low_cardinality=True)
    for dictionary in (True, False):
        p = tmp_path / f"empty-{dictionary}.parquet"
        pq.write_table(t.slice(0, 0), p, compression=compression, data_page_version=version, use_dictionary=dictionary)
        _check_file(p, t.slice(0, 0))
        q = tmp_path / f"zero-rg-{dictionary}.parquet"
        with pq.ParquetWriter(q, t.schema, compression=compression, data_page_version=version,
                              use_dictionary=dictionary) as w:
            w.write_table(t)
            w.write_table(t.slice(0, 0))
            w.write_table(t)
        assert pq.ParquetFile(q).metadata.num_row_groups == 3
        _check_file(q, pq.read_table(q))


def test_empty_tables_of_duckdb_and_polars(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    p = tmp_path / "duck0.parquet"
    duckdb.connect().execute(f"COPY (SELECT i::BIGINT a, i::INTEGER b FROM range(0) t(i)) TO '{p}' (FORMAT parquet)")
    _check_file(p, pq.read_table(p))
    q = tmp_path / "polars0.parquet"
    pl.DataFrame({"a": pl.Series([], dtype=pl.Int64), "b": pl.Series([], dtype=pl.Float32)}).write_parquet(q)
    _check_file(q, pq.read_table(q))


def test_v2_page_whose_empty_values_section_has_no_block(tmp_path):
    """A v2 data page whose rows are all null, marked compressed, with no compressed bytes for
    its empty values section: pyarrow, DuckDB and Polars read it; so must this reader."""
    p = tmp_path / "n.parquet"
    t = pa.table({"x": pa.array([None] * 10, pa.int64())})
    pq.write_table(t, p, data_page_version="2.0", compression="snappy", use_dictionary=False)
    raw = p.read_bytes()
    # DataPageHeaderV2: ... field 6 (repetition_levels_byte_length = 0), field 7 is_compressed
    # = false (compact bool 0x12), then field 8 (statistics). Make it "true" (0x11).
    i = raw.index(b"\x15\x00\x12\x1c", 4)
    q = tmp_path / "c.parquet"
    q.write_bytes(raw[:i + 2] + b"\x11" + raw[i + 3:])
    assert pq.read_table(q).equals(t)
    duckdb = pytest.importorskip("duckdb")
    assert duckdb.sql(f"SELECT count(*), count(x) FROM '{q}'").fetchall() == [(10, 0)]
    _check_file(q, t)


def test_nested_columns_are_declined_not_refused(tmp_path):
    t = pa.table({"k": [1, 2, 3], "s": pa.array([{"a": 1}] * 3, pa.struct([("a", pa.int64())])),
                  "l": [[1], [2], [3]]})
    p = tmp_path / "nested.parquet"
    pq.write_table(t, p)
    with ParquetColumns(p) as pc:
        for name in ("s", "l", "s.a", "l.list.element"):
            assert not pc.supports(name, 0)
            assert pc.read(0, name) is None
        with pytest.raises(InvalidArgument):
            pc.read(0, "s.b")
    from bloomdb.join import hash_join

    res = hash_join(p, pa.table({"k": [1, 3]}), on="k")
    assert res.sort_by("k").equals(t.filter(pa.compute.is_in(t["k"], pa.array([1, 3]))))


_WRITE_OPTIONS = st.fixed_dictionaries({
    "compression": st.sampled_from(["NONE", "SNAPPY", "ZSTD", "GZIP", "LZ4", "BROTLI"]),
    "data_page_version": st.sampled_from(["1.0", "2.0"]),
    "use_dictionary": st.booleans(),
    "data_page_size": st.sampled_from([1, 64, 1024, 1 << 20]),
    "row_group_size": st.sampled_from([1, 7, 300, 10**6]),
    "write_statistics": st.booleans(),
    "byte_stream_split": st.booleans(),
    "write_page_checksum": st.booleans(),
})


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=_WRITE_OPTIONS, rows=st.sampled_from([0, 1, 5, 700]), nulls=st.sampled_from(["none", "all", "some"]),
       seed=st.integers(0, 2**16))
def test_every_valid_pyarrow_file_reads_as_pyarrow_reads_it(tmp_path, options, rows, nulls, seed):
    """Files of every writer option pyarrow has (tiny pages and row groups, all-null columns,
    zero-row files, no statistics, BYTE_STREAM_SPLIT, v1/v2 pages, every codec): the values equal
    pyarrow's and no valid file is called corrupt."""
    options = dict(options)
    if options.pop("byte_stream_split"):
        options.update(use_byte_stream_split=True, use_dictionary=False)
    t = _table(rows, seed, nulls != "none", low_cardinality=seed % 2 == 0)
    if nulls == "all":
        t = pa.table({name: pa.nulls(rows, t.schema.field(name).type) for name in t.column_names})
    p = tmp_path / "grid.parquet"
    pq.write_table(t, p, **options)
    _check_file(p, t, seed)


@pytest.mark.parametrize("version", ["V1", "V2"])
def test_duckdb_files_of_every_codec_and_page_version(tmp_path, version):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for codec in ("uncompressed", "snappy", "gzip", "zstd", "lz4", "brotli"):
        p = tmp_path / f"{codec}.parquet"
        con.execute(f"""COPY (SELECT i::BIGINT a, NULL::INTEGER b, CASE WHEN i % 3 = 0 THEN NULL ELSE i % 50 END::SMALLINT c,
                       (i * 0.25)::FLOAT f, i::UINTEGER u FROM range(5000) t(i))
                       TO '{p}' (FORMAT parquet, COMPRESSION {codec}, PARQUET_VERSION {version}, ROW_GROUP_SIZE 2048)""")
        _check_file(p, pq.read_table(p))  # V2: DELTA_BINARY_PACKED, read too


@pytest.mark.parametrize("compression,version", [("snappy", "1.0"), ("snappy", "2.0"), ("zstd", "2.0"), ("none", "1.0")])
def test_page_checksums_are_verified(tmp_path, compression, version):
    """Pages that carry a CRC (pyarrow's write_page_checksum=True) are checked before decoding:
    a damaged page raises CorruptionError instead of decoding to wrong values."""
    rng = np.random.default_rng(12)
    n = 3000
    t = pa.table({"a": rng.integers(0, 100, n), "b": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.2),
                  "c": rng.integers(-2**40, 2**40, n)})
    p = tmp_path / "crc.parquet"
    pq.write_table(t, p, write_page_checksum=True, compression=compression, data_page_version=version,
                   data_page_size=2048)
    _check_file(p, t)
    raw = p.read_bytes()
    md = pq.ParquetFile(p).metadata
    q = tmp_path / "damaged.parquet"
    wrong_unverified = 0
    # every 29th byte, from a different start in each case: the four cases together flip about
    # every 7th byte of the pages (each byte once, in one of them)
    start = 4 + 7 * [("snappy", "1.0"), ("snappy", "2.0"), ("zstd", "2.0"), ("none", "1.0")].index((compression, version))
    for at in range(start, len(raw) - 8 - md.serialized_size, 29):
        damaged = bytearray(raw)
        damaged[at] ^= 0x10
        q.write_bytes(bytes(damaged))
        for verify in (True, False):
            with ParquetColumns(q, metadata=md, verify=verify) as pc:
                for name in t.column_names:
                    try:
                        got = pc.read(0, name)
                    except CorruptionError:
                        continue
                    if got is None:
                        continue
                    col = t[name].combine_chunks()
                    m = col.is_valid().to_numpy(zero_copy_only=False)
                    values, valid = got
                    right = np.array_equal(valid if valid is not None else np.ones(n, bool), m) and \
                        np.array_equal(values[m], col.to_numpy(zero_copy_only=False)[m])
                    assert right or not verify, (at, name)
                    wrong_unverified += not right
    assert wrong_unverified > 0  # the opt-out reads damaged pages as they are


def test_bit_packed_definition_levels_are_declined(tmp_path):
    """A v1 page whose definition levels are BIT_PACKED (deprecated, but pyarrow reads it) is left
    to pyarrow -- not decoded as RLE into values pyarrow does not read."""
    t = pa.table({"x": pa.array([1, None, 3, 4, None, 6, 7, 8], pa.int64())})
    p = tmp_path / "rle.parquet"
    pq.write_table(t, p, data_page_version="1.0", compression="none", use_dictionary=False)
    raw = p.read_bytes()
    rle = b"\x15\x00\x15\x06\x15\x06"  # DataPageHeader: encoding PLAIN, definition RLE, repetition RLE
    assert raw.count(rle) == 1
    q = tmp_path / "bitpacked.parquet"
    q.write_bytes(raw.replace(rle, b"\x15\x00\x15\x08\x15\x06"))  # definition levels BIT_PACKED
    assert pq.read_table(q).num_rows == 8  # pyarrow reads it (its own way)
    with ParquetColumns(q) as pc:
        assert pc.read(0, "x") is None
        assert pc.read(0, "x", np.array([0, 2])) is None


@pytest.mark.parametrize("dictionary", [False, True])
def test_repeated_positions_spanning_a_page(tmp_path, dictionary):
    """Ascending positions with repeats whose count equals the page's rows and whose ends are
    the page's first and last rows are not the whole page (the one-copy and whole-page paths
    took them for it and returned rows 0..n-1)."""
    n = 40
    p = tmp_path / "rep.parquet"
    pq.write_table(pa.table({"k": np.arange(n, dtype=np.int64) * 3}), p, use_dictionary=dictionary)
    positions = np.array([0, 0] + list(range(2, n - 1)) + [n - 1], dtype=np.int64)
    assert positions.shape[0] == n
    with ParquetColumns(p) as pc:
        values, valid = pc.read(0, "k", positions)
    assert valid is None and np.array_equal(values, positions * 3)
