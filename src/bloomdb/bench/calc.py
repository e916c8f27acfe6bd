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
    keys_that_fit: int  # -1: unlimited (a growing family)
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


def _k_for(cls, keys: int, bits_per_key: float) -> int:
    """The k the family picks for ``keys`` at ``bits_per_key`` (a static family: from an empty build)."""
    if cls.static:
        return cls.build([], bits_per_key=bits_per_key).num_probes
    return cls(capacity=max(1, keys), bits_per_key=bits_per_key).num_probes


def calculate(keys: int, fpr: float, size_bytes: int | None = None) -> list[CalcRow]:
    """One row per family whose spec number is bits per key.

    Without ``size_bytes``: the filter each family builds for ``keys`` at ``fpr`` (its size, k and
    expected FP rate), and how many keys it holds (k fixed) before its expected FP rate crosses
    ``fpr``. With ``size_bytes``: the expected FP rate of ``keys`` in that many bytes, and the most
    keys a filter of that size, built for them, holds at ``fpr`` or better.
    """
    if keys <= 0 or not 0 < fpr < 1 or (size_bytes is not None and size_bytes <= 0):
        raise BloomDBError("--keys and --bytes must be positive and --fpr in (0, 1)")
    rows = []
    for info in filters.available():
        cls = filters.family(info.name)
        if getattr(cls, "grows", False):
            rows.append(_growing_row(cls, keys, fpr))
            continue
        if not getattr(cls, "spec_has_number", True):
            if (row := _fixed_fpr_row(cls, keys, fpr, size_bytes)) is not None:
                rows.append(row)
            continue
        if info.spec_meaning != "bits per key":
            continue  # families sized by other parameters (fixed-size, fingerprint bits) are listed by their own tools
        try:
            if size_bytes is None:
                bpk = _bpk_for(cls, fpr)
                if bpk is None:
                    continue
                f = None if cls.static else cls(capacity=keys, bits_per_key=bpk)
                bits = f.num_bits if f is not None else int(math.ceil(keys * bpk))
                k = f.num_probes if f is not None else _k_for(cls, keys, bpk)
                model = (lambda n, bits=bits, k=k: cls.expected_fpr(bits / max(n, 1), k))
                fit = fm.keys_before_fpr(model, fpr, keys)
                expected = model(keys)
            else:
                bits = size_bytes * 8
                fit = fm.keys_before_fpr(lambda n: cls.expected_fpr(bits / max(n, 1)), fpr, keys)
                k = _k_for(cls, keys, bits / keys)  # what the family really does (sbbf: always 8)
                expected = cls.expected_fpr(bits / keys)
        except BloomDBError as exc:
            rows.append(CalcRow(info.name, 0, 0, 0.0, 0, float("nan"), 0, str(exc)))
            continue
        rows.append(CalcRow(info.name, bits, -(-bits // 8), bits / keys, k, expected, fit))
    return rows


def _growing_row(cls, keys: int, fpr: float) -> CalcRow:
    """The row of a family that grows at a fixed target FP rate (``scalable``): its memory after
    ``keys`` adds (default initial capacity and growth); it holds any number of keys."""
    try:
        bits, k, levels = cls.plan(keys, fpr)
    except BloomDBError as exc:
        return CalcRow(cls.family, 0, 0, 0.0, 0, float("nan"), 0, str(exc))
    return CalcRow(cls.family, bits, bits // 8, bits / keys, k, fpr, -1,
                   f"grows: {levels} levels; FP stays below the target for any number of keys")


def _fixed_fpr_row(cls, keys: int, fpr: float, size_bytes: int | None) -> CalcRow | None:
    """The row of a static family whose FP rate and size follow from the key count alone
    (``fuse8``/``fuse16``): none when its FP rate is above ``fpr``. It holds exactly the keys it
    is built from; with ``size_bytes``, "keys that fit" is the most keys whose filter fits."""
    expected = cls.expected_fpr(0.0)
    if expected > fpr:
        return None
    bits = cls.num_bits_for(keys)
    fit = keys
    if size_bytes is not None:
        lo, hi = 0, max(keys, 1)
        while cls.num_bits_for(hi) <= size_bytes * 8:
            lo, hi = hi, 2 * hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if cls.num_bits_for(mid) <= size_bytes * 8 else (lo, mid)
        fit = lo
    return CalcRow(cls.family, bits, -(-bits // 8), bits / keys, 3, expected, fit, "static: size set by the keys")


def _fit(n: int) -> str:
    return "unlimited" if n < 0 else f"{n:,}"


def format_rows(rows: list[CalcRow], keys: int, fpr: float, size_bytes: int | None) -> str:
    head = f"{'family':<10}{'bits':>14}{'bytes':>14}{'bits/key':>10}{'k':>4}{'expected FPR':>14}{'keys that fit':>15}"
    title = f"{keys:,} keys at FP rate {fpr:g}" + (f", {size_bytes:,} bytes" if size_bytes else "")
    lines = [title, head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.family:<10}{r.bits:>14,}{r.bytes:>14,}{r.bits_per_key:>10.2f}{r.num_probes:>4}"
            f"{100 * r.expected_fpr:>13.4f}%{_fit(r.keys_that_fit):>15} {r.note}"
        )
    lines.append("keys that fit: most keys the filter holds before its expected FP rate crosses the target")
    return "\n".join(lines)
