"""The Parquet page reader on files as legacy writers (parquet-mr before 1.11, Impala, old Spark)
lay them out: schema elements carrying only the legacy ConvertedType, no LogicalType and no Arrow
schema -- UTF8, DATE, TIME_MILLIS/MICROS, TIMESTAMP_MILLIS/MICROS, INT_8..INT_64, UINT_8..UINT_64,
DECIMAL, JSON, ENUM, BSON, INTERVAL -- and INT96 timestamps. pyarrow cannot omit the LogicalType,
so each file is written by pyarrow (or DuckDB / Polars) with the writer's options and its footer
rewritten with the Thrift structures (:mod:`thrift_compact`). Every column reads equal to pyarrow's
reading, type included; nested columns are declined (None); nothing is called corrupt."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parquet_helpers import check_arrow
from test_parquet_writers import NESTED, PYARROW_OPTIONS, matrix_table
from thrift_compact import I32, field, legacy_footer_copy, rewrite_footer, strip_logical_types

# ConvertedType values (parquet.thrift) that pyarrow never writes alone, set by hand
LEGACY_ONLY = {"t32": 7, "t64": 8, "i32": 17, "i64": 18, "js": 19, "en": 4, "bs": 20, "iv": 21}
#  TIME_MILLIS, TIME_MICROS, INT_32, INT_64, JSON, ENUM, BSON, INTERVAL


def legacy_table(n: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    t = matrix_table(n, seed)
    extra = {
        "i8": pa.array(rng.integers(-128, 127, n).astype(np.int8)),
        "i16": pa.array(rng.integers(-3000, 3000, n).astype(np.int16)),
        "u8": pa.array(rng.integers(0, 255, n).astype(np.uint8)),
        "u16": pa.array(rng.integers(0, 65535, n).astype(np.uint16)),
        "u64": pa.array(rng.integers(0, 1 << 63, n).astype(np.uint64) * np.uint64(2) + np.uint64(1)),
        "t32": pa.array(rng.integers(0, 86_400_000, n).astype(np.int32), pa.time32("ms")),
        "t64": pa.array(rng.integers(0, 86_400_000_000, n), pa.time64("us")),
        "tsl": pa.array(rng.integers(0, 10**15, n), pa.timestamp("us")),
        "js": pa.array([f'{{"a":{i % 7}}}' for i in range(n)], pa.string(), mask=rng.random(n) < 0.1),
        "en": pa.array(["red", "green", "blue"] * (n // 3) + ["red"] * (n % 3), pa.string()),
        "bs": pa.array([bytes([5, 0, 0, 0, 0])] * n, pa.binary()),
        "iv": pa.array([bytes(rng.integers(0, 256, 12, dtype=np.uint8)) for _ in range(n)], pa.binary(12)),
    }
    for name, arr in extra.items():
        t = t.append_column(name, arr)
    return t


def legacy_schema(meta: list, only=LEGACY_ONLY) -> list:
    """No LogicalType, no Arrow schema, and the ConvertedTypes of ``only`` set."""
    out = []
    for fid, t, v in strip_logical_types(meta):
        if fid == 2:
            et, elems = v
            new = []
            for e in elems:
                name = field(e, 4)
                if name is not None and name.decode() in only:
                    e = sorted([f for f in e if f[0] != 6] + [(6, I32, only[name.decode()])], key=lambda f: f[0])
                new.append(e)
            v = (et, new)
        out.append((fid, t, v))
    return out


def test_thrift_codec_round_trips_a_footer(tmp_path):
    p, q = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(legacy_table(50), p)
    rewrite_footer(p, q, lambda meta: meta)
    assert p.read_bytes() == q.read_bytes()


_OPTIONS = {name: PYARROW_OPTIONS[name] for name in ("defaults", "v1-plain-none", "v2-gzip-crc-nostats",
                                                      "dict-fallback-zstd", "spark-like", "impala-like",
                                                      "delta-v1-snappy", "byte-stream-split")}


@pytest.mark.parametrize("name", list(_OPTIONS))
def test_legacy_converted_types_read_as_pyarrow_reads_them(tmp_path, name):
    opts = dict(_OPTIONS[name])
    if opts.get("version") == "1.0" or "coerce_timestamps" in opts:
        opts.update(coerce_timestamps="us", allow_truncated_timestamps=True)
    src, p = tmp_path / "src.parquet", tmp_path / "legacy.parquet"
    pq.write_table(legacy_table(700), src, row_group_size=300, **opts)
    rewrite_footer(src, p, legacy_schema)
    schema = pq.ParquetFile(p).schema_arrow
    assert pq.ParquetFile(p).metadata.metadata is None or b"ARROW:schema" not in pq.ParquetFile(p).metadata.metadata
    assert schema.field("t32").type == pa.time32("ms") and schema.field("iv").type == pa.binary(12)
    assert check_arrow(p, seed=len(name), declined=NESTED) > 0


def test_json_and_interval_columns_are_read_not_declined(tmp_path):
    """pyarrow reads a JSON column as its ``arrow.json`` extension type and INTERVAL as 12-byte
    binary; the reader used to decline both."""
    src, p = tmp_path / "src.parquet", tmp_path / "legacy.parquet"
    pq.write_table(legacy_table(100).select(["js", "iv"]), src)
    rewrite_footer(src, p, legacy_schema)
    from bloomdb.parquet import ParquetColumns

    ref = pq.read_table(p)
    with ParquetColumns(p) as pc:
        for name in ("js", "iv"):
            got = pc.read_arrow(0, name, None)
            assert got is not None and got.type == ref[name].type and got.equals(ref[name].combine_chunks())


@pytest.mark.parametrize("writer", ["duckdb", "polars"])
def test_other_writers_files_without_logical_types(tmp_path, writer):
    t = legacy_table(400).drop_columns(list(NESTED) + ["js", "iv", "f16", "dec40"])
    src, p = tmp_path / "src.parquet", tmp_path / "legacy.parquet"
    if writer == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect()
        con.register("t", t)
        con.execute(f"COPY t TO '{src}' (FORMAT parquet, ROW_GROUP_SIZE 150)")
    else:
        pl = pytest.importorskip("polars")
        pl.from_arrow(t).write_parquet(src, row_group_size=150)
    legacy_footer_copy(src, p)
    assert check_arrow(p, seed=3) > 0


def test_join_on_a_legacy_file_matches_duckdb(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    from bloomdb.join import hash_join

    src, p = tmp_path / "src.parquet", tmp_path / "legacy.parquet"
    t = legacy_table(2000, seed=4)
    pq.write_table(t, src, row_group_size=700, **PYARROW_OPTIONS["spark-like"])
    no_bson = {k: v for k, v in LEGACY_ONLY.items() if k != "bs"}  # DuckDB refuses BSON
    rewrite_footer(src, p, lambda meta: legacy_schema(meta, no_bson))
    keys = pa.table({"s": pa.array(np.unique(t["s"].drop_null().to_numpy(zero_copy_only=False))[:7])})
    cols = ["s", "i8", "u16", "d", "tms", "t32", "dec18", "tns", "en"]
    got = hash_join(p, keys, on="s", columns=cols, pushdown="on", filter="blocked:10")
    con = duckdb.connect()
    con.register("k", keys)
    want = con.sql(f"SELECT {', '.join('p.' + c for c in cols)} FROM read_parquet('{p}') p JOIN k ON p.s = k.s").to_arrow_table()
    ref = pq.read_table(p, columns=cols)
    ref = ref.filter(pa.compute.is_in(ref["s"], keys["s"]))
    assert got.num_rows == want.num_rows == ref.num_rows > 0
    key = [(c, "ascending") for c in ("s", "i8", "u16", "t32")]
    got, ref = got.sort_by(key), ref.sort_by(key)
    for c in cols:
        assert got[c].combine_chunks().equals(ref[c].combine_chunks()), c


def _old_parquet_mr_statistics(meta: list) -> list:
    """As parquet-mr 1.8 wrote statistics: only the deprecated ``min`` / ``max`` fields (1, 2),
    which for byte arrays were ordered by signed bytes (here: deliberately wrong values, that a
    reader must ignore as pyarrow does for files of that writer); integers keep theirs."""

    def stats(st: list, binary: bool) -> list:
        mx, mn = field(st, 5), field(st, 6)
        rest = [f for f in st if f[0] not in (1, 2, 5, 6)]
        if mx is None:
            return rest
        if binary:
            mx = mn = b"\xff\xff"  # signed order put bytes >= 0x80 below ASCII: trust nothing
        return sorted(rest + [(1, 8, mx), (2, 8, mn)], key=lambda f: f[0])

    def chunk(cc: list) -> list:
        out = []
        for fid, t, v in cc:
            if fid == 3:  # ColumnMetaData: physical type (1) BYTE_ARRAY = 6, statistics (12)
                binary = field(v, 1) == 6
                v = [(f, tt, stats(x, binary) if f == 12 else x) for f, tt, x in v]
            out.append((fid, t, v))
        return out

    out = []
    for fid, t, v in strip_logical_types(meta):
        if fid == 4:  # row groups: their column chunks (1)
            et, groups = v
            v = (et, [[(f, tt, (x[0], [chunk(c) for c in x[1]]) if f == 1 else x) for f, tt, x in g] for g in groups])
        elif fid == 6:
            v = b"parquet-mr version 1.8.1 (build 4aba4dae7bb0d4edbcf7923ae1339f28fd3f7fcf)"
        elif fid == 7:  # column orders came with parquet-format 2.4 (min_value / max_value)
            continue
        out.append((fid, t, v))
    return out


def test_old_parquet_mr_statistics_never_prune_wrongly(tmp_path):
    """Deprecated min/max only, from a writer whose byte-array statistics pyarrow (and so the join's
    pruning) must not trust: every row group still reads, and the join finds every match."""
    from bloomdb.join import hash_join

    rng = np.random.default_rng(8)
    n = 3000
    words = np.array([f"{c}-{i}" for i, c in enumerate("aéz~ÿb" * 20)], dtype=object)
    t = pa.table({"s": pa.array(words[rng.integers(0, words.shape[0], n)], pa.string()),
                  "k": pa.array(rng.integers(-500, 500, n)), "v": pa.array(rng.normal(size=n)),
                  "u": pa.array(rng.integers(0, 40, n).astype(np.uint64) * np.uint64(1 << 58))})
    src, p = tmp_path / "src.parquet", tmp_path / "old.parquet"
    pq.write_table(t, src, row_group_size=500, version="1.0", data_page_version="1.0")
    rewrite_footer(src, p, _old_parquet_mr_statistics)
    md = pq.ParquetFile(p).metadata
    assert md.created_by.startswith("parquet-mr version 1.8.1")
    st = md.row_group(0).column(0).statistics
    assert st is None or not st.has_min_max  # pyarrow ignores them
    assert md.row_group(0).column(1).statistics.has_min_max  # integers' deprecated fields are used
    assert check_arrow(p, seed=8) > 0
    ref = pq.read_table(p)
    u_keys = pa.array(np.array([0, 3, 31, 39], np.uint64) * np.uint64(1 << 58))  # above 2**63 too
    for key, wanted in (("s", pa.array(words[::5].tolist(), pa.string())), ("k", pa.array([-499, -3, 0, 17, 498])),
                        ("u", u_keys)):
        got = hash_join(p, pa.table({key: wanted}), on=key, columns=["s", "k", "v", "u"], pushdown="on",
                        filter="blocked:10")
        want = ref.filter(pa.compute.is_in(ref[key], wanted))
        assert got.num_rows == want.num_rows > 0
        order = [("s", "ascending"), ("k", "ascending"), ("v", "ascending"), ("u", "ascending")]
        assert got.sort_by(order).equals(want.sort_by(order))
