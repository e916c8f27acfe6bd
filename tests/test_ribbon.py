"""``ribbon``: Standard128 Ribbon — layout against a Python model, sizing, seeds, accuracy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bloomdb import errors, filters
from bloomdb.bench.filter_bench import make_keys
from bloomdb.filters import _ribbon_kernels as K
from bloomdb.filters import math as fm
from bloomdb.filters.ribbon import (
    RibbonFilter,
    bloom_equivalent_one_in,
    column_layout,
    default_slots_per_key,
    layout_fpr,
    num_slots_for,
)
from bloomdb.hashing import xxh3_64_many

M64 = (1 << 64) - 1


def _fmix(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & M64
    return x ^ (x >> 33)


def reference_query(payload: bytes, num_slots: int, upper: int, usb: int, seed: int, h: int) -> bool:
    """The documented query (docs/formats.md), in plain Python on the payload bytes."""
    x = _fmix(h ^ ((seed * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) & M64))
    start = (x * (num_slots - 127)) >> 64
    y = _fmix((x + 0x9E3779B97F4A7C15) & M64)
    coeff = (y | 1) | (((y * 0xC28F82822B650BED) & M64) << 64)
    result = ((y * 0xD6E8FEB86659FD93) & M64) >> 32
    block, bit = divmod(start, 128)
    cols = upper - 1 if block < usb else upper
    first = block * upper - min(block, usb)

    def segment(i):
        return int.from_bytes(payload[16 * i : 16 * i + 16], "little")

    for j in range(cols):
        window = segment(first + j) >> bit
        if bit:
            window |= segment(first + cols + j) << (128 - bit)
        if bin(window & coeff & ((1 << 128) - 1)).count("1") % 2 != (result >> j) & 1:
            return False
    return True


def test_column_layout_matches_rocksdb_arithmetic():
    one_in = bloom_equivalent_one_in(10)
    assert 104 < one_in < 106  # 1 / CacheLocalFpRate(10, 6)
    upper, usb = column_layout(1000, one_in)
    assert upper == 7 and 215 <= usb <= 225  # 22% of blocks at 6 columns
    assert layout_fpr(1000, upper, usb) == pytest.approx(1 / one_in, rel=0.002)
    assert column_layout(1000, 2.0**40) == (32, 0)
    assert column_layout(10, 1.5) == (1, 3)  # FP 2/3: a third of the blocks have 0 columns (always true)


def test_bytes_match_python_model():
    keys = make_keys(3000)
    f = RibbonFilter.build(keys, 10)
    probes = make_keys(3000, offset=1 << 40)
    hashes = xxh3_64_many(np.concatenate([keys, probes]))
    payload = f._payload().tobytes()
    expected = [reference_query(payload, f.num_slots, f.num_probes, f.stats()["upper_start_block"], f.seed, int(h))
                for h in hashes]
    got = f.might_contain_hashes(hashes)
    assert all(expected[:3000]) and got.tolist() == expected
    single = [K.check_hash(*f.kernel_args, np.uint64(h)) for h in hashes[2900:3100]]
    assert single == expected[2900:3100]


def test_ribbon_10_is_blocked_10_in_30_percent_less_space():
    n, absent = 100_000, 2_000_000
    keys, probes = make_keys(n), make_keys(absent, offset=1 << 40)
    r = filters.build("ribbon:10", keys)
    b = filters.build("blocked:10", keys)
    assert r.might_contain_many(keys).all()
    assert 6.9 < r.bits_per_key < 7.15  # RocksDB: 7.05 bits/key at 100k keys/filter
    assert r.num_bits <= 0.72 * b.num_bits
    fp_r = r.might_contain_many(probes).mean()
    fp_b = b.might_contain_many(probes).mean()
    assert abs(fp_r / fp_b - 1) < 0.08
    assert abs(fp_r / r.estimated_fpr() - 1) < 0.05


@pytest.mark.parametrize("fpr", [0.05, 0.01, 0.003, 4e-4])
def test_any_fp_rate_is_reachable(fpr):
    n, absent = 20_000, 2_000_000
    f = RibbonFilter.build(make_keys(n), fpr=fpr)
    measured = f.might_contain_many(make_keys(absent, offset=1 << 40)).mean()
    sigma = math.sqrt(fpr / absent)
    assert abs(measured - fpr) < 0.04 * fpr + 4 * sigma
    assert f.bits_per_key < 1.06 * math.log2(1 / fpr) + 0.15  # near the information bound


def test_bits_per_key_is_fractional_and_monotone():
    keys = make_keys(50_000)
    sizes = [RibbonFilter.build(keys, b).num_bits for b in (8, 8.5, 9, 9.5, 10, 11)]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)


def test_seed_is_retried_after_a_banding_failure():
    """With 2030 keys in 2048 slots banding fails now and then: the build moves to the next seed."""
    found = None
    for offset in range(40):
        keys = make_keys(2030, offset=offset * 10_000)
        f = RibbonFilter.build(keys, 10, slots_per_key=2047 / 2030)
        assert f.num_slots == 2048
        assert f.might_contain_many(keys).all()
        if f.seed > 0:
            found = f
            break
    assert found is not None and found.stats()["banding_failures"] == found.seed
    g = filters.from_bytes(found.to_bytes())
    assert g.seed == found.seed and g.might_contain_many(keys).all()


def test_every_seed_failing_raises():
    with pytest.raises(errors.FilterBuildError, match="failed for all 5 seeds"):
        RibbonFilter.build(make_keys(3000), 10, slots_per_key=0.8, max_seeds=5)


def test_duplicates_and_tiny_sets(tmp_path):
    f = RibbonFilter.build(["x"] * 1000 + ["y"], 10)
    assert f.might_contain("x") and f.might_contain("y") and f.num_slots == num_slots_for(1001) == 1024
    one = RibbonFilter.build([42], 10)
    assert one.num_slots == 256 and one.might_contain(42)
    empty = RibbonFilter.build([], 10)
    assert empty.size_bytes == 0 and not empty.might_contain_many(make_keys(1000)).any()
    empty.save(tmp_path / "e.blm")
    assert filters.open(tmp_path / "e.blm") == empty
    assert filters.from_bytes(empty.to_bytes()) == empty


def test_static_and_bad_parameters():
    f = filters.build("ribbon:8", ["a"])
    with pytest.raises(errors.StaticFilterError):
        f.add("b")
    with pytest.raises(errors.StaticFilterError):
        filters.create("ribbon:8", capacity=10)
    for kwargs in ({"bits_per_key": 10, "fpr": 0.01}, {"fpr": 1.5}, {"bits_per_key": float("nan")},
                   {"slots_per_key": 0}, {"max_seeds": 0}, {"max_seeds": 2.5}):
        with pytest.raises(errors.InvalidArgument):
            RibbonFilter.build([1, 2], **kwargs)


def test_model_and_stats():
    f = RibbonFilter.build(make_keys(10_000), 10)
    s = f.stats()
    assert s["result_columns"] == (6, 7) and s["bloom_equivalent_bits_per_key"] == 10.0
    assert s["target_fpr"] == pytest.approx(fm.cache_local_fpr(10, 6))
    assert RibbonFilter.expected_fpr(7.05) == pytest.approx(0.0095, rel=0.06)
    assert default_slots_per_key(126_506) == pytest.approx(1.036)


@pytest.mark.slow
def test_million_keys_banding_and_accuracy():
    n, absent = 1_000_000, 10_000_000
    keys = make_keys(n)
    r = filters.build("ribbon:10", keys)
    b = filters.build("blocked:10", keys)
    assert r.might_contain_many(keys).all()
    assert r.bits_per_key < 7.15 and 1 - r.num_bits / b.num_bits >= 0.28
    probes = make_keys(absent, offset=1 << 40)
    fp_r = r.might_contain_many(probes).mean()
    fp_b = b.might_contain_many(probes).mean()
    assert fp_r <= 1.03 * fp_b
    assert abs(fp_r / r.estimated_fpr() - 1) < 0.03
