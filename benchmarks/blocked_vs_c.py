"""bloomdb's `blocked` kernels against a plain C loop of the same algorithm, in one run.

    python benchmarks/blocked_vs_c.py [--keys 1000000,10000000] [--bits-per-key 10]

Compiles `blocked_loop.c` with gcc -O3 -march=native (needs gcc), runs it and bloomdb's batch
add / query over the same uint64 keys (`make_keys(n, "int")`), checks both filters hold the same
bytes, and prints ns/key side by side with the ratio (C time / bloomdb time; > 1 = bloomdb faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from bloomdb import filters
from bloomdb.bench.filter_bench import best_of, make_keys

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_c() -> str:
    exe = os.path.join(tempfile.gettempdir(), "bloomdb_blocked_loop")
    subprocess.run(["gcc", "-O3", "-march=native", "-o", exe, os.path.join(HERE, "blocked_loop.c")], check=True)
    return exe


def bloomdb_run(n: int, bpk: float) -> dict:
    keys = make_keys(n, "int")
    absent = make_keys(n, "int", offset=1 << 40)
    warm = filters.create(f"blocked:{bpk:g}", capacity=100)
    warm.add_many(keys[:100])
    warm.might_contain_many(keys[:100])
    holder = {}

    def build():
        holder["f"] = f = filters.create(f"blocked:{bpk:g}", capacity=n)
        f.add_many(keys)

    add = best_of(build, 3)
    f = holder["f"]
    q = best_of(lambda: f.might_contain_many(keys), 3)
    a = best_of(lambda: f.might_contain_many(absent), 3)
    return {"keys": n, "add_ns": add / n * 1e9, "query_present_ns": q / n * 1e9, "query_absent_ns": a / n * 1e9,
            "fpr": float(f.might_contain_many(absent).mean()), "filter": f}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="1000000,10000000")
    ap.add_argument("--bits-per-key", type=float, default=10.0)
    args = ap.parse_args()
    exe = compile_c()
    print(f"{'keys':>10} {'impl':<10} {'add ns':>8} {'q+ ns':>8} {'q- ns':>8} {'FPR %':>8}")
    for n in [int(x) for x in args.keys.split(",")]:
        out = os.path.join(tempfile.gettempdir(), "bloomdb_c_filter.bin")
        c = json.loads(subprocess.run([exe, str(n), str(args.bits_per_key), out], check=True,
                                      capture_output=True, text=True).stdout)
        b = bloomdb_run(n, args.bits_per_key)
        same = np.array_equal(np.fromfile(out, dtype=np.uint8), b.pop("filter")._payload())
        for name, r in (("C -O3", c), ("bloomdb", b)):
            print(f"{n:>10} {name:<10} {r['add_ns']:>8.2f} {r['query_present_ns']:>8.2f} {r['query_absent_ns']:>8.2f} {100 * r['fpr']:>8.4f}")
        print(f"{n:>10} {'C/bloomdb':<10} {c['add_ns'] / b['add_ns']:>8.2f} {c['query_present_ns'] / b['query_present_ns']:>8.2f} "
              f"{c['query_absent_ns'] / b['query_absent_ns']:>8.2f}   identical filter bytes: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
