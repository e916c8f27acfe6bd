"""The ``scalable`` family (Almeida et al. 2007): grows and keeps its compound FP rate under target."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

from bloomdb import errors, filters
from bloomdb.filters import format as fmt


def test_spec_and_parameters():
    f = filters.create("scalable:0.01", initial_capacity=100, growth=4, tightening=0.8)
    assert f.target_fpr() == 0.01 and len(f.levels) == 1
    assert f.level_plan(0) == (100, pytest.approx(0.01 * 0.2))
    assert f.level_plan(2) == (1600, pytest.approx(0.01 * 0.2 * 0.64))
    assert filters.create("scalable:0.05").level_plan(0)[0] == 1024
    assert filters.create("scalable:0.05", capacity=10).level_plan(0)[0] == 10
    assert fmt.FAMILY_TAGS["scalable"] == 10


@pytest.mark.parametrize(
    "kwargs",
    [
        {"growth": 1.0}, {"growth": 100}, {"growth": "x"}, {"tightening": 1.0}, {"tightening": 0.0},
        {"tightening": float("nan")}, {"initial_capacity": 0}, {"initial_capacity": float("inf")},
        {"capacity": 5, "initial_capacity": 5}, {"fpr": 1e-12}, {"fpr": 0}, {"bogus": 1},
    ],
)
def test_bad_parameters_name_the_bound(kwargs):
    with pytest.raises(errors.InvalidArgument):
        filters.create("scalable", **kwargs)
    with pytest.raises(errors.InvalidArgument):
        filters.create("scalable:x")


def test_grows_keeps_fpr_under_target_and_never_warns():
    f = filters.create("scalable:0.01", initial_capacity=1000, on_full="raise")
    keys = np.arange(200_000, dtype=np.uint64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for chunk in np.array_split(keys, 7):  # batches that straddle level boundaries
            f.add_many(chunk)
    assert f.count == 200_000 and len(f.levels) == 8  # 1000 * (2^8 - 1) = 255,000 >= 200,000
    assert [lv.count for lv in f.levels[:-1]] == [1000 * 2**i for i in range(7)]
    assert f.might_contain_many(keys).all()
    probes = np.arange(1 << 40, (1 << 40) + 400_000, dtype=np.uint64)
    measured = f.might_contain_many(probes).mean()
    assert measured < 0.01 and f.estimated_fpr() < 0.01
    assert measured == pytest.approx(f.estimated_fpr(), rel=0.25)


def test_single_adds_and_strings_cross_levels():
    f = filters.create("scalable:0.02", initial_capacity=10, growth=3)
    keys = [f"key-{i}" for i in range(500)]
    for k in keys:
        f.add(k)
    assert f.might_contain_many(keys).all() and len(f.levels) == 5  # 10+30+90+270 = 400 < 500


def test_round_trips_keep_levels(tmp_path):
    f = filters.create("scalable:0.01", initial_capacity=64)
    f.add_many(range(5000))
    for g in (filters.from_bytes(f.to_bytes()), f.copy()):
        assert g == f and len(g.levels) == len(f.levels) and g.count == 5000
        g.add_many(range(5000, 9000))  # a loaded chain keeps growing
        assert g.might_contain_many(range(9000)).all()
    path = tmp_path / "s.blm"
    f.save(path)
    m = filters.open(path, mmap=True)
    assert m.might_contain_many(range(5000)).all() and m.levels[1]._payload().ctypes.data % 64 == 0
    before = path.read_bytes()
    m.add_many(range(5000, 20_000))  # copy-on-write: the mapped chain grows, the file stays
    assert m.might_contain_many(range(20_000)).all() and path.read_bytes() == before


def test_damaged_level_table_is_corruption():
    f = filters.create("scalable:0.01", initial_capacity=64)
    f.add_many(range(1000))
    params = f._params()
    with pytest.raises(ValueError):
        type(f)._from_parts(params[:-3], f._payload(), f.count)
    with pytest.raises(ValueError):
        type(f)._from_parts(params, f._payload()[:-64], f.count)
    with pytest.raises(ValueError):
        type(f)._from_parts(params, f._payload(), f.count + 1)


def test_union_levelwise_and_refusals():
    a = filters.create("scalable:0.01", initial_capacity=100)
    b = filters.create("scalable:0.01", initial_capacity=100)
    a.add_many(range(150))
    b.add_many(range(1000, 2000))
    u = a | b
    assert u.count == 1150 and len(u.levels) == len(b.levels)
    assert u.might_contain_many(list(range(150)) + list(range(1000, 2000))).all()
    assert u.estimated_fpr() >= max(a.estimated_fpr(), b.estimated_fpr())
    with pytest.raises(errors.IncompatibleFilters):
        a | filters.create("scalable:0.02", initial_capacity=100)
    with pytest.raises(errors.IncompatibleFilters):
        a | filters.create("blocked:10", capacity=100)


def test_concurrent_adds_lose_nothing():
    f = filters.create("scalable:0.01", initial_capacity=100)
    parts = [np.arange(t * 20_000, (t + 1) * 20_000, dtype=np.uint64) for t in range(4)]

    def worker(keys):
        for chunk in np.array_split(keys, 50):
            f.add_many(chunk)

    threads = [threading.Thread(target=worker, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.count == 80_000 and f.might_contain_many(np.concatenate(parts)).all()
    assert sum(lv.count for lv in f.levels) == 80_000


def test_parallel_add_matches_serial():
    keys = np.arange(50_000, dtype=np.uint64)
    a = filters.create("scalable:0.01", initial_capacity=1000)
    b = filters.create("scalable:0.01", initial_capacity=1000)
    a.add_many(keys)
    b.add_many(keys, threads=3)
    assert a == b


def test_payload_parts_serve_size_fill_and_bytes():
    """The chain's state is its levels' buffers: size, fill and the saved payload all read them."""
    f = filters.create("scalable:0.01", initial_capacity=500)
    f.add_many(np.arange(5_000, dtype=np.uint64))
    assert len(f.levels) > 3
    env = fmt.decode(f.to_bytes())
    assert env.payload_length == f.size_bytes == sum(level.size_bytes for level in f.levels)
    payload = np.frombuffer(f.to_bytes(), np.uint8, env.payload_length, env.payload_offset)
    assert f.fill_ratio() == pytest.approx(np.unpackbits(payload).mean())
    assert filters.create("scalable:0.01").capacity >= 1  # no capacity needed: it grows
