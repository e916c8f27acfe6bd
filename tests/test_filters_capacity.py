"""A filter filled past its target warns once or refuses (issue 13, part 1: never silently useless)."""

from __future__ import annotations

import math
import threading
import warnings

import numpy as np
import pytest

from bloomdb import errors, filters
from filter_families import all_families


def _guarded_families():
    out = []
    for name in all_families():
        cls = filters.family(name)
        if cls.static:
            continue
        f = filters.create(cls.example_spec or name, capacity=1000)
        if not math.isnan(f.target_fpr()):
            out.append(name)
    return out


GUARDED = _guarded_families()


def _new(name, capacity=1000, **kwargs):
    cls = filters.family(name)
    return filters.create(cls.example_spec or name, capacity=capacity, **kwargs)


def test_the_bit_families_are_guarded():
    assert {"standard", "blocked", "sbbf", "register", "counting"} <= set(GUARDED)


@pytest.mark.parametrize("name", GUARDED)
def test_one_warning_past_twice_the_target(name):
    f = _new(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f.add_many(np.arange(1000, dtype=np.uint64))  # at capacity: silent
        assert not caught
        for i in range(1, 10):
            f.add_many(np.arange(i * 1000, (i + 1) * 1000, dtype=np.uint64))
        f.add("one more")
    ours = [w for w in caught if issubclass(w.category, errors.CapacityWarning)]
    assert len(ours) == 1 and issubclass(errors.CapacityWarning, UserWarning)
    msg = str(ours[0].message)
    assert name in msg and "2000 keys" in msg and "estimated FP rate" in msg
    assert f.estimated_fpr() > 2 * f.target_fpr()
    assert ours[0].filename == __file__  # points at the caller's add


@pytest.mark.parametrize("name", GUARDED)
def test_on_full_raise_refuses_the_whole_batch(name):
    f = _new(name, on_full="raise")
    f.add_many(np.arange(1000, dtype=np.uint64))
    before = f.to_bytes()
    with pytest.raises(errors.FilterFull) as exc:
        f.add_many(np.arange(1000, 20_000, dtype=np.uint64))
    assert exc.value.added == 0 and "nothing was added" in str(exc.value)
    assert f.to_bytes() == before and f.count == 1000
    # single adds go in up to the limit, then the next one is refused
    with pytest.raises(errors.FilterFull):
        for i in range(100_000):
            f.add(f"k{i}")
    assert f.estimated_fpr() <= 2 * f.target_fpr()
    snapshot = f.to_bytes()
    with pytest.raises(errors.FilterFull):
        f.add("again")
    assert f.to_bytes() == snapshot


def test_on_full_raise_covers_hashes_and_union():
    f = filters.create("blocked:10", capacity=1000, on_full="raise")
    with pytest.raises(errors.FilterFull):
        f.add_hashes(np.arange(5000, dtype=np.uint64) * 0x9E3779B97F4A7C15)
    assert f.count == 0 and f.fill_ratio() == 0
    other = filters.create("blocked:10", capacity=1000, on_full="ignore")
    other.add_many(range(1500))
    f.add_many(range(10_000, 10_200))
    with pytest.raises(errors.FilterFull):
        f |= other
    assert f.count == 200
    with pytest.raises(errors.FilterFull):
        f.union(other)  # the copy keeps on_full
    s = filters.create("sbbf:10", capacity=100, on_full="raise")
    with pytest.raises(errors.FilterFull):
        s.add_hashes(np.arange(5000, dtype=np.uint64))
    assert s.count == 0


def test_on_full_raise_holds_under_threads():
    f = filters.create("blocked:10", capacity=1000, on_full="raise")
    limit = f._guard.limit(f)
    refused = []

    def worker(t):
        for i in range(200):
            try:
                f.add_many([f"t{t}-{i}-{j}" for j in range(10)])
            except errors.FilterFull:
                refused.append(1)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert refused and limit - 10 < f.count <= limit


def test_on_full_values():
    with pytest.raises(errors.InvalidArgument, match="on_full"):
        filters.create("blocked:10", capacity=10, on_full="explode")
    f = filters.create("blocked:10", capacity=10, on_full="ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.add_many(range(1000))
    assert f.copy().on_full == "ignore"
    f.on_full = "raise"
    with pytest.raises(errors.FilterFull):
        f.add(1)
    with pytest.raises(errors.InvalidArgument):
        f.on_full = None


@pytest.mark.parametrize("name", all_families())
def test_estimated_fpr_never_exceeds_one(name):
    cls = filters.family(name)
    if cls.static:
        f = filters.build(cls.example_spec or name, range(5000))
    elif name == "register":
        f = filters.create("register:4", size_bytes=4, on_full="ignore")
        f.add_many(range(100_000))
    else:
        f = filters.create(cls.example_spec or name, capacity=10, on_full="ignore")
        try:
            f.add_many(range(20_000))
        except errors.FilterFull:
            pass  # cuckoo is fixed-size
    assert 0.0 <= f.estimated_fpr() <= 1.0
    assert 0.0 <= f.stats()["estimated_fpr"] <= 1.0
