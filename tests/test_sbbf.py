"""The ``sbbf`` family and bloomdb.parquet: Parquet's split-block Bloom filters, read from real files."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomdb import errors, filters, parquet
from bloomdb.filters import _sbbf_kernels as K
from bloomdb.filters.sbbf import SplitBlockBloom, optimal_num_bytes

SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)


def _reference_bitset(encoded: list[bytes], num_bytes: int) -> bytes:
    """parquet-format BloomFilter.md, written out in plain Python."""
    z = num_bytes // 32
    words = [0] * (8 * z)
    for v in encoded:
        h = xxhash.xxh64_intdigest(v, seed=0)
        block = ((h >> 32) * z) >> 32
        x = h & 0xFFFFFFFF
        for i, s in enumerate(SALT):
            words[8 * block + i] |= 1 << (((x * s) & 0xFFFFFFFF) >> 27)
    return b"".join(w.to_bytes(4, "little") for w in words)


def test_layout_matches_spec_model():
    f = SplitBlockBloom(capacity=500, num_bytes=1024)
    strs = [f"v{i}" for i in range(300)]
    ints = list(range(-100, 200))
    f.add_many(strs)
    f.add_many(np.array(ints, dtype=np.int64))
    enc = [s.encode() for s in strs] + [i.to_bytes(8, "little", signed=True) for i in ints]
    assert f.to_parquet_bitset() == _reference_bitset(enc, 1024)
    h = np.array([xxhash.xxh64_intdigest(e) for e in enc], dtype=np.uint64)
    w, z = f.kernel_args
    assert all(K.check_hash(w, z, x) for x in h)
    assert f.might_contain_hashes(h).all()


def test_sizing():
    # Arrow C++ OptimalNumOfBytes: -8 n / ln(1 - p^(1/8)) bits, >= 32 bytes, next power of two, <= 128 MiB
    assert optimal_num_bytes(1, 0.5) == 32
    assert optimal_num_bytes(26_214, 0.0126) == 32768  # the spec's 1024-block example
    assert optimal_num_bytes(1_048_576, 0.05) == 1 << 20  # pyarrow's default options
    assert optimal_num_bytes(10**12, 0.01) == 128 << 20
    for n, p in ((1000, 0.01), (123_457, 0.001), (5, 0.3)):
        nb = optimal_num_bytes(n, p)
        assert nb & (nb - 1) == 0 and nb * 8 >= -8 * n / np.log(1 - p ** (1 / 8))
    assert SplitBlockBloom(capacity=1000, fpr=0.01).size_bytes == optimal_num_bytes(1000, 0.01)
    assert SplitBlockBloom(capacity=1000, bits_per_key=10).size_bytes == 1280
    assert filters.create("sbbf:10", capacity=1000).num_blocks == 40
    for bad in (0, 31, 48, -32, 32.0, True):
        with pytest.raises(errors.InvalidArgument):
            SplitBlockBloom(capacity=10, num_bytes=bad)
    with pytest.raises(errors.InvalidArgument):
        SplitBlockBloom(capacity=10, fpr=0.01, bits_per_key=10)
    with pytest.raises(errors.InvalidArgument):
        SplitBlockBloom.from_parquet_bitset(b"\0" * 33)
    for fpr in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(errors.InvalidArgument):
            SplitBlockBloom(capacity=10, fpr=fpr)
    for cap in (0, -5, 1.5, None):
        with pytest.raises(errors.InvalidArgument):
            filters.create("sbbf:10", capacity=cap)
    for bpk in ("nan", "-1", "0", "abc"):
        with pytest.raises(errors.InvalidArgument):
            filters.create(f"sbbf:{bpk}", capacity=10)


def test_spec_fpr_example():
    """The spec: 1024 blocks holding 26,214 values (10 bits/value) give about 1.26% false positives."""
    f = SplitBlockBloom(capacity=26_214, num_bytes=32 * 1024)
    rng = np.random.default_rng(4)
    f.add_many(rng.integers(0, 2**62, 26_214, dtype=np.uint64))
    measured = f.might_contain_many(rng.integers(2**62, 2**63, 1_000_000, dtype=np.uint64)).mean()
    assert f.expected_fpr(10.0) == pytest.approx(0.0126, abs=5e-4)
    assert abs(measured - f.expected_fpr(10.0)) < 0.001


# ---- the reference files --------------------------------------------------------------------


@pytest.fixture(scope="module")
def probes():
    from conftest import VECTORS

    path = VECTORS / "parquet" / "expected_probes.json"
    if not path.is_file():
        pytest.skip(f"reference vectors not found at {path}")
    return json.loads(path.read_text())


def test_reference_files_agree_with_duckdb(probes):
    from conftest import VECTORS

    checked = 0
    for entry in probes["files"]:
        path = VECTORS / "parquet" / entry["file"]
        meta = pq.ParquetFile(path).metadata
        for col in entry["columns"]:
            fs = parquet.read_filters(path, col["column"])
            assert len(fs) == meta.num_row_groups == len(col["chunks"])
            ci = [meta.schema.column(i).path for i in range(len(meta.schema))].index(col["column"])
            for chunk in col["chunks"]:
                md = meta.row_group(chunk["row_group"]).column(ci)
                assert (md.bloom_filter_offset, md.bloom_filter_length) == (
                    chunk["bloom_filter_offset"], chunk["bloom_filter_length"])
                assert fs[chunk["row_group"]].size_bytes + 16 <= chunk["bloom_filter_length"]
            values = [p["value"] for p in col["probes"]]
            if col["type"] == "int":
                values = np.array(values, dtype=np.int64)
            got = parquet.row_groups_that_may_contain(path, col["column"], values)
            want = ~np.array([p["excluded_by_row_group"] for p in col["probes"]], dtype=bool)
            # row_groups_that_may_contain also prunes by the chunk's min/max
            stats = [meta.row_group(g).column(ci).statistics for g in range(meta.num_row_groups)]
            raw = [p["value"] for p in col["probes"]]
            in_range = np.array([[s.min <= v <= s.max for s in stats] for v in raw], dtype=bool)
            assert np.array_equal(got, want & in_range), (entry["file"], col["column"])
            # the filter objects answer the same
            for g, f in enumerate(fs):
                assert np.array_equal(f.might_contain_many(values), want[:, g])
            assert want.any() and (~want).any()  # the probes exercise both answers
            checked += want.size
    assert checked > 1000


def test_fresh_pyarrow_file_never_excludes_inserted_values(tmp_path):
    rng = np.random.default_rng(11)
    n = 6000
    table = pa.table({
        "i64": pa.array(rng.integers(-(2**62), 2**62, n, dtype=np.int64)),
        "i32": pa.array(rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int64).astype(np.int32)),
        "f64": pa.array(rng.standard_normal(n)),
        "s": pa.array([f"name-{x}" for x in rng.integers(0, 10**12, n)]),
    })
    path = tmp_path / "fresh.parquet"
    pq.write_table(table, path, row_group_size=2000,
                   bloom_filter_options={c: {"ndv": 2000, "fpp": 0.01} for c in table.column_names})
    for col in table.column_names:
        fs = parquet.read_filters(path, col)
        assert len(fs) == 3 and all(f is not None for f in fs)
        assert fs[0].size_bytes == optimal_num_bytes(2000, 0.01)  # Arrow sizes filters as the spec says
        values = table[col].to_numpy() if col != "s" else table[col].to_pylist()
        res = parquet.row_groups_that_may_contain(path, col, values)
        own_group = np.arange(n) // 2000
        assert res[np.arange(n), own_group].all(), col  # never excludes a value from its row group
        # and the filters are real: values of other row groups are mostly excluded
        other = res[np.arange(n), (own_group + 1) % 3]
        assert other.mean() < 0.05, col


def test_int32_columns_hash_four_bytes(tmp_path):
    """INT32's plain encoding is 4 bytes: pyarrow's and DuckDB's writers hash it so, and so do we."""
    duckdb = pytest.importorskip("duckdb")
    vals = np.arange(-3500, 3500, 7, dtype=np.int32)
    absent = np.arange(-3497, 3500, 7, dtype=np.int32)
    path = tmp_path / "i32.parquet"
    con = duckdb.connect()
    # repeated values: DuckDB writes Bloom filters for dictionary-encoded chunks only
    con.register("t", pa.table({"x": pa.array(np.repeat(vals, 20))}))
    con.execute(f"COPY (SELECT x FROM t) TO '{path}' (FORMAT parquet)")
    fs = parquet.read_filters(path, "x")
    if all(f is None for f in fs):
        pytest.skip("this DuckDB wrote no Bloom filter for the INT32 column")
    assert pq.ParquetFile(path).metadata.schema.column(0).physical_type == "INT32"
    assert parquet.row_groups_that_may_contain(path, "x", vals).all()
    got = parquet.row_groups_that_may_contain(path, "x", absent)[:, 0]
    sql = f"SELECT bloom_filter_excludes FROM parquet_bloom_probe('{path}', 'x', ?::INTEGER) ORDER BY row_group_id"
    want = [not con.execute(sql, [int(v)]).fetchall()[0][0] for v in absent[:200]]
    assert got[:200].tolist() == want
    assert not got.all()
    # the filter read_filters gives takes the column's values (4-byte hashing): every value found,
    # as numpy int32/int64, a pyarrow array, a list or one by one
    f = [f for f in fs if f is not None][0]
    assert f.might_contain_many(vals).all() and f.might_contain_many(vals.astype(np.int64)).all()
    assert f.might_contain_many(pa.array(vals)).all() and all(f.might_contain(int(v)) for v in vals[:50])
    assert f.might_contain_many(absent[:200]).tolist() == want  # DuckDB's own probe of the filter
    # a bare filter over the same bitset takes bloomdb keys: 8-byte hashing does not match it
    bare = SplitBlockBloom.from_parquet_bitset(f.to_parquet_bitset())
    assert not bare.might_contain_many(vals.astype(np.int64)).all()
    assert bare.might_contain_hashes(parquet.hash_values(vals, "INT32")).all()
    # values an INT32 column cannot hold are in no row group (an answer, not an error)
    assert not parquet.row_groups_that_may_contain(path, "x", [2**40, -(2**31) - 1, 2**64 - 1]).any()
    with pytest.raises(errors.InvalidArgument):
        parquet.row_groups_that_may_contain(path, "x", ["a"])
    with pytest.raises(errors.InvalidArgument):
        parquet.row_groups_that_may_contain(path, "x", 5)  # a scalar is not a batch
    assert parquet.row_groups_that_may_contain(path, "x", pa.array(vals[:10])).all()
    assert parquet.row_groups_that_may_contain(path, "x", [int(v) for v in vals[:10]]).all()


