"""Memory at equal FP rate: the bits/key each family needs to reach a target FP rate, by search.

For every family and target FP rate, the number in the family's spec (``blocked:N``,
``paired:N``, ``ribbon:N``) is bisected on *measured* FP rates: each step builds a filter over
``n`` keys and counts false positives among ``absent`` disjoint keys (the same keys at every step,
so the search is deterministic). The answer is the smallest spec number whose measured FP rate is
at or under the target, reported with the filter's actual memory (``num_bits / n``) and the saving
over the first family (``blocked`` by default): ``1 - bits / bits_of_blocked``, and as a multiple
of the information-theoretic bound ``log2(1/target)`` bits per key. A family whose spec has no
number (``fuse8``, ``fuse16``: the FP rate is fixed by the fingerprint width) is measured once per
target; when its FP rate is above the target the point says so (``reached`` False).

Cost: ``steps`` builds and queries per family and target; ``absent`` defaults to ``300 / target``
(about 300 expected false positives at the answer, ~6% noise), capped at 30M.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .. import filters
from ..filters import blocked as _blocked
from .filter_bench import FalseNegative, _build, make_keys

DEFAULT_TARGETS = [1e-2, 1e-3, 1e-4, 1e-5]
DEFAULT_FAMILIES = ["blocked", "paired", "ribbon", "fuse8", "fuse16"]


@dataclass
class EqualFprPoint:
    family: str
    target_fpr: float
    spec: str
    bits_per_key: float
    num_probes: int
    fpr: float
    false_positives: int
    absent_queries: int
    saving: float  # 1 - bits_per_key / bits_per_key of the reference family (nan for itself / unknown)
    reached: bool = True  # False: a fixed-FP family (fuse8) whose FP rate is above the target

    @property
    def over_bound(self) -> float:
        """Bits per key as a multiple of the bound ``log2(1/target)`` for any filter at the target."""
        return self.bits_per_key / math.log2(1.0 / self.target_fpr)

    def as_dict(self) -> dict:
        return asdict(self)


def _measure(spec: str, keys, probes, n: int):
    f = _build(spec, keys, n)
    if not f.might_contain_many(keys[: min(n, 100_000)]).all():
        raise FalseNegative(f"{spec}: an added key answered absent")
    fps = int(f.might_contain_many(probes).sum())
    return f.num_bits / n, f.num_probes, fps


def search(family: str, target: float, n: int, probes, keys, steps: int = 8) -> EqualFprPoint:
    """Smallest spec number (bisection, ``steps`` halvings) whose measured FPR <= ``target``
    (a family without a spec number: its one filter, ``reached`` telling whether it met the target)."""
    if not getattr(filters.family(family), "spec_has_number", True):
        bpk, k, fps = _measure(family, keys, probes, n)
        absent = len(probes)
        return EqualFprPoint(family, target, family, bpk, k, fps / absent, fps, absent, math.nan,
                             reached=fps / absent <= target)
    start = _blocked.millibits_for_fpr(target) / 1000.0  # the blocked model's answer brackets all
    lo, hi = 0.5 * start, 1.2 * start
    absent = len(probes)
    best = None
    m = _measure(f"{family}:{hi:.3f}", keys, probes, n)
    while m[2] / absent > target and hi < 200:
        lo, hi = hi, hi * 1.5
        m = _measure(f"{family}:{hi:.3f}", keys, probes, n)
    best = (hi, m)
    for _ in range(steps):
        mid = (lo + hi) / 2
        m = _measure(f"{family}:{mid:.3f}", keys, probes, n)
        if m[2] / absent <= target:
            hi, best = mid, (mid, m)
        else:
            lo = mid
    number, (bpk, k, fps) = best
    return EqualFprPoint(family, target, f"{family}:{number:.3f}", bpk, k, fps / absent, fps, absent, math.nan)


def equal_fpr(
    families: list[str] | None = None,
    targets: list[float] | None = None,
    n: int = 1_000_000,
    absent: int | None = None,
    key_type: str = "int",
    steps: int = 8,
    seed: int = 0,
    progress=None,
) -> list[EqualFprPoint]:
    """Search every family at every target; savings are against the first family listed."""
    families = families or DEFAULT_FAMILIES
    targets = targets or DEFAULT_TARGETS
    keys = make_keys(n, key_type, seed)
    out: list[EqualFprPoint] = []
    for target in targets:
        count = absent or int(min(30_000_000, max(1_000_000, math.ceil(300 / target))))
        probes = make_keys(count, key_type, seed, offset=1 << 40)
        row = []
        for name in families:
            filters.family(name)  # validate early
            p = search(name, target, n, probes, keys, steps)
            if progress:
                progress(p)
            row.append(p)
        ref = row[0].bits_per_key
        for p in row[1:]:
            if p.reached:
                p.saving = 1.0 - p.bits_per_key / ref
        out.extend(row)
        del probes
    return out


def format_table(points: list[EqualFprPoint]) -> str:
    head = (f"{'target FPR':>10}  {'family':<8}{'spec':<16}{'bits/key':>9}{'x bound':>8}{'k':>4}{'measured FPR':>14}"
            f"{'FPs':>7}{'absent':>11}{'saving':>8}")
    lines = [head, "-" * len(head)]
    for p in points:
        saving = "" if math.isnan(p.saving) else f"{100 * p.saving:>7.1f}%"
        lines.append(
            f"{p.target_fpr:>10.0e}  {p.family:<8}{p.spec:<16}{p.bits_per_key:>9.2f}{p.over_bound:>8.2f}{p.num_probes:>4}"
            f"{p.fpr:>14.3e}{p.false_positives:>7}{p.absent_queries:>11,}{saving:>8}"
            + ("" if p.reached else "  (FP rate fixed above the target)")
        )
    lines.append("bits/key = memory per key of the smallest spec whose measured FPR <= target; "
                 "x bound = bits/key / log2(1/target); saving = 1 - bits/key / bits/key of the first family")
    return "\n".join(lines)


def speed_ratios(results, base: str = "blocked") -> str:
    """Build and query time of each result relative to the first ``base`` result of the same run."""
    ref = next((r for r in results if r.family == base), None)
    if ref is None:
        return ""
    lines = [f"relative to {ref.spec} (same run): build x, query-absent x, query-present x"]
    for r in results:
        if r is ref:
            continue
        lines.append(
            f"  {r.spec:<14} build {r.build_ns / ref.build_ns:5.2f}x  q- {r.query_absent_ns / ref.query_absent_ns:5.2f}x"
            f"  q+ {r.query_present_ns / ref.query_present_ns:5.2f}x  memory {r.bits_per_key / ref.bits_per_key:5.2f}x"
        )
    return "\n".join(lines)


__all__ = ["EqualFprPoint", "equal_fpr", "search", "format_table", "speed_ratios"]
