"""A filter created for many keys holds memory only where keys were written: its zeroed buffer
comes from calloc (fresh zero pages made resident on first write: 4 KiB, or 2 MiB where numpy
asked for transparent huge pages), so ``bloomdb calc --keys 1e9`` and a new big filter do not fill
gigabytes up front (calc took 8.5 GB of
resident memory and 35 s for 10^9 keys before)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHILD = r"""
import resource, sys
import numpy as np
from bloomdb import filters
spec = sys.argv[1]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
f = filters.create(spec, capacity=400_000_000)  # ~500 MB of bits
keys = np.arange(4, dtype=np.uint64)  # each first write may fault in a 2 MiB page (numpy asks for huge pages)
f.add_many(keys)
assert f.might_contain_many(keys).all() and not f.might_contain_many(keys + np.uint64(10**12)).all()
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(f.size_bytes, grown * 1024)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB and calloc'd zero pages: Linux")
@pytest.mark.parametrize("spec", ["standard:10", "blocked:10", "sbbf:10", "cuckoo:12"])
def test_a_big_new_filter_holds_only_the_pages_it_wrote(spec):
    out = subprocess.run([sys.executable, "-c", CHILD, spec], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    size, grown = map(int, out.stdout.split())
    assert size > 400_000_000 and grown < size // 4, (size, grown)


def test_calc_of_a_billion_keys_fills_no_filter():
    code = ("import resource; from bloomdb.bench.calc import calculate; calculate(1_000_000_000, 0.01); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) < 1_000_000_000  # each family's filter for 1e9 keys is 1.2 GB or more
