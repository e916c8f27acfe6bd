"""bloomdb against the Python Bloom-filter libraries users would otherwise pick, in one run.

    python benchmarks/peers.py [--keys 1000000,10000000] [--key-type int,str] [--fpr 0.0096]

Peers (installed with `pip install -e '.[peers]'`): rbloom, fastbloom-rs, pybloomfiltermmap3.
Every filter is sized for the same key count and FP rate as `blocked:10` (0.96%), built from the
same keys and queried with the same present and absent keys. Figures: insert and query ns/key
(conversion of the input included: each library gets the input form its batch API takes), measured
FPR and bytes/key. Libraries that are not installed are skipped with a note.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pyarrow as pa

from bloomdb import filters
from bloomdb.bench.filter_bench import make_keys


def best(fn, repeats):
    t = float("inf")
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


class Impl:
    name = ""

    def build(self, keys, n, fpr): ...
    def query(self, f, keys): ...
    def nbytes(self, f): ...


class BloomdbArray(Impl):
    """bloomdb given numpy / pyarrow arrays (its native batch form)."""

    def __init__(self, spec, form):
        self.spec, self.form = spec, form
        self.name = f"bloomdb {spec} ({form})"

    def _conv(self, keys):
        return keys.tolist() if self.form == "list" else keys

    def build(self, keys, n, fpr):
        f = filters.create(self.spec, capacity=n)
        f.add_many(self._conv(keys))
        return f

    def query(self, f, keys):
        return f.might_contain_many(self._conv(keys))

    def nbytes(self, f):
        return f.size_bytes


class FastBloom(Impl):
    name = "fastbloom-rs (batch API, list)"

    def __init__(self):
        from fastbloom_rs import FilterBuilder

        self.FilterBuilder = FilterBuilder

    def build(self, keys, n, fpr):
        f = self.FilterBuilder(n, fpr).build_bloom_filter()
        if isinstance(keys, np.ndarray):
            f.add_int_batch(keys.view(np.int64).tolist())
        else:
            f.add_str_batch(keys.to_pylist())
        return f

    def query(self, f, keys):
        if isinstance(keys, np.ndarray):
            return np.asarray(f.contains_int_batch(keys.view(np.int64).tolist()))
        return np.asarray(f.contains_str_batch(keys.to_pylist()))

    def nbytes(self, f):
        return len(f.get_bytes())


class RBloom(Impl):
    name = "rbloom (update / in, list)"

    def __init__(self):
        from rbloom import Bloom

        self.Bloom = Bloom

    def build(self, keys, n, fpr):
        f = self.Bloom(n, fpr)
        f.update(keys.tolist() if isinstance(keys, np.ndarray) else keys.to_pylist())
        return f

    def query(self, f, keys):
        ks = keys.tolist() if isinstance(keys, np.ndarray) else keys.to_pylist()
        return np.fromiter(map(f.__contains__, ks), dtype=bool, count=len(ks))

    def nbytes(self, f):
        return f.size_in_bits // 8


class PyBloomMmap(Impl):
    name = "pybloomfiltermmap3 (update / in, list)"

    def __init__(self):
        from pybloomfilter import BloomFilter

        self.BloomFilter = BloomFilter

    def build(self, keys, n, fpr):
        f = self.BloomFilter(n, fpr)
        f.update(keys.view(np.int64).tolist() if isinstance(keys, np.ndarray) else keys.to_pylist())
        return f

    def query(self, f, keys):
        ks = keys.view(np.int64).tolist() if isinstance(keys, np.ndarray) else keys.to_pylist()
        return np.fromiter(map(f.__contains__, ks), dtype=bool, count=len(ks))

    def nbytes(self, f):
        return f.num_bits // 8


def impls(key_type):
    out = [BloomdbArray("blocked:10", "numpy" if key_type == "int" else "arrow"),
           BloomdbArray("blocked:10", "list")]
    for cls in (FastBloom, RBloom, PyBloomMmap):
        try:
            out.append(cls())
        except ImportError as exc:
            print(f"  (skipped {cls.name}: {exc})")
    return out


def measure(impl, keys, absent, n, fpr, repeats):
    """``(build s, present-query s, absent-query s, measured FPR, bytes)`` of one implementation
    (best of ``repeats``, after a warm-up build); a false negative is an AssertionError."""
    impl.build(keys[:1000], 1000, fpr)  # warm-up (JIT, imports)
    t_add, f = best(lambda: impl.build(keys, n, fpr), repeats)
    t_q, present = best(lambda: impl.query(f, keys), repeats)
    assert present.all(), f"{impl.name}: false negative"
    t_a, hits = best(lambda: impl.query(f, absent), repeats)
    return t_add, t_q, t_a, float(hits.mean()), impl.nbytes(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="1000000,10000000")
    ap.add_argument("--key-type", default="int,str")
    ap.add_argument("--fpr", type=float, default=0.0096, help="FP rate the peers are sized for")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    print(f"{'keys':>9} {'type':<4} {'implementation':<42} {'add ns':>8} {'q+ ns':>8} {'q- ns':>8} {'FPR %':>7} {'B/key':>6}")
    for key_type in args.key_type.split(","):
        for n in [int(x) for x in args.keys.split(",")]:
            keys = make_keys(n, key_type)
            absent = make_keys(n, key_type, offset=1 << 40)
            for impl in impls(key_type):
                t_add, t_q, t_a, fpr, nbytes = measure(impl, keys, absent, n, args.fpr, args.repeats)
                print(f"{n:>9} {key_type:<4} {impl.name:<42} {t_add / n * 1e9:>8.1f} {t_q / n * 1e9:>8.1f} "
                      f"{t_a / n * 1e9:>8.1f} {100 * fpr:>7.3f} {nbytes / n:>6.2f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
