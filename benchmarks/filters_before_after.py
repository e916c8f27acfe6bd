"""Single-thread filter speed of this checkout against an older commit, in one process.

    python benchmarks/filters_before_after.py be9f0e4                      # the default specs
    python benchmarks/filters_before_after.py be9f0e4 --specs blocked:10 --repeats 30

The older commit's ``src/bloomdb`` is exported with ``git archive`` into a temporary folder and
imported as the package ``bloomdb_before``, next to this checkout's ``bloomdb``. Every repetition
runs both versions back to back (a fresh filter, ``add_many`` of 1M keys, ``might_contain_many`` of
the same keys), so a loaded machine slows both alike; the best of the repetitions by thread CPU
time is reported. Separate processes on a shared machine drift by ±20% between runs; this by ±3%.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SPECS = "standard:10,blocked:10,register:2:10,sbbf:10,counting:40,cuckoo:12"


def export_before(commit: str, into: str) -> None:
    """``src/bloomdb`` of ``commit`` as the package ``bloomdb_before`` in folder ``into``."""
    archive = os.path.join(into, "src.tar")
    subprocess.run(["git", "-C", REPO, "archive", "-o", archive, commit, "src/bloomdb"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    os.rename(os.path.join(into, "src", "bloomdb"), os.path.join(into, "bloomdb_before"))
    registry = os.path.join(into, "bloomdb_before", "filters", "__init__.py")
    with open(registry) as fh:
        text = fh.read()
    with open(registry, "w") as fh:  # the family modules are listed by absolute name
        fh.write(text.replace('"bloomdb.filters.', '"bloomdb_before.filters.'))


def timed(fn) -> float:
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def compare(before, after, spec: str, keys, repeats: int) -> tuple[tuple[float, float], tuple[float, float]]:
    best = {}
    for mod in (before, after):  # compile / load the kernels outside the timing
        mod.create(spec, capacity=len(keys)).add_many(keys[:100])
    for _ in range(repeats):
        for name, mod in (("before", before), ("after", after)):
            f = mod.create(spec, capacity=len(keys))
            build = timed(lambda: f.add_many(keys))
            query = timed(lambda: f.might_contain_many(keys))
            b, q = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(b, build), min(q, query))
    return best["before"], best["after"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("commit", help="the older commit (e.g. be9f0e4)")
    ap.add_argument("--specs", default=SPECS)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()

    import numpy as np
    import pyarrow as pa

    with tempfile.TemporaryDirectory() as tmp:
        export_before(args.commit, tmp)
        sys.path.insert(0, tmp)
        sys.path.insert(0, os.path.join(REPO, "src"))
        import bloomdb_before.filters as before
        import bloomdb.filters as after

        ints = np.arange(args.keys, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        strs = pa.array([f"user-{i}" for i in range(args.keys)], type=pa.large_string())
        print(f"ms per {args.keys} keys, best of {args.repeats}: before -> after (change)")
        for spec in args.specs.split(","):
            for kind, keys in (("int", ints), ("str", strs)):
                (bb, bq), (ab, aq) = compare(before, after, spec, keys, args.repeats)
                print(f"{spec:14} {kind}  add_many {bb * 1e3:7.2f} -> {ab * 1e3:7.2f} ({100 * (ab / bb - 1):+5.1f}%)"
                      f"  might_contain_many {bq * 1e3:7.2f} -> {aq * 1e3:7.2f} ({100 * (aq / bq - 1):+5.1f}%)",
                      flush=True)


if __name__ == "__main__":
    main()
