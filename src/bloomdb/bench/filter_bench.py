"""filter-bench: build and query speed, memory and measured-vs-expected FP rate of any family.

Like RocksDB's ``filter_bench``: keys are hashed and inserted in batches, present keys are queried
(every answer must be True: a false negative aborts), then a disjoint set of absent keys measures
the FP rate. JIT compile time is measured apart (a first call on a tiny filter) and excluded.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from .. import filters
from ..errors import BloomDBError


class FalseNegative(BloomDBError):
    """A filter answered "absent" for a key it holds: a bug, never acceptable."""


@dataclass
class FilterResult:
    spec: str
    family: str
    keys: int
    key_type: str
    bits_per_key: float
    bytes_per_key: float
    num_probes: int
    build_ns: float
    query_present_ns: float
    query_absent_ns: float
    absent_queries: int
    false_positives: int
    fpr: float
    expected_fpr: float
    jit_s: float

    @property
    def fpr_sigma(self) -> float:
        p = max(self.expected_fpr, 1.0 / max(1, self.absent_queries))
        return math.sqrt(p * (1 - p) / max(1, self.absent_queries))

    def fpr_is_bad(self, factor: float = 1.5) -> bool:
        """Measured FP far above expected: more than ``factor`` x expected + 5 sigma."""
        if not math.isfinite(self.expected_fpr):
            return False
        return self.fpr > factor * self.expected_fpr + 5 * self.fpr_sigma

    def as_dict(self) -> dict:
        return asdict(self)


def make_keys(n: int, key_type: str = "int", seed: int = 0, offset: int = 0):
    """``n`` distinct keys: random uint64 (``int``) or a pyarrow string array (``str``).

    Keys made with different ``offset`` values are disjoint (used for absent-key probes).
    """
    if key_type == "int":
        # a bijective mix of a counter: distinct, random-looking, disjoint across offsets
        x = np.arange(offset, offset + n, dtype=np.uint64)
        x = (x + np.uint64(seed)) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(29)
        return x
    if key_type == "str":
        import pyarrow as pa
        import pyarrow.compute as pc

        ids = pa.array(np.arange(offset, offset + n, dtype=np.int64) * 2654435761 % (1 << 61) + seed)
        return pc.binary_join_element_wise("user:", pc.cast(ids, pa.string()), "")
    raise ValueError(f"key_type must be 'int' or 'str', got {key_type!r}")


def _build(spec: str, keys, n: int):
    cls = filters.family(filters.parse_spec(spec)[0])
    if cls.static:
        return filters.build(spec, keys)
    # a growing family (scalable) starts at its own initial size and grows through its levels
    f = filters.create(spec, capacity=None if getattr(cls, "grows", False) else n)
    f.add_many(keys)
    return f


def best_of(fn, repeats: int) -> float:
    """Shortest wall time of ``repeats`` calls of ``fn`` (seconds)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_one(
    spec: str,
    n: int = 1_000_000,
    key_type: str = "int",
    absent: int | None = None,
    repeats: int = 3,
    seed: int = 0,
) -> FilterResult:
    """Build a ``spec`` filter over ``n`` keys and measure it. Raises FalseNegative on a miss."""
    name = filters.parse_spec(spec)[0]
    absent = absent or max(n, 1_000_000)
    keys = make_keys(n, key_type, seed)
    probes = make_keys(absent, key_type, seed, offset=1 << 40)

    t0 = time.perf_counter()
    warm = _build(spec, make_keys(64, key_type, seed + 1), 64)
    warm.might_contain_many(make_keys(64, key_type, seed + 2))
    jit_s = time.perf_counter() - t0

    holder = {}

    def build():
        holder["f"] = _build(spec, keys, n)

    build_s = best_of(build, repeats)
    f = holder["f"]
    present = {}
    q_present_s = best_of(lambda: present.__setitem__("r", f.might_contain_many(keys)), repeats)
    if not present["r"].all():
        raise FalseNegative(f"{spec}: {int((~present['r']).sum())} of {n} added keys answered absent")
    res = {}
    q_absent_s = best_of(lambda: res.__setitem__("r", f.might_contain_many(probes)), repeats)
    fps = int(res["r"].sum())
    bpk = f.num_bits / n
    # families whose model needs more than (bits/key, k), e.g. cuckoo (f and load), say so
    model = getattr(f, "bench_expected_fpr", None)
    expected = model() if model is not None else type(f).expected_fpr(bpk, f.num_probes)
    return FilterResult(
        spec=spec,
        family=name,
        keys=n,
        key_type=key_type,
        bits_per_key=bpk,
        bytes_per_key=f.size_bytes / n,
        num_probes=f.num_probes,
        build_ns=build_s / n * 1e9,
        query_present_ns=q_present_s / n * 1e9,
        query_absent_ns=q_absent_s / absent * 1e9,
        absent_queries=absent,
        false_positives=fps,
        fpr=fps / absent,
        expected_fpr=expected,
        jit_s=jit_s,
    )


