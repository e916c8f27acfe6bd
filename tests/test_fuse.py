"""Binary fuse filters (``fuse8``, ``fuse16``; issue 13 part 2): sizing, FP rate, duplicates,
the bounded retry, bytes/mmap/pickle. The generic family suite (test_filters_api.py,
test_lsm_families.py) covers them too, through ``filters.available()``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomdb import errors, filters
from bloomdb.filters import _fuse_kernels as K
from bloomdb.filters import fuse
from bloomdb.filters.fuse import Fuse8, Fuse16, layout_for
from bloomdb.hashing import hash_batch
from bloomdb.keys import to_batches

FAMILIES = ["fuse8", "fuse16"]


def _int_keys(n, offset=0):
    x = np.arange(offset, offset + n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return x ^ (x >> np.uint64(29))


key = st.one_of(st.binary(max_size=24), st.text(max_size=12), st.integers(-(2**63), 2**64 - 1))


@pytest.mark.parametrize("name", FAMILIES)
@settings(max_examples=60, deadline=None)
@given(distinct=st.lists(key, max_size=300), repeats=st.lists(st.integers(0, 299), max_size=300), data=st.data())
def test_no_false_negatives_with_duplicates(name, distinct, repeats, data):
    """Any keys, any number of copies of some of them, in any order: every key answers True."""
    keys = list(distinct) + [distinct[i % len(distinct)] for i in repeats] if distinct else []
    keys = data.draw(st.permutations(keys))
    f = filters.build(name, keys)
    assert f.count == len(keys)
    if keys:
        assert f.might_contain_many(keys).all()
        assert all(f.might_contain(k) for k in keys[:10])


@pytest.mark.parametrize("name", FAMILIES)
def test_many_copies_of_few_keys(name):
    """200 copies of each of 3 keys (cells overflow their 6-bit count on the first try), and
    copies spread through 20K keys (they escape the build's cheap check): both deduplicate."""
    f = filters.build(name, ["a", "b", "c"] * 200)
    assert f.might_contain_many(["a", "b", "c"]).all() and f.stats()["distinct_keys"] == 3
    ints = _int_keys(20_000)
    rng = np.random.default_rng(3)
    keys = np.concatenate([ints, ints[rng.integers(0, 20_000, 5_000)]])
    rng.shuffle(keys)
    f = filters.build(name, keys)
    assert f.might_contain_many(ints).all()
    assert f.count == 25_000 and f.stats()["distinct_keys"] == 20_000


@pytest.mark.parametrize("name", FAMILIES)
def test_empty_and_one_key(name):
    e = filters.build(name, [])
    assert e.size_bytes == 0 and e.count == 0 and e.estimated_fpr() == 0.0
    assert not e.might_contain_many(_int_keys(100)).any() and not e.might_contain("x")
    assert filters.from_bytes(e.to_bytes()) == e
    one = filters.build(name, ["only"])
    assert one.might_contain("only") and one.count == 1
    assert one.might_contain_many(_int_keys(100_000)).mean() < 0.01


@pytest.mark.parametrize("name,bits", [("fuse8", 8), ("fuse16", 16)])
def test_fpr_within_bounds_at_100k_keys(name, bits):
    n, probes = 100_000, 2_000_000
    f = filters.build(name, _int_keys(n))
    assert f.might_contain_many(_int_keys(n)).all()
    p = 2.0**-bits
    assert f.estimated_fpr() == pytest.approx(p, rel=1e-6)
    fp = f.might_contain_many(_int_keys(probes, offset=1 << 40)).sum()
    sigma = (probes * p * (1 - p)) ** 0.5
    assert abs(fp - probes * p) <= 5 * sigma + 3, (fp, probes * p)
    strs = [f"user:{i}" for i in range(n)]
    g = filters.build(name, strs)
    assert g.might_contain_many(strs).all()
    fp = g.might_contain_many([f"other:{i}" for i in range(probes // 4)]).sum()
    assert abs(fp - probes / 4 * p) <= 5 * (probes / 4 * p) ** 0.5 + 3


@pytest.mark.parametrize("n,fuse8_bpk", [(1_000_000, 9.1), (10_000_000, 9.1), (100_000, 9.6)])
def test_layout_meets_the_space_targets(n, fuse8_bpk):
    """The reference's sizing: ~1.125 cells per key from 1M keys on (9.0 / 18.0 bits per key)."""
    seg_len, seg_count = layout_for(n)
    cells = (seg_count + 2) * seg_len
    assert 1.12 <= cells / n and 8 * cells / n <= fuse8_bpk and 16 * cells / n <= 2 * fuse8_bpk
    assert seg_len & (seg_len - 1) == 0 and seg_len <= 1 << 18


def test_built_size_matches_layout():
    f = Fuse16.build(_int_keys(50_000))
    seg_len, seg_count = layout_for(50_000)
    assert f.num_bits == 16 * (seg_count + 2) * seg_len
    s = f.stats()
    assert (s["segment_length"], s["segment_count"], s["fingerprint_bits"]) == (seg_len, seg_count, 16)
    assert s["num_probes"] == 3 and s["failed_attempts"] == 0 and s["distinct_keys"] == 50_000


@pytest.mark.parametrize("name", FAMILIES)
def test_bytes_are_a_function_of_the_key_set(name):
    keys = _int_keys(30_000)
    a = filters.build(name, keys)
    b = filters.build(name, np.random.default_rng(1).permutation(keys))
    assert a.to_bytes() == b.to_bytes()


@pytest.mark.parametrize("name", FAMILIES)
def test_round_trips_bytes_mmap_pickle(name, tmp_path):
    keys = [f"k{i}" for i in range(5000)]
    f = filters.build(name, keys)
    probe = [f"k{i}" for i in range(0, 40_000, 3)]
    expected = f.might_contain_many(probe)
    for g in (filters.from_bytes(f.to_bytes()), pickle.loads(pickle.dumps(f)), f.copy()):
        assert type(g) is type(f) and g == f and g.stats() == f.stats()
        assert np.array_equal(g.might_contain_many(probe), expected)
    f.save(tmp_path / "f.blm")
    for use_mmap in (True, False):
        h = filters.open(tmp_path / "f.blm", mmap=use_mmap)
        assert np.array_equal(h.might_contain_many(probe), expected)


def test_hash_level_probe_matches_key_probe():
    keys = [f"k{i}" for i in range(2000)]
    probe = keys + [f"x{i}" for i in range(20_000)]
    f = Fuse8.build(keys)
    hashes = np.concatenate([hash_batch(b) for b in to_batches(probe)])
    assert np.array_equal(f.might_contain_hashes(hashes), f.might_contain_many(probe))
    args = f.kernel_args
    assert [K.check_hash(*args, h) for h in hashes[:50]] == list(f.might_contain_many(probe[:50]))
    assert Fuse8.build_hashes(hashes[:2000]) == f


def test_damaged_parameters_are_corruption():
    f = Fuse8.build(_int_keys(1000))
    data = bytearray(f.to_bytes())
    bad = Fuse16._from_parts  # a fuse8 payload read with fuse16's cell width is inconsistent
    with pytest.raises(ValueError):
        bad(f._params(), f._payload(), f.count)
    with pytest.raises(ValueError):
        Fuse8._from_parts(f._params(), f._payload()[:-64], f.count)
    data[-1] ^= 1
    with pytest.raises(errors.CorruptionError):
        filters.from_bytes(bytes(data))


def test_peeling_failure_raises_after_bounded_attempts(monkeypatch):
    calls = []
    real = K.populate

    def failing(*args):
        calls.append(args[1])
        return -1, 0

    monkeypatch.setattr(K, "populate", failing)
    with pytest.raises(errors.FilterBuildError, match="all 7 seeds"):
        Fuse8.build(_int_keys(1000), max_attempts=7)
    assert len(calls) == 7 and len(set(calls)) == 7  # a new seed each time
    calls.clear()
    flaky = iter([(-1, 0), (-1, 0)])
    monkeypatch.setattr(K, "populate", lambda *a: next(flaky, None) or real(*a))
    f = Fuse8.build(_int_keys(1000))
    assert f.stats()["failed_attempts"] >= 2 and f.might_contain_many(_int_keys(1000)).all()


def test_retry_after_a_real_failed_attempt(monkeypatch):
    """The build keeps its scratch arrays for the next seed: an attempt that ran all the way
    (counts and XORs left dirty) and then failed must not spoil the next one."""
    real = K.populate
    attempts = []

    def first_fails(h, seed, seg_len, seg_count, fps, fp_mask, *temps):
        attempts.append(seed)
        if len(attempts) > 1:
            return real(h, seed, seg_len, seg_count, fps, fp_mask, *temps)
        stored, dups = real(h, seed, seg_len, seg_count, np.zeros_like(fps), fp_mask, *temps)
        assert stored == len(h)
        return -1, dups

    keys = _int_keys(300_000)
    monkeypatch.setattr(K, "populate", first_fails)
    f = Fuse8.build(keys)
    assert len(attempts) == 2 and f.stats()["failed_attempts"] == 1
    assert f.might_contain_many(keys).all()


def test_large_build_matches_a_small_model():
    """Above the scratch module's map threshold (huge pages) the build is the same filter: every
    key present, FP near 2^-8, and the cells are the XOR of what the model says."""
    keys = _int_keys(1_000_000)
    f = Fuse8.build(keys)
    assert f.might_contain_many(keys).all()
    assert abs(f.might_contain_many(_int_keys(200_000, offset=1 << 40)).mean() - 2**-8) < 0.001
    h = hash_batch(to_batches(keys)[0])
    fps, seed, sl, scl, mask = f.kernel_args
    x = np.array([K.mix(v, seed) for v in h[:2000]], dtype=np.uint64)
    for xi in x:
        h0, h1, h2 = K.cells(xi, sl, scl)
        assert int(fps[h0]) ^ int(fps[h1]) ^ int(fps[h2]) == int(K.fingerprint(xi, mask))


def test_too_few_cells_fail_cleanly():
    with pytest.raises(errors.FilterBuildError, match="failed for all 3 seeds"):
        Fuse8.build(_int_keys(10_000), size_factor=0.9, max_attempts=3)


@pytest.mark.parametrize("bad", [
    dict(max_attempts=0), dict(max_attempts=True), dict(max_attempts=2.0),
    dict(size_factor=0.1), dict(size_factor="1.2"), dict(size_factor=float("nan")),
    dict(bits_per_key=10), dict(fpr=0.01), dict(capacity=10),
])
def test_bad_parameters(bad):
    with pytest.raises(errors.InvalidArgument):
        Fuse8.build([1, 2, 3], **bad)


def test_specs():
    assert filters.build("fuse16:", [1]).family == "fuse16"
    with pytest.raises(errors.InvalidArgument, match="no number"):
        filters.build("fuse8:10", [1, 2])
    with pytest.raises(errors.StaticFilterError):
        filters.create("fuse8", capacity=10)
    f = filters.build("fuse8", [1, 2])
    with pytest.raises(errors.StaticFilterError):
        f.add(3)
    with pytest.raises(errors.StaticFilterError):
        f.union(f)
    assert Fuse8.expected_fpr(9.0) == 2.0**-8 and Fuse16.expected_fpr(18.0) == 2.0**-16
    assert Fuse8.bench_specs([4, 8]) == ["fuse8"] and Fuse16.spec_for_bits_per_key(20) == "fuse16"
    info = {i.name: i for i in filters.available()}
    assert info["fuse8"].static and info["fuse16"].static
    assert fuse.DEFAULT_MAX_ATTEMPTS == 100


def test_equal_fpr_measures_fixed_rate_families_once():
    from bloomdb.bench import equal_fpr as ef

    points = ef.equal_fpr(["blocked", "fuse8", "fuse16"], [1e-2, 1e-3], n=20_000, absent=400_000, steps=4)
    by = {(p.family, p.target_fpr): p for p in points}
    assert by["fuse8", 1e-2].reached and by["fuse8", 1e-2].spec == "fuse8"
    assert by["fuse8", 1e-2].saving > 0 and 9.0 < by["fuse8", 1e-2].bits_per_key < 10.5
    assert not by["fuse8", 1e-3].reached and by["fuse8", 1e-3].fpr > 1e-3
    assert by["fuse16", 1e-3].reached and by["fuse16", 1e-3].over_bound == pytest.approx(
        by["fuse16", 1e-3].bits_per_key / np.log2(1e3))
    text = ef.format_table(points)
    assert "x bound" in text and "fixed above the target" in text


def test_calc_lists_fuse_when_it_reaches_the_target(capsys):
    from bloomdb.bench.calc import calculate

    rows = {r.family: r for r in calculate(1_000_000, 0.01)}
    assert rows["fuse8"].bits == Fuse8.num_bits_for(1_000_000) and rows["fuse8"].bits_per_key <= 9.1
    assert rows["fuse16"].expected_fpr == 2.0**-16 and rows["fuse16"].keys_that_fit == 1_000_000
    rows = {r.family: r for r in calculate(1_000_000, 0.001, size_bytes=1_000_000)}
    assert "fuse8" not in rows  # 0.39% is above 0.1%
    fit = rows["fuse16"].keys_that_fit
    assert Fuse16.num_bits_for(fit) <= 8_000_000 < Fuse16.num_bits_for(fit + 1)
    assert Fuse16.build(_int_keys(3000)).num_bits == Fuse16.num_bits_for(3000)


@pytest.mark.parametrize("name", FAMILIES)
def test_join_pushes_a_fuse_filter_down(tmp_path, name):
    """The join builds a static filter from its build keys and probes it with its own hashes:
    answers match DuckDB's, and the filter drops most non-matching probe rows."""
    import duckdb
    import pyarrow as pa

    from bloomdb import columnar
    from bloomdb.join import hash_join

    rng = np.random.default_rng(5)
    probe = pa.table({"k": rng.integers(0, 200_000, 50_000), "v": rng.integers(0, 100, 50_000)})
    build = pa.table({"k": rng.integers(0, 200_000, 2_000)})  # duplicates included
    columnar.write(tmp_path / "p", probe)
    ref = duckdb.sql("select count(*), sum(v) from probe join build using (k)").fetchall()[0]
    got, st = hash_join(tmp_path / "p", build, on="k", aggregates=["count(*)", "sum(v)"], filter=name,
                        pushdown="on", explain=True)
    assert (got["count(*)"], got["sum(v)"]) == ref
    assert f"filter: {name} (" in str(st) and "rejected 4" in str(st)  # ~49.5K of 50K rows rejected


@pytest.mark.parametrize("spec", ["fuse8", "fuse16", "ribbon:10", "paired:10"])
def test_static_parameters_round_trip_and_mismatches_are_refused(spec):
    """Every static family packs and reads its parameter block the one shared way: the same
    fields back, and a key count that disagrees with the envelope is refused, naming the family."""
    f = filters.build(spec, _int_keys(5_000))
    g = type(f)._from_parts(f._params(), f._payload(), f.count)
    assert g == f and g._params() == f._params()
    assert g.might_contain_many(_int_keys(5_000)).all()
    with pytest.raises(ValueError, match=f"inconsistent {f.family} filter"):
        type(f)._from_parts(f._params(), f._payload(), f.count + 1)
    with pytest.raises(ValueError, match=f"inconsistent {f.family} filter"):
        type(f)._from_parts(f._params(), f._payload()[:-64], f.count)


def test_populate_refuses_short_scratch():
    """The kernel checks its scratch sizes and reports (-2, 0) instead of writing past them (the
    keys' ``x`` go through ``t2hash`` first, which must hold one per key even when the array has
    fewer cells than keys, as with ``size_factor`` < 1)."""
    h = hash_batch(to_batches(_int_keys(1000))[0])
    seg_len, seg_count = layout_for(1000, 0.6)
    cells = (seg_count + 2) * seg_len
    assert cells < 1000
    fps = np.zeros(cells, np.uint8)
    temps = fuse._temporaries(1000, cells)
    short = temps[:3] + (np.zeros(cells, np.uint64),) + temps[4:]
    assert K.populate(h, np.uint64(1), seg_len, seg_count, fps, np.uint64(255), *short) == (-2, 0)
    assert not fps.any()
