"""Damaged columnar tables: every read path either returns exactly the right answer or raises
CorruptionError -- never wrong rows, never a raw pyarrow/numpy error (issue 12, item 10)."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

from bloomdb import columnar
from bloomdb.columnar import encoding
from bloomdb.errors import CorruptionError
from bloomdb.join import hash_join, release_files


def _table(n: int = 40) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({
        "k": pa.array(rng.integers(0, 12, n), mask=rng.random(n) < 0.15),
        "f": rng.normal(size=n),
        "s": pa.array([f"v{x}" for x in rng.integers(0, 6, n)], mask=rng.random(n) < 0.1),
        "b": rng.random(n) < 0.5,
        "ts": pa.array(rng.integers(0, 10**12, n), pa.timestamp("ms")),
    })  # fmt: skip


BUILD = pa.table({"k": pa.array([0, 3, 4, 7, 11])})
ORDER = [("k", "ascending"), ("f", "ascending")]


def _duckdb_join(t: pa.Table) -> pa.Table:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("p", t)
    con.register("b", BUILD)
    got = con.sql("SELECT p.* FROM p JOIN b ON p.k = b.k").arrow()
    got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
    return got.cast(t.schema).sort_by(ORDER)


def _flip_every(tmp_path, compression, step: int, skip: int = 0) -> dict:
    """Flip the byte at every ``step``-th offset of every file (offsets that are multiples of
    ``skip`` left out: another test flips those) and read the table back three ways."""
    t = _table()
    src = tmp_path / "src"
    columnar.write(src, t, chunk_rows=16, compression=compression)
    want_join = _duckdb_join(t)
    assert hash_join(src, BUILD, on="k").sort_by(ORDER).equals(want_join)
    seen = {"ok": 0, "corrupt": 0}
    dst = tmp_path / "dst"
    for fname in sorted(os.listdir(src)):
        raw = (src / fname).read_bytes()
        for at in range(0, len(raw), step):
            if skip and at % skip == 0:
                continue
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)
            damaged = bytearray(raw)
            damaged[at] ^= 0x5A if fname.endswith(".json") else 0xFF  # JSON: stay printable
            (dst / fname).write_bytes(bytes(damaged))
            release_files()  # the join keeps inputs open: start each flip from the files
            reads = ((lambda: columnar.read(dst), t),
                     (lambda: hash_join(dst, BUILD, on="k").sort_by(ORDER), want_join),
                     (lambda: columnar.open(dst).read(["k"]), t.select(["k"])))
            for read, want in reads:
                try:
                    got = read()
                except CorruptionError:
                    seen["corrupt"] += 1
                    continue
                assert got.equals(want), (fname, at)
                seen["ok"] += 1
    release_files()
    assert seen["corrupt"] > 0
    return seen


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_flipped_bytes_raise_or_read_right(tmp_path, compression):
    _flip_every(tmp_path, compression, step=5)


@pytest.mark.slow
def test_every_flipped_byte_raises_or_reads_right(tmp_path):
    """Uncompressed (where a flip lands in values, not in a compressed stream): with the test
    above, every byte of every file is flipped once."""
    _flip_every(tmp_path, None, step=1, skip=5)


def test_chunks_are_verified_once_per_open_table(tmp_path, monkeypatch):
    """Repeated joins over a kept-open table do not re-hash chunks; a new open does."""
    path = tmp_path / "t"
    columnar.write(path, _table(200), chunk_rows=64)
    calls = []
    real = encoding.crc32c
    monkeypatch.setattr(encoding, "crc32c", lambda data: calls.append(1) or real(data))
    release_files()
    first = hash_join(path, BUILD, on="k")
    n1 = len(calls)
    assert n1 > 0  # verified by default
    assert hash_join(path, BUILD, on="k").equals(first) and len(calls) == n1  # not again
    hash_join(path, BUILD, on="k", verify=False)
    assert len(calls) == n1  # opted out
    release_files()
    hash_join(path, BUILD, on="k")
    assert len(calls) == 2 * n1


def test_verify_false_is_an_explicit_opt_out(tmp_path):
    path = tmp_path / "t"
    t = _table(200)
    columnar.write(path, t, chunk_rows=64)
    fname = columnar.open(path).row_groups[0].file
    raw = bytearray((path / fname).read_bytes())
    info = columnar.open(path).row_groups[0].chunks[1]  # the float column's plain values
    raw[info.offset + encoding.HEADER_SIZE + 8] ^= 0x01
    (path / fname).write_bytes(bytes(raw))
    release_files()
    with pytest.raises(CorruptionError):
        hash_join(path, BUILD, on="k")
    with pytest.raises(CorruptionError):
        columnar.read(path)
    release_files()
    got = columnar.open(path, verify=False).read()  # read as stored, damage and all
    assert got.num_rows == t.num_rows and not got.equals(t)
    release_files()


def test_format_1_tables_still_read_and_their_headers_are_checked(tmp_path):
    """Tables written before the manifest and chunk headers had checksums still open; their
    headers are checked against the manifest (encoding, length, nulls, reference and width)."""
    path = tmp_path / "t"
    t = _table(100)
    columnar.write(path, t, chunk_rows=64)
    mpath = path / "_table.json"
    m = json.loads(mpath.read_text())
    assert m["version"] == 2 and "crc32c" in m
    del m["crc32c"]
    m["version"] = 1
    for g in m["row_groups"]:
        for c in g["chunks"]:
            del c["header_crc"]
    mpath.write_text(json.dumps(m))
    assert columnar.read(path).equals(t)
    info = m["row_groups"][0]["chunks"][0]
    fname = path / m["row_groups"][0]["file"]
    raw = bytearray(fname.read_bytes())
    raw[info["offset"] + 16] ^= 0x01  # the frame-of-reference base
    fname.write_bytes(bytes(raw))
    with pytest.raises(CorruptionError, match="manifest"):
        columnar.read(path)


def test_manifest_edits_are_caught(tmp_path):
    path = tmp_path / "t"
    columnar.write(path, _table(100), chunk_rows=64)
    mpath = path / "_table.json"
    m = json.loads(mpath.read_text())
    for edit in (lambda m: m["row_groups"][0]["chunks"][0].__setitem__("min", -5),
                 lambda m: m.__setitem__("num_rows", 99),
                 lambda m: m["row_groups"][0].__setitem__("file", "../elsewhere.bdc")):
        changed = json.loads(json.dumps(m))
        edit(changed)
        mpath.write_text(json.dumps(changed))
        with pytest.raises(CorruptionError):
            columnar.open(path)


def test_parquet_inputs_damaged_pages_raise_or_read_right(tmp_path):
    """The same for Parquet probe and import paths: pages with CRCs are verified (page reader and
    pyarrow fallback alike); a damaged file gives CorruptionError, never wrong rows or a raw error."""
    import pyarrow.parquet as pq

    t = _table(400).select(["k", "f", "s"])
    src = tmp_path / "p.parquet"
    pq.write_table(t, src, write_page_checksum=True, data_page_size=512, row_group_size=200)
    want_join = _duckdb_join(t)
    raw = src.read_bytes()
    footer = pq.ParquetFile(src).metadata.serialized_size
    dst = tmp_path / "d.parquet"
    seen = {"ok": 0, "corrupt": 0}
    for at in range(4, len(raw) - 8 - footer, 7):
        damaged = bytearray(raw)
        damaged[at] ^= 0x04
        dst.write_bytes(bytes(damaged))
        release_files()
        out = tmp_path / f"imp{at}"
        for read, want in ((lambda: hash_join(dst, BUILD, on="k").sort_by(ORDER), want_join),
                           (lambda: columnar.import_parquet(dst, out).read(), t)):
            try:
                got = read()
            except CorruptionError:
                seen["corrupt"] += 1
                continue
            assert got.equals(want), at
            seen["ok"] += 1
        shutil.rmtree(out, ignore_errors=True)
    release_files()
    assert seen["corrupt"] > 0 and seen["ok"] > 0
