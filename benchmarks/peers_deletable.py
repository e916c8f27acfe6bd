"""Deletable filters next to their Python peers, measured in the same run.

    PYTHONPATH=src python benchmarks/peers_deletable.py --keys 200000 --py-keys 20000

* ``counting`` (bloomdb, 4-bit counters in cache lines) vs fastbloom-rs ``CountingBloomFilter``
  (Rust, 4-bit counters, standard layout) at about the same FP rate (~1%);
* ``cuckoo:8/12/16`` (bloomdb) vs pyprobables ``CuckooFilter`` (pure Python; fingerprint sizes
  in whole bytes: its default 4, and 2; 1 byte holds only 256 keys in pyprobables 0.6).

Every operation is timed over the same list of ``str`` keys (what the peers take), best of
``--repeats``; ours also from a numpy ``uint64`` array (its zero-copy path). Reported per key:
ns for add / query of present keys / query of absent keys / remove of half the keys, the FP rate
measured on absent keys, false negatives after the removes (must be 0), and bytes per key of
the serialised filter. pyprobables is pure Python, so it runs on ``--py-keys`` keys only.
Prints a Markdown table (for docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from bloomdb import filters
from bloomdb.bench.filter_bench import make_keys
from bloomdb.filters.cuckoo import num_buckets_for


def best_of(fn, repeats, setup=None):
    """Best wall time of ``fn(state)`` over ``repeats`` runs; ``setup()`` (untimed) makes the state."""
    best = float("inf")
    out = None
    for _ in range(repeats):
        state = setup() if setup else None
        t0 = time.perf_counter()
        out = fn(state)
        best = min(best, time.perf_counter() - t0)
        last = state
    return best, out, last


def str_keys(n, offset=0):
    return [f"user:{(i * 2654435761) % (1 << 61)}" for i in range(offset, offset + n)]


def row(name, n, t_add, t_qp, t_qa, absent, fps, t_rm, n_rm, false_neg, nbytes):
    return {
        "filter": name,
        "keys": n,
        "add ns": t_add / n * 1e9,
        "query+ ns": t_qp / n * 1e9,
        "query- ns": t_qa / absent * 1e9,
        "remove ns": t_rm / n_rm * 1e9,
        "FPR %": 100.0 * fps / absent,
        "false neg": false_neg,
        "bytes/key": nbytes / n,
    }


def ours(spec, keys, absent, repeats, label=None):
    n = len(keys)
    t_add, _, f = best_of(lambda f: f.add_many(keys), repeats, lambda: filters.create(spec, capacity=n))
    t_qp, hit, _ = best_of(lambda _: f.might_contain_many(keys), repeats)
    assert hit.all(), f"{spec}: false negative"
    t_qa, fp, _ = best_of(lambda _: f.might_contain_many(absent), repeats)
    half = keys[: n // 2]

    def setup():
        g = f.copy()
        return g

    t_rm, _, g = best_of(lambda g: g.remove_many(half), repeats, setup)
    false_neg = int((~g.might_contain_many(keys[n // 2 :])).sum())
    return row(label or f"bloomdb {spec}", n, t_add, t_qp, t_qa, len(absent), int(fp.sum()),
               t_rm, len(half), false_neg, len(f.to_bytes()))


def fastbloom_counting(keys, absent, repeats, fpr):
    from fastbloom_rs import CountingBloomFilter

    n = len(keys)
    t_add, _, f = best_of(lambda f: f.add_str_batch(keys), repeats, lambda: CountingBloomFilter(n, fpr))
    t_qp, hit, _ = best_of(lambda _: f.contains_str_batch(keys), repeats)
    assert all(hit)
    t_qa, fp, _ = best_of(lambda _: f.contains_str_batch(absent), repeats)
    half = keys[: n // 2]

    def remove(g):  # no batch remove in fastbloom-rs
        for k in half:
            g.remove_str(k)

    t_rm, _, g = best_of(remove, repeats, lambda: _refill(n, fpr, keys))
    false_neg = sum(1 for x in g.contains_str_batch(keys[n // 2 :]) if not x)
    return row(f"fastbloom-rs CountingBloomFilter(p={fpr})", n, t_add, t_qp, t_qa, len(absent), sum(fp),
               t_rm, len(half), false_neg, len(f.get_bytes()))


def _refill(n, fpr, keys):
    from fastbloom_rs import CountingBloomFilter

    g = CountingBloomFilter(n, fpr)
    g.add_str_batch(keys)
    return g


def pyprobables_cuckoo(keys, absent, repeats, finger_size):
    from probables import CuckooFilter

    n = len(keys)
    buckets = max(1, int(n / 4 / 0.95) + 1)  # ~95% load, as ours at 1,000,000 keys

    def make():
        return CuckooFilter(capacity=buckets, finger_size=finger_size)

    def add(c):
        for k in keys:
            c.add(k)

    t_add, _, c = best_of(add, repeats, make)
    t_qp, hit, _ = best_of(lambda _: [c.check(k) for k in keys], repeats)
    missing = sum(1 for x in hit if not x)
    t_qa, fp, _ = best_of(lambda _: [c.check(k) for k in absent], repeats)
    half = keys[: n // 2]

    def filled():
        g = make()
        add(g)
        return g

    def remove(g):
        for k in half:
            g.remove(k)

    t_rm, _, g = best_of(remove, repeats, filled)
    false_neg = missing + sum(1 for k in keys[n // 2 :] if not g.check(k))
    return row(f"pyprobables CuckooFilter({8 * finger_size}-bit)", n, t_add, t_qp, t_qa, len(absent), sum(fp),
               t_rm, len(half), false_neg, len(bytes(c)))


def markdown(rows):
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--py-keys", type=int, default=20_000, help="keys for the pure-Python peer")
    ap.add_argument("--absent", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    n = args.keys
    keys, absent = str_keys(n), str_keys(args.absent, offset=1 << 40)
    ints, absent_ints = make_keys(n), make_keys(args.absent, offset=1 << 40)
    # cuckoo holds all n keys at the load our sizing gives (1,000,000 keys: 95.4% of 2^18 x 4 slots)
    n_ck = n
    load = n / (4 * num_buckets_for(n))
    ck_keys = keys[:n_ck]

    for spec in ("counting:4", "cuckoo:8"):  # JIT warm-up, left out of the figures
        ours(spec, keys[:64], absent[:64], 1)

    rows = [
        ours("counting:40", keys, absent, args.repeats),
        ours("counting:40", ints, absent_ints, args.repeats, "bloomdb counting:40 (uint64 keys)"),
        fastbloom_counting(keys, absent, args.repeats, 0.01),
    ]
    for f in (8, 12, 16):
        rows.append(ours(f"cuckoo:{f}", ck_keys, absent, args.repeats))
    rows.append(ours("cuckoo:12", ints[:n_ck], absent_ints, args.repeats, "bloomdb cuckoo:12 (uint64 keys)"))
    pk = args.py_keys
    py_absent = absent[: max(pk, 10_000) * 5]
    for fs in (4, 2):  # 4 bytes is pyprobables' default; 1 byte is broken (256 distinct fingerprints)
        rows.append(pyprobables_cuckoo(ck_keys[:pk], py_absent, 1, fs))
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{n} keys (cuckoo load {load:.1%}; pyprobables {min(pk, n_ck)} keys), {args.absent} absent probes")
    print(markdown(rows))


if __name__ == "__main__":
    main()