def test_missing_filters_and_columns(tmp_path):
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), path,
                   bloom_filter_options={"b": True})
    assert parquet.read_filters(path, "a") == [None]
    # no filter: only min/max can prove absence
    assert parquet.row_groups_that_may_contain(path, "a", [1, 2, 99]).tolist() == [[True], [True], [False]]
    assert parquet.row_groups_that_may_contain(path, "b", ["x"]).tolist() == [[True]]
    with pytest.raises(errors.InvalidArgument):
        parquet.read_filters(path, "nope")


def _header(num_bytes: int, alg: int = 1, hsh: int = 1, comp: int = 1) -> bytes:
    """A BloomFilterHeader in Thrift compact encoding, with the given union members."""
    v = (num_bytes << 1) ^ (num_bytes >> 31)  # zigzag
    varint = b""
    while True:
        b, v = v & 0x7F, v >> 7
        varint += bytes([b | 0x80]) if v else bytes([b])
        if not v:
            break
    # field 1: i32 (delta 1, type 5); fields 2..4: struct (delta 1, type 12) holding a union whose
    # member m is an empty struct (delta m, type 12), then the union's STOP
    out = b"\x15" + varint
    for member in (alg, hsh, comp):
        out += bytes([0x1C, (member << 4) | 0x0C, 0x00, 0x00])
    return out + b"\x00"


