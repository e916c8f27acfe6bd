"""Growing filters at a 1% target: bloomdb ``scalable`` against pyprobables' ExpandingBloomFilter.

    python benchmarks/scalable_growth.py [--keys 1000,10000,100000,1000000] [--fpr 0.01] [--absent 200000]

For every key count both start at 1024 keys and grow as keys arrive (bloomdb: levels of 2x the
keys at 0.85x the FP rate, Almeida et al. 2007; pyprobables: another filter of the first one's
size and FP rate each time the last is full; "RedisBloom scheme (model)": RedisBloom's EXPANSION 2
and 0.5 tightening with textbook sub-filters, computed, not run). Printed: memory per key (bits of filter state per
key added), the number of sub-filters, the measured FP rate over ``--absent`` keys never added
and the target, and add time per key (bloomdb one ``add_many`` of a numpy array, pyprobables one
``add`` per key: its API; its FP rate over the first 20,000 absent keys). ``blocked`` sized for the final count is the yardstick. pyprobables
is in the ``peers`` extra; without it its rows are skipped with a note.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bloomdb import filters


#: pyprobables' FP rate is measured over this many of the absent keys (its checks are slow).
PEER_ABSENT = 20_000


def bloomdb_row(n: int, fpr: float, absent: np.ndarray) -> tuple:
    keys = np.arange(n, dtype=np.uint64)
    f = filters.create(f"scalable:{fpr}", initial_capacity=1024)
    t0 = time.perf_counter()
    f.add_many(keys)
    add_ns = (time.perf_counter() - t0) / n * 1e9
    assert f.might_contain_many(keys).all()
    return ("bloomdb scalable", n, f.num_bits / n, len(f.levels), f.might_contain_many(absent).mean(), add_ns)


def redisbloom_row(n: int, fpr: float, absent: np.ndarray) -> tuple:
    """RedisBloom's scaling (a model, not its code: no Redis server here): sub-filter i holds
    1024 * 2^i keys (EXPANSION 2) at FP rate ``fpr * 0.5^i`` (its fixed tightening), each an
    optimally sized textbook Bloom filter (-ln p / ln^2 2 bits per key, as RedisBloom sizes them).
    The FP column is the model's compound rate with every used level full (an upper bound; no
    absent keys measured);
    add time is not modelled (NaN)."""
    import math

    bits, left, level, miss = 0.0, n, 0, 1.0
    while left > 0:
        cap, p = 1024 * 2**level, fpr * 0.5**level
        bits += cap * -math.log(p) / math.log(2) ** 2
        miss *= 1 - p  # every used level counted as full: an upper bound on the compound FP rate
        left -= min(cap, left)
        level += 1
    return ("RedisBloom scheme (model)", n, bits / n, level, 1 - miss, float("nan"))


def blocked_row(n: int, fpr: float, absent: np.ndarray) -> tuple:
    f = filters.create("blocked", capacity=n, fpr=fpr)
    t0 = time.perf_counter()
    f.add_many(np.arange(n, dtype=np.uint64))
    add_ns = (time.perf_counter() - t0) / n * 1e9
    return ("blocked (final n)", n, f.num_bits / n, 1, f.might_contain_many(absent).mean(), add_ns)


def pyprobables_row(n: int, fpr: float, absent: np.ndarray) -> tuple | None:
    try:
        from probables import ExpandingBloomFilter
    except ImportError:
        return None
    f = ExpandingBloomFilter(est_elements=1024, false_positive_rate=fpr)
    keys = [str(i) for i in range(n)]
    t0 = time.perf_counter()
    for k in keys:
        f.add(k)
    add_ns = (time.perf_counter() - t0) / n * 1e9
    bits = sum(b.number_bits for b in f._blooms)
    probe = absent[:PEER_ABSENT]  # a check walks every sub-filter in Python: ~1000 at 1M keys
    fps = sum(f.check(str(int(k))) for k in probe)
    return ("pyprobables Expanding", n, bits / n, len(f._blooms), fps / len(probe), add_ns)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keys", default="1000,10000,100000,1000000")
    p.add_argument("--fpr", type=float, default=0.01)
    p.add_argument("--absent", type=int, default=200_000)
    args = p.parse_args()
    filters.warmup(["scalable", "blocked"])
    absent = np.arange(1 << 40, (1 << 40) + args.absent, dtype=np.uint64)
    print(f"target FP rate {args.fpr:g}; measured over {args.absent:,} absent keys")
    print(f"{'filter':<24}{'keys':>10}{'bits/key':>10}{'filters':>9}{'FPR %':>9}{'add ns/key':>12}")
    missing = False
    for n in (int(x) for x in args.keys.split(",")):
        for fn in (bloomdb_row, redisbloom_row, pyprobables_row, blocked_row):
            row = fn(n, args.fpr, absent)
            if row is None:
                missing = True
                continue
            name, keys, bpk, nf, fp, ns = row
            print(f"{name:<24}{keys:>10,}{bpk:>10.2f}{nf:>9}{100 * fp:>9.3f}{ns:>12.1f}")
    if missing:
        print("pyprobables is not installed (pip install -e '.[peers]'): its rows are left out")


if __name__ == "__main__":
    main()
