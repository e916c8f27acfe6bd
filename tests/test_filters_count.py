"""``estimated_count()`` (Swamidass & Baldi) for the Bloom families (issue 13, part 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bloomdb import filters

SPECS = ["standard:10", "blocked:10", "register:2:10", "sbbf:10", "counting:40"]


@pytest.mark.parametrize("spec", SPECS)
def test_estimated_count_within_5_percent_at_10_to_90_percent_fill(spec):
    f = filters.create(spec, capacity=20_000, on_full="ignore")
    rng = np.random.default_rng(5)
    keys = rng.permutation(np.arange(1, 400_001, dtype=np.uint64))
    seen, checked = 0, []
    step = 2000
    while f.fill_ratio() < 0.9 and seen < keys.size:
        f.add_many(keys[seen : seen + step])
        seen += step
        fill = f.fill_ratio()
        if 0.1 <= fill <= 0.9:
            assert f.estimated_count() == pytest.approx(seen, rel=0.05), (spec, fill, seen)
            checked.append(fill)
    assert checked and min(checked) < 0.3 and max(checked) > 0.8


def test_duplicates_count_once_and_count_stays_adds():
    f = filters.create("blocked:10", capacity=10_000)
    f.add_many(range(5000))
    f.add_many(range(5000))
    assert f.count == 10_000 and f.estimated_count() == pytest.approx(5000, rel=0.05)


def test_scalable_sums_its_levels():
    f = filters.create("scalable:0.01", initial_capacity=1000)
    f.add_many(range(50_000))
    assert len(f.levels) > 4 and f.estimated_count() == pytest.approx(50_000, rel=0.05)


def test_no_model_is_nan_and_full_is_inf():
    assert math.isnan(filters.create("cuckoo:12", capacity=100).estimated_count())
    f = filters.create("register:1", size_bytes=4, on_full="ignore")
    f.add_many(range(10_000))
    assert f.estimated_count() == math.inf
