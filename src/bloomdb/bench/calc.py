"""The Bloom calculator: for N keys at FP rate P, each family's size, k and expected FP rate.

Sizes come from the families' own sizing (``Filter.planned_size``: every rounding the filter
does, without allocating it, so sizes past this machine's memory are printed too);
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

    @property
    def over_bound(self) -> float:
        """Bits per key over the information-theoretic bound ``log2(1 / expected FP rate)``."""
        if not 0 < self.expected_fpr < 1 or self.bits_per_key <= 0:
            return float("nan")
        return self.bits_per_key / math.log2(1 / self.expected_fpr)


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
    return cls.planned_size(max(1, keys), bits_per_key=bits_per_key)[1]


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
        if info.name in _OWN_ROWS:
            try:
                row = _OWN_ROWS[info.name](cls, keys, fpr, size_bytes)
            except BloomDBError as exc:  # e.g. more keys than the family can size: a row saying why
                row = CalcRow(info.name, 0, 0, 0.0, 0, float("nan"), 0, str(exc))
            if row is not None:
                rows.append(row)
            continue
        if info.spec_meaning != "bits per key":
            continue  # a family added later with another sizing: listed by filter-bench only
        try:
            if size_bytes is None:
                bpk = _bpk_for(cls, fpr)
                if bpk is None:
                    continue
                if cls.static:
                    bits, k = int(math.ceil(keys * bpk)), _k_for(cls, keys, bpk)
                else:
                    bits, k = cls.planned_size(keys, bits_per_key=bpk)
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
    fit = keys if size_bytes is None else _most_keys_within(cls.num_bits_for, size_bytes * 8, keys)
    return CalcRow(cls.family, bits, -(-bits // 8), bits / keys, 3, expected, fit, "static: size set by the keys")


def _most_keys_within(bits_of, limit_bits: int, start: int) -> int:
    """The most keys ``n`` with ``bits_of(n) <= limit_bits`` (``bits_of`` non-decreasing)."""
    lo, hi = 0, max(start, 1)
    while bits_of(hi) <= limit_bits:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bits_of(mid) <= limit_bits else (lo, mid)
    return lo


def _leveldb_row(cls, keys: int, fpr: float, size_bytes: int | None) -> CalcRow | None:
    """LevelDB: whole bits per key, k = 0.69 b; the model adds its 32-bit hash's collisions."""
    def model(n: float, bits: int, k: int) -> float:
        n = max(n, 1)
        return fm.independent_fpr(cls.expected_fpr(bits / n, k), fm.fingerprint_fpr(n, 32))

    if size_bytes is None:
        bpk = _bpk_for(cls, fpr)
        if bpk is None:
            return None
        b = math.ceil(bpk)
        while b < 100 and model(keys, keys * b, cls.build([], bits_per_key=b).num_probes) > fpr:
            b += 1
        if model(keys, keys * b, cls.build([], bits_per_key=b).num_probes) > fpr:
            return CalcRow(cls.family, 0, 0, 0.0, 0, float("nan"), 0,
                           f"cannot reach {fpr:g} at {keys:,} keys: its 32-bit hash's collisions alone exceed it")
        bits = max(64, -(-keys * b // 8) * 8)
    else:
        bits = size_bytes * 8
        b = max(1, int(bits / keys))
    k = cls.build([], bits_per_key=b).num_probes
    fit = fm.keys_before_fpr(lambda n: model(n, bits, k), fpr, keys)
    return CalcRow(cls.family, bits, bits // 8, bits / keys, k, model(keys, bits, k), fit, f"leveldb:{b}")


def _ribbon_row(cls, keys: int, fpr: float, size_bytes: int | None) -> CalcRow | None:
    """Ribbon: fractional result columns c (FP between 2^-floor(c) and 2^-ceil(c)) times its slots
    per key; the spec number is the Bloom-equivalent bits per key, so memory is given directly."""
    from ..filters.ribbon import default_slots_per_key

    slots = default_slots_per_key(keys)
    if size_bytes is None:
        lower = math.floor(-math.log2(fpr))
        cols = lower + max(0.0, min(1.0, 2 * (1 - fpr * 2.0**lower)))
        bits = math.ceil(keys * slots * cols)
    else:
        bits = size_bytes * 8
    model = lambda n: cls.expected_fpr(bits / max(n, 1) * default_slots_per_key(1_000_000) / default_slots_per_key(max(n, 1)))  # noqa: E731
    return CalcRow(cls.family, bits, -(-bits // 8), bits / keys, 0, model(keys),
                   fm.keys_before_fpr(model, fpr, keys), "static; no k (one row of XORs)")


def _cuckoo_row(cls, keys: int, fpr: float, size_bytes: int | None) -> CalcRow | None:
    """Cuckoo: the narrowest fingerprint (8/12/16 bits) meeting ``fpr`` at the table's load; "keys
    that fit" is also capped by the table's capacity (adds beyond it raise FilterFull)."""
    from ..filters.cuckoo import FINGERPRINT_BITS

    rows = []
    for fb in FINGERPRINT_BITS:
        size_of = lambda n, fb=fb: cls.planned_size(max(1, n), fingerprint_bits=fb)[0]  # noqa: E731
        bits = size_of(keys) if size_bytes is None else size_bytes * 8
        model = lambda n, bits=bits, fb=fb: cls.expected_fpr(bits / max(n, 1), fingerprint_bits=fb)  # noqa: E731
        if size_bytes is None and model(keys) > fpr:
            continue
        held = _most_keys_within(size_of, bits, keys)
        fit = min(held, fm.keys_before_fpr(model, fpr, keys))
        over = held < keys  # the table is full before N keys: no FP rate at N
        rows.append(CalcRow(cls.family, bits, -(-bits // 8), bits / keys, 2, float("nan") if over else model(keys), fit,
                            f"cuckoo:{fb}" + (f"; full at {held:,} keys" if over else "")))
        if size_bytes is None:
            break  # the narrowest fingerprint that meets the target
    return max(rows, key=lambda r: r.keys_that_fit, default=None)  # with --bytes: the one holding most keys


def _register_row(cls, keys: int, fpr: float, size_bytes: int | None) -> CalcRow | None:
    """Register-blocked: the k (1..4) needing the fewest bits per key for ``fpr``; with ``--bytes``
    the k with the lowest FP rate at that size."""
    best = None
    for k in (1, 2, 3, 4):
        if size_bytes is None:
            if cls.expected_fpr(200.0, k) > fpr:
                continue
            lo, hi = 0.5, 200.0
            for _ in range(50):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if cls.expected_fpr(mid, k) <= fpr else (mid, hi)
            bits = 32 * math.ceil(keys * hi / 32)
        else:
            bits = 32 * (size_bytes // 4)
        model = lambda n, bits=bits, k=k: cls.expected_fpr(bits / max(n, 1), k)  # noqa: E731
        row = CalcRow(cls.family, bits, bits // 8, bits / keys, k, model(keys), fm.keys_before_fpr(model, fpr, keys),
                      f"register:{k}, size_bytes={bits // 8}")
        if best is None or (row.bits, row.expected_fpr) < (best.bits, best.expected_fpr):
            best = row
    return best


#: Families whose spec number is not plain bits per key get a row of their own.
_OWN_ROWS = {"leveldb": _leveldb_row, "ribbon": _ribbon_row, "cuckoo": _cuckoo_row, "register": _register_row}


def _fit(n: int) -> str:
    return "unlimited" if n < 0 else f"{n:,}"


def format_rows(rows: list[CalcRow], keys: int, fpr: float, size_bytes: int | None) -> str:
    """The calculator's table: columns as wide as their widest cell (sizes of 10^11 keys and more
    keep their columns apart); a family that cannot size the filter shows why in its note."""
    head = ("family", "bits", "bytes", "bits/key", "x bound", "k", "expected FPR", "keys that fit")
    cells = [(r.family, f"{r.bits:,}", f"{r.bytes:,}", f"{r.bits_per_key:.2f}", f"{r.over_bound:.2f}x",
              str(r.num_probes), f"{100 * r.expected_fpr:.4f}%", _fit(r.keys_that_fit)) for r in rows]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]

    def line(c):
        return " ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(c, widths)))

    title = f"{keys:,} keys at FP rate {fpr:g}" + (f", {size_bytes:,} bytes" if size_bytes else "")
    lines = [title, line(head), "-" * len(line(head))]
    lines += [line(c) + (f" {r.note}" if r.note else "") for c, r in zip(cells, rows)]
    lines.append("keys that fit: most keys the filter holds before its expected FP rate crosses the target")
    lines.append("x bound: bits per key over the information-theoretic bound log2(1 / expected FP rate)")
    return "\n".join(lines)
