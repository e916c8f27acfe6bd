"""The aggregate sink's unweighted sums (``join/_sum_kernels``): exact integer sums past 64 bits
without Python integers, float sums in four lanes; against Python's exact arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomdb.join import hash_join
from bloomdb.join.aggregate import exact_sum

INTS = [np.int64, np.uint64, np.int32, np.uint32, np.int8, np.bool_]


def _rows(v, valid, index):
    rows = np.arange(v.shape[0]) if index is None else index
    return rows if valid is None else rows[valid[rows]]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(INTS), st.integers(0, 300), st.booleans(), st.booleans(), st.integers(0, 2**32))
def test_integer_sums_are_exact(dtype, n, with_nulls, with_index, seed):
    rng = np.random.default_rng(seed)
    if dtype is np.bool_:
        v = rng.random(n) < 0.5
    else:
        info = np.iinfo(dtype)  # extremes included: sums leave 64 bits
        v = rng.choice(np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=dtype), n)
        mix = rng.random(n) < 0.5
        v[mix] = rng.integers(info.min, info.max, int(mix.sum()), dtype=dtype, endpoint=True)
    valid = rng.random(n) < 0.7 if with_nulls else None
    index = np.sort(rng.choice(n, n // 2, replace=False)) if with_index and n else None
    rows = _rows(v, valid, index)
    want = sum(int(x) for x in v[rows].tolist()) if rows.size else None
    assert exact_sum(v, valid, index, None) == want


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1000, 65536])
def test_int64_extremes_every_row(n):
    v = np.full(n, np.iinfo(np.int64).max, np.int64)
    v[::3] = np.iinfo(np.int64).min
    assert exact_sum(v, None, None, None) == (sum(int(x) for x in v.tolist()) if n else None)
    u = np.full(n, np.iinfo(np.uint64).max, np.uint64)
    assert exact_sum(u, None, None, None) == ((2**64 - 1) * n if n else None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=50), st.booleans())
def test_float_sums(values, with_nulls):
    v = np.array(values, np.float64)
    valid = np.arange(v.shape[0]) % 3 != 0 if with_nulls else None
    rows = _rows(v, valid, None)
    got = exact_sum(v, valid, None, None)
    if not rows.size:
        assert got is None
        return
    kept = v[rows]
    if np.isnan(kept).any() or (np.isposinf(kept).any() and np.isneginf(kept).any()):
        assert math.isnan(got)
    elif np.isinf(kept).any():  # NaN only where finite values overflow to the opposite infinity first
        finite = kept[np.isfinite(kept)]
        assert got == kept[np.isinf(kept)][0] or (math.isnan(got) and np.abs(finite).sum() > 1e308)
    elif not np.isinf(got):  # finite inputs may still overflow in any order
        exact = math.fsum(kept.tolist())
        assert abs(got - exact) <= 1e-9 * max(1.0, float(np.abs(kept).sum()))


def test_sums_of_a_fully_matched_join_equal_duckdb():
    """Every probe row matches (the chunks' values are summed in order, no gather), build keys
    unique (no multiplicities): sums equal DuckDB's, integers exactly."""
    duckdb = pytest.importorskip("duckdb")
    rng = np.random.default_rng(5)
    n = 200_000
    probe = {"k": rng.integers(0, 1000, n), "i": rng.integers(-2**62, 2**62, n), "f": rng.normal(size=n)}
    build = {"k": np.arange(1000)}
    got = hash_join(probe, build, on="k", aggregates=["sum(i)", "sum(f)", "count(*)"], pushdown="off")
    import pyarrow as pa

    con = duckdb.connect()
    con.register("p", pa.table(probe))
    con.register("b", pa.table(build))
    si, sf, c = con.execute("SELECT sum(i)::HUGEINT, sum(f), count(*) FROM p JOIN b USING (k)").fetchone()
    assert got["sum(i)"] == int(si) and got["count(*)"] == c
    assert math.isclose(got["sum(f)"], sf, rel_tol=1e-9, abs_tol=1e-6)


def test_int_sum_kernel_halves():
    """The kernel's contract: Σ = hi * 2^32 + lo (hi read as two's complement for signed)."""
    from bloomdb.join import _sum_kernels as S

    v = np.array([-1, np.iinfo(np.int64).min, 5, 2**40 + 3], np.int64)
    lo, hi, cnt = S.int_sum(v.view(np.uint64), True, np.zeros(0, np.int64), False, np.zeros(0, np.bool_), False)
    assert cnt == 4
    assert (int(np.uint64(hi).view(np.int64)) << 32) + int(lo) == sum(int(x) for x in v.tolist())