def test_header_parser():
    good = _header(4096)
    assert parquet.parse_bloom_filter_header(good + b"rest") == (4096, len(good))
    # long-form field id (delta 0, then the id as a zigzag varint) parses too
    long_form = b"\x05\x02" + good[1:]
    assert parquet.parse_bloom_filter_header(long_form)[0] == 4096
    for bad in (_header(4096, alg=2), _header(4096, hsh=2), _header(4096, comp=2)):
        with pytest.raises(parquet.UnsupportedBloomFilter, match="not supported"):
            parquet.parse_bloom_filter_header(bad)
    with pytest.raises(errors.CorruptionError):
        parquet.parse_bloom_filter_header(good[:5])
    with pytest.raises(errors.CorruptionError):
        parquet.parse_bloom_filter_header(_header(100))


_COLUMN_TYPES = {
    "i32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "i64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "f32": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "f64": (pa.float64(), st.floats(allow_nan=False)),
    "s": (pa.string(), st.text(max_size=12)),
    "b": (pa.binary(), st.binary(max_size=12)),
    "fixed": (pa.binary(3), st.binary(min_size=3, max_size=3)),
}


@settings(max_examples=25)
@given(data=st.data())
def test_property_written_values_are_never_excluded(tmp_path_factory, data):
    """Whatever pyarrow writes with Bloom filters, every written value passes its row group's filter."""
    name = data.draw(st.sampled_from(sorted(_COLUMN_TYPES)))
    typ, values_st = _COLUMN_TYPES[name]
    values = data.draw(st.lists(values_st, min_size=1, max_size=60))
    path = tmp_path_factory.mktemp("prop") / "p.parquet"
    rows = max(1, len(values) // 3)
    pq.write_table(pa.table({"c": pa.array(values, type=typ)}), path, row_group_size=rows,
                   bloom_filter_options={"c": {"ndv": rows, "fpp": 0.05}})
    res = parquet.row_groups_that_may_contain(path, "c", pa.array(values, type=typ) if name in ("i32", "f32") else values)
    group = np.arange(len(values)) // rows
    assert res[np.arange(len(values)), group].all()


def test_filter_without_bloom_filter_length(probes, tmp_path):
    """Writers before parquet-format 2.10 leave bloom_filter_length unset: the header says the size."""
    from conftest import VECTORS

    from bloomdb.parquet.bloom import _read_bitset

    path = VECTORS / "parquet" / "arrow_sbbf.parquet"
    chunk = probes["files"][1]["columns"][0]["chunks"][0]
    assert probes["files"][1]["file"] == "arrow_sbbf.parquet"
    size = path.stat().st_size
    with open(path, "rb") as fh:
        with_len = _read_bitset(fh, chunk["bloom_filter_offset"], chunk["bloom_filter_length"], size, str(path))
        without = _read_bitset(fh, chunk["bloom_filter_offset"], None, size, str(path))
        assert np.array_equal(with_len, without) and without.nbytes == chunk["bloom_filter_length"] - 16
        with pytest.raises(errors.CorruptionError):
            _read_bitset(fh, chunk["bloom_filter_offset"], chunk["bloom_filter_length"] + 32, size, str(path))
        with pytest.raises(errors.CorruptionError):
            _read_bitset(fh, size + 10, None, size, str(path))
    # a truncated file: the bitset runs past the end
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(path.read_bytes()[: chunk["bloom_filter_offset"] + 100])
    with open(cut, "rb") as fh:
        with pytest.raises(errors.CorruptionError):
            _read_bitset(fh, chunk["bloom_filter_offset"], None, cut.stat().st_size, str(cut))
