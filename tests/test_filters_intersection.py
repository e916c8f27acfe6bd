"""Intersection ``a & b`` of same-shape bit-array Bloom filters (issue 13, part 3)."""

from __future__ import annotations

import numpy as np
import pytest

from bloomdb import errors, filters
from filter_families import all_families, make_filled

BIT_FAMILIES = ["standard", "blocked", "register", "sbbf"]


def _new(name, capacity=20_000):
    cls = filters.family(name)
    return filters.create(cls.example_spec or name, capacity=capacity)


@pytest.mark.parametrize("name", BIT_FAMILIES)
def test_and_holds_the_common_keys_and_lowers_the_fp_rate(name):
    a, b = _new(name), _new(name)
    common = np.arange(0, 5000, dtype=np.uint64)
    a.add_many(np.concatenate([common, np.arange(10**6, 10**6 + 15_000, dtype=np.uint64)]))
    b.add_many(np.concatenate([common, np.arange(2 * 10**6, 2 * 10**6 + 15_000, dtype=np.uint64)]))
    i = a & b
    assert i.might_contain_many(common).all()
    absent = np.arange(1 << 40, (1 << 40) + 200_000, dtype=np.uint64)
    fp_i = i.might_contain_many(absent).mean()
    assert fp_i <= min(a.might_contain_many(absent).mean(), b.might_contain_many(absent).mean())
    assert i.count == 20_000 and a.count == 20_000
    only_a = np.arange(10**6, 10**6 + 15_000, dtype=np.uint64)
    assert i.might_contain_many(only_a).mean() < 0.5  # keys of one side mostly drop out
    before = a.to_bytes()
    a &= b
    assert a == i and a.to_bytes() != before


@pytest.mark.parametrize("name", all_families())
def test_other_families_and_shapes_are_incompatible(name):
    f = make_filled(name, [f"k{i}" for i in range(100)])
    if name in BIT_FAMILIES:
        with pytest.raises(errors.IncompatibleFilters):
            f & _new(name, capacity=1_000_000)  # another shape
        with pytest.raises(errors.IncompatibleFilters):
            f & filters.create("standard:7" if name != "standard" else "blocked:10", capacity=100)
        return
    before = f.to_bytes()
    with pytest.raises(errors.IncompatibleFilters):
        f & f.copy()
    with pytest.raises((errors.IncompatibleFilters, errors.StaticFilterError)):  # static: read-only first
        f &= f.copy()
    assert f.to_bytes() == before
