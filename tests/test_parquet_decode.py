"""Whole-page dictionary decoding of the Parquet page reader: codes unpacked straight through the
dictionary into the output (``_hybrid_kernels.unpack_gather``), against a plain reference decoder
and against pyarrow's reading of files with every code width."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomdb.parquet import ParquetColumns
from bloomdb.parquet import _header_kernels as H
from bloomdb.parquet import _hybrid_kernels as HY

from parquet_helpers import varint


def _encode(runs, width: int) -> bytes:
    """The RLE / bit-packed hybrid bytes of ``runs``: ("rle", value, count) or ("packed", values)
    (a multiple of 8 values, packed little-endian ``width`` bits each)."""
    out = bytearray()
    for run in runs:
        if run[0] == "rle":
            _, v, count = run
            out += varint(count << 1) + int(v).to_bytes((width + 7) // 8, "little")
        else:
            values = run[1]
            bits = 0
            for i, v in enumerate(values):
                bits |= int(v) << (i * width)
            out += varint(((len(values) // 8) << 1) | 1) + bits.to_bytes(len(values) * width // 8, "little")
    return bytes(out)


@st.composite
def _runs(draw):
    width = draw(st.integers(0, 32))
    top = (1 << min(width, 12)) - 1  # dictionaries stay small; neighbours' bits still test the masks
    runs, codes = [], []
    for _ in range(draw(st.integers(1, 5))):
        if width == 0 or draw(st.booleans()):
            v, count = draw(st.integers(0, top)), draw(st.integers(1, 40))
            runs.append(("rle", v, count))
            codes += [v] * count
        else:
            vals = draw(st.lists(st.integers(0, top), min_size=8, max_size=80))
            vals = vals[: len(vals) // 8 * 8]
            runs.append(("packed", vals))
            codes += vals
    return width, runs, codes


@settings(max_examples=300, deadline=None)
@given(_runs(), st.integers(0, 3), st.integers(0, 3))
def test_unpack_gather_matches_a_reference_decoder(case, drop, pad):
    width, runs, codes = case
    n = len(codes) - min(drop, len(codes) - 1)  # fewer values than encoded: the page's own count
    dict_n = max(codes) + 1 + pad
    dictionary = (np.arange(dict_n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    raw = np.frombuffer(_encode(runs, width) + bytes(pad), np.uint8).copy()
    end = raw.shape[0] - pad  # bytes after the run sequence are not read as part of it
    out = np.zeros(n + 3, np.uint64)
    assert HY.unpack_gather(raw, 0, end, width, dictionary, dict_n, out, 2, n) == H.ST_OK
    assert out[2:2 + n].tolist() == dictionary[np.array(codes[:n], np.int64)].tolist()
    assert out[:2].tolist() == [0, 0] and out[2 + n] == 0  # nothing written outside out[start:start + n]


@settings(max_examples=150, deadline=None)
@given(_runs(), st.data())
def test_unpack_gather_reports_codes_beyond_the_dictionary_and_cut_runs(case, data):
    width, runs, codes = case
    raw = np.frombuffer(_encode(runs, width), np.uint8).copy()
    n = len(codes)
    top = max(codes)
    out = np.zeros(n, np.uint32)
    dictionary = np.arange(top + 1, dtype=np.uint32)
    if top > 0:  # a dictionary one entry short: the largest code is out of range, wherever it lies
        assert HY.unpack_gather(raw, 0, raw.shape[0], width, dictionary[:top], top, out, 0, n) == H.ST_CORRUPT
    cut = data.draw(st.integers(0, max(raw.shape[0] - 1, 0)))
    st_ = HY.unpack_gather(raw, 0, cut, width, dictionary, top + 1, out, 0, n)
    if st_ == H.ST_OK:  # only when the cut left every value's bits (a last packed run may be short)
        assert out.tolist() == codes
    else:
        assert st_ == H.ST_CORRUPT


@pytest.mark.parametrize("distinct", [1, 2, 3, 200, 256, 257, 4097, 70_000])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float64", "float32"])
@pytest.mark.parametrize("nulls", [False, True])
def test_whole_dictionary_pages_of_every_code_width(tmp_path, distinct, dtype, nulls):
    """Whole row groups (every page read by the one-pass path when it has no nulls) equal
    pyarrow's reading, for dictionaries whose codes take 0 to 17 bits."""
    rng = np.random.default_rng(distinct)
    n = 100_000
    v = rng.integers(0, distinct, n).astype(dtype)
    mask = rng.random(n) < 0.1 if nulls else None
    t = pa.table({"x": pa.array(v, mask=mask)})
    p = tmp_path / "w.parquet"
    pq.write_table(t, p, row_group_size=60_000, data_page_size=1 << 14, dictionary_pagesize_limit=1 << 22)
    ref = pq.read_table(p).column("x")
    with ParquetColumns(p) as pc:
        got = [pc.read(g, "x") for g in range(2)]
    values = np.concatenate([g[0] for g in got])
    valid = np.concatenate([g[1] if g[1] is not None else np.ones(g[0].shape[0], bool) for g in got])
    want_valid = ref.is_valid().to_numpy(zero_copy_only=False)
    assert np.array_equal(valid, want_valid)
    want = pa.compute.fill_null(ref, 0).to_numpy(zero_copy_only=False)
    assert np.array_equal(values[valid], want[valid])
