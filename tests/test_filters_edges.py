"""Bad parameters, paths and key forms get bloomdb errors that name the bound (issue 13, part 4)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from bloomdb import errors, filters
from bloomdb.keys import to_batches
from filter_families import all_families

FAMILIES = all_families()


def _make(name, spec=None, **kwargs):
    """``create`` for dynamic families, ``build`` over three keys for static ones."""
    cls = filters.family(name)
    spec = spec or cls.example_spec or name
    if cls.static:
        kwargs.pop("capacity", None)
        return filters.build(spec, [1, 2, 3], **kwargs)
    kwargs.setdefault("capacity", 10)
    return filters.create(spec, **kwargs)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("cap", [float("inf"), float("nan"), -1, 0, 1.5, "10", True, 2**64])
def test_bad_capacity_is_invalid_argument(name, cap):
    if filters.family(name).static:
        pytest.skip("static families take their capacity from the keys")
    with pytest.raises(errors.InvalidArgument, match="capacity"):
        _make(name, capacity=cap)


@pytest.mark.parametrize("name", FAMILIES)
def test_capacity_beyond_memory_says_how_much(name):
    if filters.family(name).static:
        pytest.skip("static families take their capacity from the keys")
    with pytest.raises(errors.InvalidArgument, match=r"exceeds|needs more than|GiB|TiB|must be"):
        _make(name, capacity=10**13)


def test_standard_capacity_beyond_memory_names_the_size():
    with pytest.raises(errors.InvalidArgument, match=r"11\.4 TiB.*memory"):
        filters.create("standard:10", capacity=10**13)


@pytest.mark.parametrize("name", FAMILIES)
def test_unknown_keyword_is_invalid_argument(name):
    with pytest.raises(errors.InvalidArgument, match="bogus"):
        _make(name, bogus=1)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("fpr", [1e-300, 0.0, 1.0, float("nan"), "x", -0.5])
def test_bad_or_unreachable_fpr_is_invalid_argument(name, fpr):
    """Every family refuses an fpr it cannot meet (or does not take) instead of crashing or
    silently capping the size."""
    with pytest.raises(errors.InvalidArgument):
        _make(name, spec=name, fpr=fpr)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("bpk", [float("nan"), -1.0, 0.0, 1e6, "abc"])
def test_bad_bits_per_key_is_invalid_argument(name, bpk):
    with pytest.raises(errors.InvalidArgument):  # a bad value, or a keyword the family lacks
        _make(name, spec=name, bits_per_key=bpk)


@pytest.mark.parametrize("name", FAMILIES)
def test_spec_number_and_keyword_for_the_same_parameter_conflict(name):
    """``create("blocked:10", bits_per_key=20)`` used to drop the keyword silently."""
    cls = filters.family(name)
    spec = cls.example_spec or name
    if ":" not in spec:
        pytest.skip(f"{spec} has no number")
    for key, value in cls.spec_kwargs(spec.split(":", 1)[1]).items():
        with pytest.raises(errors.InvalidArgument, match=key):
            _make(name, **{key: value})


@pytest.mark.parametrize("spec", ["blocked:1000", "paired:1000", "ribbon:1000", "ribbon:90"])
def test_bits_per_key_beyond_the_cap_is_refused(spec):
    with pytest.raises(errors.InvalidArgument, match="100|2\\^-32"):
        if filters.family(spec.split(":")[0]).static:
            filters.build(spec, [1, 2, 3])
        else:
            filters.create(spec, capacity=10)


@pytest.mark.parametrize("name", ["blocked", "counting", "ribbon"])
def test_fpr_1e_20_is_refused_where_the_family_caps(name):
    """blocked (100 bits/key), counting (400) and ribbon (32 columns) silently built a weaker filter."""
    with pytest.raises(errors.InvalidArgument, match="lowest this family reaches"):
        _make(name, spec=name, fpr=1e-20)


@pytest.mark.parametrize("name", ["standard", "blocked", "counting"])
def test_fpr_target_is_met_not_capped(name):
    """A reachable target gives a filter whose model FP is at most the target."""
    for fpr in (0.05, 0.01, 1e-4, 1e-6):
        f = filters.create(name, capacity=10_000, fpr=fpr)
        assert f.expected_fpr(f.num_bits / 10_000, f.num_probes) <= fpr * 1.0001, fpr


def test_standard_fpr_beyond_30_probes_adds_bits():
    f = filters.create("standard", capacity=1000, fpr=1e-20)
    assert f.num_probes == 30
    assert f.expected_fpr(f.num_bits / 1000, 30) <= 1e-20


@pytest.mark.parametrize("fpr", [0.01, 1e-6])
def test_counting_sizing_is_instant(fpr):
    from bloomdb.filters.counting import millibits_for_fpr

    t0 = time.perf_counter()
    mb = millibits_for_fpr(fpr)
    assert time.perf_counter() - t0 < 1.0  # the linear scan took 1.5 s (0.01) to 9 s
    # the bisection finds the same smallest step as a scan over its neighbours would
    from bloomdb.filters import math as fm

    def fp(m):
        return fm.counting_fpr(m / 1000, fm.counting_num_probes(m / 1000))

    assert fp(mb) <= fpr < fp(mb - 40)


def test_sbbf_tiny_fpr_is_invalid_argument_not_zero_division():
    with pytest.raises(errors.InvalidArgument, match="128 MiB"):
        filters.create("sbbf", capacity=10, fpr=1e-300)
    from bloomdb.filters.sbbf import optimal_num_bytes

    assert optimal_num_bytes(10, 1e-300) == 128 * 1024 * 1024  # the Parquet recipe still caps


def test_from_bytes_of_non_bytes_is_invalid_argument():
    for bad in (None, 5, "BLMF", object()):
        with pytest.raises(errors.InvalidArgument, match="bytes-like"):
            filters.from_bytes(bad)


@pytest.mark.parametrize("use_mmap", [True, False])
def test_open_missing_path_or_folder(tmp_path, use_mmap):
    with pytest.raises(errors.FilterFileNotFound) as exc:
        filters.open(tmp_path / "nope.blm", mmap=use_mmap)
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, errors.BloomDBError)
    assert exc.value.filename == str(tmp_path / "nope.blm")
    with pytest.raises(errors.InvalidArgument, match="directory"):
        filters.open(tmp_path, mmap=use_mmap)
    with pytest.raises(errors.InvalidArgument, match="path"):
        filters.open(None, mmap=use_mmap)


def test_s_arrays_are_refused_with_the_reason():
    f = filters.create("blocked:10", capacity=100)
    f.add_many([b"a\x00", b"b"])
    with pytest.raises(errors.KeyTypeError, match=r"trailing NUL.*V2"):
        f.might_contain_many(np.array([b"a\x00", b"b"]))
    with pytest.raises(errors.KeyTypeError):
        f.add_many(np.array([b"c"]))
    assert f.count == 2


def test_v_arrays_keep_every_byte():
    keys = [b"a\x00\x00", b"\x00\x00\x00", b"xyz"]
    arr = np.frombuffer(b"".join(keys), dtype="V3")
    assert to_batches(arr)[0].as_bytes_list() == keys
    f = filters.create("blocked:10", capacity=100)
    f.add_many(keys)
    assert f.might_contain_many(arr).all()
    g = filters.create("blocked:10", capacity=100)
    g.add_many(arr)
    assert g.might_contain_many(keys).all() and g == f
    assert to_batches(np.zeros(0, "V4"))[0].as_bytes_list() == []
