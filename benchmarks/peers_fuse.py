"""bloomdb's binary fuse filters against the PyPI binary fuse packages, in one run.

    python benchmarks/peers_fuse.py [--keys 1000000,10000000] [--key-type int,str] [--repeats 2]
    python benchmarks/peers_fuse.py --construction [--keys 10000000] [--repeats 3]

Peers (installed with `pip install -e '.[peers]'`): pyfusefilter (C, FastFilter/xor_singleheader
through cffi; keys go through Python's ``hash()``) and binaryfuse (Rust; integer, str or bytes
keys). Every filter is built from the same keys and queried with the same present and absent
keys (binaryfuse gets integer keys as 8-byte strings: it loses most
random 64-bit ints it was built from); ``blocked:10`` is in the table as the yardstick. Figures: build and query ns/key (the
conversion of the input included: each library gets the form its API takes — bloomdb numpy /
pyarrow arrays, the peers Python lists, and they answer one key per call), measured FPR and
bits/key. Libraries that are not installed are skipped with a note.

``--construction`` times the construction alone, with no Python objects in it: every builder gets
the same array of random 64-bit hashes — bloomdb's ``Fuse8.build_hashes`` and
``blocked:10``'s ``add_hashes`` (the yardstick) take the numpy array, the C reference in
pyfusefilter (``binary_fuse8_allocate`` + ``binary_fuse8_populate``) gets the same buffer through
cffi (binaryfuse has no API that takes hashes: it is left out). Each is run ``--repeats`` times,
alternating, and the best wall and CPU time (``time.process_time``: less moved by a loaded
machine) are printed per key, with the ratios to bloomdb fuse8.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from bloomdb import filters
from bloomdb.bench.filter_bench import make_keys
from peers import Impl, measure


class Bloomdb(Impl):
    """bloomdb given numpy / pyarrow arrays (its native batch form)."""

    def __init__(self, spec):
        self.spec = spec
        self.name = f"bloomdb {spec}"

    def build(self, keys, n, fpr=None):
        return filters.build(self.spec, keys)

    def query(self, f, keys):
        return f.might_contain_many(keys)

    def nbytes(self, f):
        return f.size_bytes


def _pylist(keys):
    return keys.tolist() if isinstance(keys, np.ndarray) else keys.to_pylist()


class PerKeyPeer(Impl):
    """A peer built from a Python list and asked one key per call."""

    def query(self, f, keys):
        ks = _pylist(keys)
        return np.fromiter(map(f.contains, ks), dtype=bool, count=len(ks))


class PyFuseFilter(PerKeyPeer):
    def __init__(self, bits):
        import pyfusefilter
        import pyfusefilter.pyfusefilter as impl
        import xxhash

        try:
            impl.hash("probe")
        except TypeError:
            # pyfusefilter 1.3 hashes xxh64(str(key)), which xxhash >= 4 refuses (str must be
            # encoded): the same hash of the UTF-8 bytes, as it computes under xxhash 3
            impl.hash = lambda item: xxhash.xxh64_intdigest(str(item).encode())
        self.cls = getattr(pyfusefilter, f"Fuse{bits}")
        self.name = f"pyfusefilter Fuse{bits} (list)"

    def build(self, keys, n, fpr=None):
        return self.cls(_pylist(keys))

    def nbytes(self, f):
        return f.size_in_bytes()


class BinaryFusePeer(PerKeyPeer):
    def __init__(self, bits):
        import binary_fuse

        self.cls = getattr(binary_fuse, f"BinaryFuse{bits}")
        self.name = f"binaryfuse BinaryFuse{bits} (list)"

    @staticmethod
    def _keys(keys):
        """binaryfuse 0.1.2 answers False for most of the random 64-bit ints it was built from
        (19 of 20 in a quick check): integer keys go in as their 8 little-endian bytes."""
        if isinstance(keys, np.ndarray):
            return [bytes(row) for row in keys.view(np.uint8).reshape(-1, 8)]
        return keys.to_pylist()

    def build(self, keys, n, fpr=None):
        return self.cls(self._keys(keys))

    def query(self, f, keys):
        ks = self._keys(keys)
        return np.fromiter(map(f.contains, ks), dtype=bool, count=len(ks))

    def nbytes(self, f):
        return f.memory_usage_bytes()


def impls():
    out = [Bloomdb("blocked:10"), Bloomdb("fuse8"), Bloomdb("fuse16")]
    for cls in (PyFuseFilter, BinaryFusePeer):
        for bits in (8, 16):
            try:
                out.append(cls(bits))
            except ImportError as exc:
                print(f"  (skipped {cls.__name__}: {exc})")
    return out


def construction_builders(n):
    """``[(name, build(hashes))]``: the builders that take a uint64 hash array."""
    from bloomdb.filters.fuse import Fuse8

    def blocked(h):
        f = filters.create("blocked:10", capacity=n)
        f.add_hashes(h)

    out = [("bloomdb fuse8 (build_hashes)", Fuse8.build_hashes), ("bloomdb blocked:10 (add_hashes)", blocked)]
    try:
        from pyfusefilter.pyfusefilter import ffi, lib
    except ImportError as exc:
        print(f"  (skipped the C reference: {exc})")
        return out

    def reference(h):
        f = ffi.new("binary_fuse8_t *")
        if not lib.binary_fuse8_allocate(len(h), f):
            raise MemoryError("binary_fuse8_allocate")
        try:
            if not lib.binary_fuse8_populate(ffi.from_buffer("uint64_t[]", h), len(h), f):
                raise RuntimeError("binary_fuse8_populate failed")
        finally:
            lib.binary_fuse8_free(f)

    out.append(("C reference binary_fuse8_populate (pyfusefilter)", reference))
    return out


def construction(n, repeats):
    """Print each builder's best wall / CPU ns per key over the same ``n`` random hashes."""
    h = np.random.default_rng(1).integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    builders = construction_builders(n)
    wall = {name: float("inf") for name, _ in builders}
    cpu = dict(wall)
    for name, build in builders:
        build(h[:1000])  # warm-up (JIT)
    for _ in range(repeats):
        for name, build in builders:
            t0, c0 = time.perf_counter(), time.process_time()
            build(h)
            wall[name] = min(wall[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
    ref = builders[0][0]
    print(f"{'keys':>9} {'builder':<50} {'wall ns':>8} {'cpu ns':>8} {'wall x':>7} {'cpu x':>7}")
    for name, _ in builders:
        print(f"{n:>9} {name:<50} {wall[name] / n * 1e9:>8.1f} {cpu[name] / n * 1e9:>8.1f} "
              f"{wall[name] / wall[ref]:>7.2f} {cpu[name] / cpu[ref]:>7.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="1000000,10000000")
    ap.add_argument("--key-type", default="int,str")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--construction", action="store_true", help="time the construction alone on hashes")
    args = ap.parse_args()
    if args.construction:
        for n in [int(x) for x in args.keys.split(",")]:
            construction(n, args.repeats)
        return 0
    print(f"{'keys':>9} {'type':<4} {'implementation':<36} {'build ns':>9} {'q+ ns':>8} {'q- ns':>8} "
          f"{'FPR %':>8} {'bits/key':>8}")
    for key_type in args.key_type.split(","):
        for n in [int(x) for x in args.keys.split(",")]:
            keys = make_keys(n, key_type)
            absent = make_keys(n, key_type, offset=1 << 40)
            for impl in impls():
                t_add, t_q, t_a, fpr, nbytes = measure(impl, keys, absent, n, None, args.repeats)
                print(f"{n:>9} {key_type:<4} {impl.name:<36} {t_add / n * 1e9:>9.1f} {t_q / n * 1e9:>8.1f} "
                      f"{t_a / n * 1e9:>8.1f} {100 * fpr:>8.4f} {8 * nbytes / n:>8.2f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
