"""bloomdb's standard and blocked filters hold exactly the bits of independent implementations:
a pure-Python model (tests/reference/naive.py, hashing with the xxhash package) and a plain C loop
(benchmarks/blocked_loop.c, compiled here when gcc is available)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bloomdb import filters
from bloomdb.bench.filter_bench import make_keys
from reference import naive

KEYS = [f"key{i}" for i in range(1500)] + list(range(-500, 500)) + [b"", b"\x00\xff", "é" * 7]


@pytest.mark.parametrize("bpk", [3, 10, 16, 23.4])
def test_standard_matches_reference(bpk):
    f = filters.create(f"standard:{bpk}", capacity=len(KEYS))
    f.add_many(KEYS)
    assert f._payload().tobytes() == naive.standard_payload(KEYS, f.num_bits, f.num_probes)


@pytest.mark.parametrize("bpk", [1, 4.5, 10, 16, 20, 40])
def test_blocked_matches_reference(bpk):
    f = filters.create(f"blocked:{bpk}", capacity=len(KEYS))
    for key in KEYS[:100]:
        f.add(key)  # the single-key path
    f.add_many(KEYS[100:])
    expected, k = naive.blocked_payload(KEYS, len(KEYS), bpk)
    assert f.num_probes == k
    assert f._payload().tobytes() == expected


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_blocked_matches_c_loop(tmp_path):
    src = Path(__file__).resolve().parents[1] / "benchmarks" / "blocked_loop.c"
    exe = tmp_path / "blocked_loop"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
    n = 50_000
    out = tmp_path / "filter.bin"
    subprocess.run([str(exe), str(n), "10", str(out)], check=True, capture_output=True)
    f = filters.create("blocked:10", capacity=n)
    f.add_many(make_keys(n, "int"))
    assert np.array_equal(np.fromfile(out, dtype=np.uint8), f._payload())
