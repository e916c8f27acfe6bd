"""The ``register`` family: layout, the Floe post's table, parallel builds, kernel access."""

from __future__ import annotations

import numpy as np
import pytest
import xxhash

from bloomdb import errors, filters
from bloomdb.filters import _register_kernels as K
from bloomdb.filters import math as fm
from bloomdb.filters.register_bloom import RegisterBloom


def _reference_bytes(keys: list[bytes], size_bytes: int, k: int) -> bytes:
    """The layout of docs/formats.md, written out in plain Python."""
    words = [0] * (size_bytes // 4)
    for key in keys:
        h = xxhash.xxh3_64_intdigest(key)
        w = ((h & 0xFFFFFFFF) * len(words)) >> 32
        for j in range(k):
            words[w] |= 1 << ((h >> (32 + 5 * j)) & 31)
    return b"".join(x.to_bytes(4, "little") for x in words)


@pytest.mark.parametrize("k,size", [(1, 4), (2, 1000), (3, 4096), (4, 262144)])
def test_bit_layout_matches_reference_model(k, size):
    keys = [f"key{i}".encode() for i in range(300)] + [i.to_bytes(8, "little") for i in range(300)]
    f = filters.create(f"register:{k}", size_bytes=size)
    f.add_many([x.decode() for x in keys[:300]])
    f.add_many(np.arange(300, dtype=np.uint64))
    assert f._payload().tobytes() == _reference_bytes(keys, size, k)


def test_spec_and_sizing():
    f = filters.create("register:2")
    assert (f.size_bytes, f.num_probes, f.num_bits) == (256 * 1024, 2, 2 * 1024 * 1024)
    assert filters.create("register:2", capacity=10**7).size_bytes == 256 * 1024  # whatever the capacity
    assert filters.create("register:3", size_bytes=64 * 1024).size_bytes == 64 * 1024
    assert filters.create("register:1", size_bytes=12).num_words == 3
    g = filters.create("register:2:8", capacity=1000)
    assert g.size_bytes == 1000 and g.capacity == 1000
    assert filters.create("register").num_probes == 2
    for bad in ("register:0", "register:5", "register:x", "register:2:abc"):
        with pytest.raises(errors.InvalidArgument):
            filters.create(bad)
    for size in (0, 6, -4, 2.0, True):
        with pytest.raises(errors.InvalidArgument):
            filters.create("register:2", size_bytes=size)
    with pytest.raises(errors.InvalidArgument):
        filters.create("register:2:8")  # bits per key needs a capacity
    with pytest.raises(errors.InvalidArgument):
        RegisterBloom(capacity=10, bits_per_key=8, size_bytes=64)


def test_floe_table_formula():
    # n = 256K keys in m = 2M bits: 4 keys per 32-bit word
    assert fm.word_blocked_fpr(4.0, 1) == pytest.approx(0.1175, abs=5e-4)
    assert fm.word_blocked_fpr(4.0, 2) == pytest.approx(0.0569, abs=5e-4)
    # the exact expectation (the post's formula multiplies per-bit marginals: slightly low)
    assert fm.word_blocked_fpr_exact(4.0, 1) == pytest.approx(fm.word_blocked_fpr(4.0, 1), rel=1e-12)
    assert fm.word_blocked_fpr_exact(4.0, 2) == pytest.approx(0.05756, abs=2e-5)
    assert RegisterBloom.expected_fpr(8.0, 2) == pytest.approx(fm.word_blocked_fpr_exact(4.0, 2))
    for k in (2, 3, 4):
        assert fm.word_blocked_fpr_exact(4.0, k) > fm.word_blocked_fpr(4.0, k)


@pytest.mark.parametrize("k,post", [(1, 0.1168), (2, 0.0569)])
def test_floe_table_measured(k, post):
    """The post's table: n = 256K keys, m = 2M bits (the default 256 KiB), k = 1 and 2."""
    f = filters.create(f"register:{k}")
    rng = np.random.default_rng(k)
    keys = rng.integers(0, 2**63, 256 * 1024, dtype=np.uint64)
    f.add_many(keys)
    assert f.might_contain_many(keys).all()
    absent = rng.integers(2**63, 2**64 - 1, 2_000_000, dtype=np.uint64)
    measured = float(f.might_contain_many(absent).mean())
    assert abs(measured - post) <= 0.003
    assert abs(measured - fm.word_blocked_fpr(4.0, k)) <= 0.003  # the formula, +-0.3 points
    assert abs(measured - fm.word_blocked_fpr_exact(4.0, k)) <= 0.001  # 2M probes: sigma ~0.02 points
    assert abs(f.estimated_fpr() - measured) <= 0.001


def _keys_int(n, seed=0):
    return np.random.default_rng(seed).integers(0, 2**64 - 1, n, dtype=np.uint64)


def test_parallel_add_many_public():
    ints = _keys_int(50_000, 5)
    a = filters.create("register:2")
    a.add_many(ints, threads=4)
    b = filters.create("register:2")
    b.add_many(ints)
    assert a.to_bytes() == b.to_bytes() and a.count == 50_000
    assert a.might_contain_many(ints).all()
    for bad in (0, -1, 2.5, "2", True):
        with pytest.raises(errors.InvalidArgument):
            a.add_many(ints[:10], threads=bad)
    assert a.count == 50_000


def test_kernel_level_probe_matches_batch():
    f = filters.create("register:2")
    keys = _keys_int(5000, 9)
    f.add_many(keys[:2500])
    h = np.array([xxhash.xxh3_64_intdigest(int(x).to_bytes(8, "little")) for x in keys], dtype=np.uint64)
    w32, nw, k = f.kernel_args
    single = np.array([K.check_hash(w32, nw, k, x) for x in h])
    assert np.array_equal(single, f.might_contain_hashes(h))
    assert np.array_equal(single, f.might_contain_many(keys))
    assert single[:2500].all() and not single[2500:].all()


def test_bench_specs_pick_best_k():
    specs = RegisterBloom.bench_specs([4, 8, 16])
    assert specs == ["register:2:4", "register:4:8", "register:4:16"]  # see the table in docs/formats.md
    for s, b in zip(specs, (4, 8, 16)):
        _, k, bpk = s.split(":")
        assert float(bpk) == b
        exact = [fm.word_blocked_fpr_exact(32 / b, j) for j in range(1, 5)]
        assert exact[int(k) - 1] == min(exact)
        f = filters.create(s, capacity=1000)
        assert f.num_bits == pytest.approx(1000 * b, abs=32)


def test_engine_kernel_can_call_check_hash():
    """An engine's own njit kernel probes the filter through kernel_args + check_hash."""
    from numba import njit

    @njit
    def count_hits(w32, num_words, k, hashes):
        hits = 0
        for i in range(hashes.shape[0]):
            if K.check_hash(w32, num_words, k, hashes[i]):
                hits += 1
        return hits

    f = filters.create("register:2", size_bytes=4096)
    keys = _keys_int(3000, 13)
    f.add_many(keys[:300])
    from bloomdb.hashing import xxh3_64_many

    h = xxh3_64_many(keys)
    assert count_hits(*f.kernel_args, h) == int(f.might_contain_hashes(h).sum())
    assert count_hits(*f.kernel_args, h[:300]) == 300


def test_filter_bench_cli_families(capsys):
    from bloomdb.cli.main import main

    args = ["--keys", "5000", "--absent", "100000", "--repeats", "1"]
    assert main(["filter-bench", "--impl", "register", "--bits-per-key", "8", *args]) == 0
    assert "register:4:8" in capsys.readouterr().out  # a family alone: its bench spec at 8 bits/key
    assert main(["filter-bench", "--sweep", "--families", "register,sbbf,leveldb", "--sweep-bits", "8,12", *args]) == 0
    out = capsys.readouterr().out
    for spec in ("register:4:8", "register:4:12", "sbbf:8", "sbbf:12", "leveldb:8", "leveldb:12"):
        assert spec in out


def test_fixed_size_filter_round_trips_without_capacity(tmp_path):
    import pickle

    f = filters.create("register:3", size_bytes=1000)
    f.add_many([f"k{i}" for i in range(500)])
    assert f.capacity == 500  # no capacity given: the keys added so far
    for g in (filters.from_bytes(f.to_bytes()), pickle.loads(pickle.dumps(f)), f.copy()):
        assert g == f and g.num_probes == 3 and g.size_bytes == 1000 and g.capacity == 500
        assert g.might_contain_many([f"k{i}" for i in range(500)]).all()
    f.save(tmp_path / "r.blm")
    assert filters.open(tmp_path / "r.blm") == f
    u = f | filters.create("register:3", size_bytes=1000)
    assert u == f
    with pytest.raises(errors.IncompatibleFilters):
        f | filters.create("register:2", size_bytes=1000)
