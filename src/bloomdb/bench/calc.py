"""The Bloom calculator: for N keys at FP rate P, each family's size, k and expected FP rate.

Sizes come from the families' own constructors (so they include every rounding the filter does);
expected FP rates from each family's model. "Keys that fit" is the largest key count whose
expected FP rate, at the filter's size and fixed k, stays at or under P.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import filters
from ..errors import BloomDBError
from ..filters import math as fm


@dataclass
class CalcRow:
    family: str
    bits: int
    bytes: int
    bits_per_key: float
    num_probes: int
    expected_fpr: float
    keys_that_fit: int
    note: str = ""


def _bpk_for(cls, fpr: float) -> float | None:
    """Smallest bits/key (0.01 steps) whose model FP rate is <= fpr, or None without a model."""
    if not math.isfinite(cls.expected_fpr(10.0)):
        return None
    lo, hi = 0.5, 200.0
    if cls.expected_fpr(hi) > fpr:
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        if cls.expected_fpr(mid) <= fpr:
            hi = mid
        else:
            lo = mid
    return math.ceil(hi * 100) / 100


def calculate(keys: int, fpr: float, size_bytes: int | None = None) -> list[CalcRow]:
    if keys <= 0 or not 0 < fpr < 1:
        raise BloomDBError("--keys must be positive and --fpr in (0, 1)")
    rows = []
    for info in filters.available():
        cls = filters.family(info.name)
        if info.spec_meaning != "bits per key":
            continue  # families sized by other parameters (fixed-size, fingerprint bits) are listed by their own tools
        bpk = _bpk_for(cls, fpr) if size_bytes is None else size_bytes * 8 / keys
        if bpk is None:
            continue
        try:
            f = cls(capacity=keys, bits_per_key=bpk) if not cls.static else None
        except BloomDBError as exc:
            rows.append(CalcRow(info.name, 0, 0, bpk, 0, float("nan"), 0, str(exc)))
            continue
        bits = f.num_bits if f is not None else int(math.ceil(keys * bpk))
        # a static family's k comes from an empty build at the same bits/key
        k = f.num_probes if f is not None else cls.build([], bits_per_key=bpk).num_probes
        model = (lambda n, bits=bits, k=k: cls.expected_fpr(bits / max(n, 1), k or None))
        fit = fm.keys_before_fpr(model, fpr, keys)
        rows.append(CalcRow(info.name, bits, -(-bits // 8), bits / keys, k, model(keys), fit))
    return rows


def format_rows(rows: list[CalcRow], keys: int, fpr: float, size_bytes: int | None) -> str:
    head = f"{'family':<10}{'bits':>14}{'bytes':>14}{'bits/key':>10}{'k':>4}{'expected FPR':>14}{'keys that fit':>15}"
    title = f"{keys:,} keys at FP rate {fpr:g}" + (f", {size_bytes:,} bytes" if size_bytes else "")
    lines = [title, head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.family:<10}{r.bits:>14,}{r.bytes:>14,}{r.bits_per_key:>10.2f}{r.num_probes:>4}"
            f"{100 * r.expected_fpr:>13.4f}%{r.keys_that_fit:>15,} {r.note}"
        )
    lines.append("keys that fit: most keys the filter holds before its expected FP rate crosses the target")
    return "\n".join(lines)