DEFAULT_SWEEP_BPK = [4, 6, 8, 10, 12, 16, 20, 24]


def sweep(families: list[str] | None = None, bits_per_key: list[float] | None = None, progress: bool = False,
          **kw) -> list[FilterResult]:
    """``run_one`` for every family (default: all registered) at every bits/key; ``progress``
    shows a bar with the time left on a terminal."""
    from .progress import bar

    families = families or [i.name for i in filters.available()]
    bpks = bits_per_key or DEFAULT_SWEEP_BPK
    specs = [spec for name in families for spec in filters.family(name).bench_specs(bpks)]
    out = []
    with bar(len(specs), "sweep", unit="filter", enabled=progress) as b:
        for spec in specs:
            b.set_postfix_str(spec)
            out.append(run_one(spec, **kw))
            b.update()
    return out


def format_table(results: list[FilterResult]) -> str:
    """A fixed-width table of results (what the CLI prints)."""
    head = (
        f"{'spec':<14}{'keys':>10} {'bits/key':>8} {'k':>3} {'build ns':>9} {'q+ ns':>7} {'q- ns':>7} "
        f"{'FPR %':>9} {'expected %':>10} {'jit s':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r.spec:<14}{r.keys:>10} {r.bits_per_key:>8.2f} {r.num_probes:>3} {r.build_ns:>9.1f} "
            f"{r.query_present_ns:>7.1f} {r.query_absent_ns:>7.1f} {100 * r.fpr:>9.4f} "
            f"{100 * r.expected_fpr:>10.4f} {r.jit_s:>6.2f}"
        )
    return "\n".join(lines)


def zero_fp_bound(absent_queries: int) -> float:
    """Upper 95% bound on the FP rate when ``absent_queries`` queries gave no false positive
    (the "rule of three": 3/N)."""
    return 3.0 / max(1, absent_queries)


def plot_limits(results: list[FilterResult]) -> tuple[tuple[float, float], tuple[float, float]]:
    """((x0, x1), (y0, y1)) of the FPR plot: x spans the measured bits/key with a margin, y runs
    from a quarter of the smallest measured rate or zero-FP bound up to 1."""
    lo_x = min(r.bits_per_key for r in results)
    hi_x = max(r.bits_per_key for r in results)
    pad = max(0.5, 0.04 * (hi_x - lo_x))
    shown = [r.fpr if r.false_positives else zero_fp_bound(r.absent_queries) for r in results]
    return (max(0.5, lo_x - pad), hi_x + pad), (min(shown) / 4, 1.0)


def plot(results: list[FilterResult], path: str, title: str = "FPR vs bits/key") -> str:
    """Measured FPR per family (markers) against each family's model and the textbook Bloom line.

    Axes fit the data: x spans the measured bits/key, y runs from a little under the smallest
    measured rate (or bound) to 1. A point with no false positive in N absent queries is not a
    measurement of zero: it is drawn as a hollow downward triangle at 3/N, an upper bound.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..filters import math as fm

    fig, ax = plt.subplots(figsize=(8, 5.5))
    (x0, x1), (y0, y1) = plot_limits(results)
    xs = np.linspace(x0, x1, 200)
    ax.plot(xs, [fm.standard_fpr(x, fm.optimal_k(x)) for x in xs], "k--", lw=1, label="textbook Bloom (1-e^-k/b)^k")
    ax.plot(xs, [2.0 ** (-x * fm.LN2) for x in xs], "k:", lw=1, label="standard, real-valued k")
    by_family: dict[str, list[FilterResult]] = {}
    for r in results:
        by_family.setdefault(r.family, []).append(r)
    for name, rs in by_family.items():
        rs = sorted(rs, key=lambda r: r.bits_per_key)
        seen = [r for r in rs if r.false_positives > 0]
        line = ax.plot([r.bits_per_key for r in seen], [r.fpr for r in seen], "o-", label=f"{name} measured")
        colour = line[0].get_color()
        bounds = [r for r in rs if r.false_positives == 0]
        if bounds:
            ax.plot([r.bits_per_key for r in bounds], [zero_fp_bound(r.absent_queries) for r in bounds], "v",
                    mfc="none", color=colour, ms=8)
        model = [r.expected_fpr for r in rs]
        if all(math.isfinite(m) for m in model):
            ax.plot([r.bits_per_key for r in rs], model, "-", color=colour, alpha=0.35, lw=4)
    if any(r.false_positives == 0 for r in results):
        ax.plot([], [], "v", mfc="none", color="0.3", ms=8, label="no FP in N queries: < 3/N (95% bound)")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("bits per key (memory)")
    ax.set_ylabel("false-positive rate")
    ax.set_title(title + "  (thick pale lines: each family's model)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
