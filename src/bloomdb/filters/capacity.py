"""What a filter does when it is filled past what it was sized for (``on_full``).

A filter knows its target: its ``capacity`` and the FP rate its model gives at that many keys
(:meth:`Filter.target_fpr`, what the spec sized it for). Its *limit* is the largest count whose
model FP rate (:meth:`Filter.fpr_at`) stays within twice the target. Past the limit:

* ``on_full="warn"`` (default): the add that crosses it emits one
  :class:`~bloomdb.errors.CapacityWarning` naming the filter, its count and estimated FP rate
  (once per filter object);
* ``on_full="raise"``: an add (or union) that would cross it raises
  :class:`~bloomdb.errors.FilterFull` before any bit changes — the whole batch is refused; the
  count of keys being added by other threads is reserved first, so concurrent adds cannot
  together pass the limit;
* ``on_full="ignore"``: neither.

Families without an FP model for a growing count (static families, ``cuckoo``, which raises
FilterFull when a key finds no room, ``scalable``, which grows) have no limit. ``on_full`` is kept by
``copy``, ``union``, pickle and the saved bytes (envelope byte 5, :mod:`bloomdb.filters.format`).

Cost: nothing per add below ``capacity``; the limit is found once per filter by bisection over
the model (~40 evaluations, well under 10 ms), the first time the count passes ``capacity`` (in
``"raise"`` mode at the first add).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import warnings
from typing import Any, Callable

from ..errors import CapacityWarning, FilterFull, InvalidArgument
from .math import largest_within

ON_FULL = ("warn", "raise", "ignore")
_UNKNOWN = -1


def check_on_full(value: Any) -> str:
    if value not in ON_FULL:
        raise InvalidArgument(f"on_full must be one of {', '.join(map(repr, ON_FULL))}, got {value!r}")
    return value


def count_limit(fpr_at: Callable[[int], float], capacity: int, target: float, top: int) -> int | None:
    """Largest ``n >= capacity`` with ``fpr_at(n) <= 2 * target`` (``fpr_at`` non-decreasing), or
    None when the model never passes it below ``top`` keys (or there is no model)."""
    bound = 2.0 * target
    if not (0.0 < target and bound < 1.0):  # NaN (no model) or a target that 2x cannot pass
        return None
    lo, hi = capacity, 2 * capacity
    while fpr_at(hi) <= bound:
        lo, hi = hi, 2 * hi
        if hi > top:
            return None
    return largest_within(fpr_at, bound, lo, hi)


class CapacityGuard:
    """Per-filter state of the ``on_full`` policy; ``lock`` is the filter's count lock."""

    __slots__ = ("mode", "lock", "_pending", "_warned", "_limit")

    def __init__(self, lock: threading.Lock, mode: str = "warn") -> None:
        self.mode = mode
        self.lock = lock
        self._pending = 0  # keys reserved by adds in flight ("raise" mode)
        self._warned = False
        self._limit: int | None = _UNKNOWN

    def limit(self, f: Any) -> int | None:
        """The filter's count limit (cached; None when it has none)."""
        if self._limit == _UNKNOWN:
            cap = getattr(f, "_capacity", None)
            self._limit = None if not cap else count_limit(f.fpr_at, cap, f.target_fpr(), 1 << 62)
        return self._limit

    def admit(self, f: Any, n: int) -> int:
        """Before adding ``n`` keys: in ``"raise"`` mode, FilterFull if the count (with adds in
        flight) would pass the limit, else reserve ``n`` (returned; 0 in other modes)."""
        if self.mode != "raise" or n <= 0:
            return 0
        limit = self.limit(f)
        with self.lock:
            projected = f._count + self._pending + n
            if limit is not None and projected > limit:
                exc = FilterFull(
                    f"{_name(f)}: adding {n} key(s) would take it to {projected} keys, estimated FP "
                    f"rate {f.fpr_at(projected):.3g}, past twice its target {f.target_fpr():.3g} (at most "
                    f"{limit} keys); nothing was added (on_full='raise')"
                )
                exc.added = 0
                raise exc
            self._pending += n
        return n

    def release(self, n: int) -> None:
        """Give back a reservation of ``n`` keys that were not added."""
        if n:
            with self.lock:
                self._pending -= n

    def counted(self, f: Any, n: int, reserved: int) -> None:
        """``count += n`` (``reserved`` of them from :meth:`admit`), warning once past the limit."""
        with self.lock:
            self._pending -= reserved
            f._count += n
            count = f._count
        cap = getattr(f, "_capacity", None)
        if self.mode != "warn" or self._warned or not cap or count <= cap:
            return
        limit = self.limit(f)
        if limit is None or count <= limit:
            return
        with self.lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(
            CapacityWarning(
                f"{_name(f)} holds {count} keys: estimated FP rate {f.estimated_fpr():.3g} is past twice "
                f"its target {f.target_fpr():.3g}; size a larger filter or use the "
                "'scalable' family (on_full='raise' refuses such adds)"
            ),
            stacklevel=_caller_level(),
        )


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside bloomdb.filters (the user's add call)."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def _name(f: Any) -> str:
    return f"{f.family} filter (capacity {getattr(f, '_capacity', '?')})"


def clamp_fpr(p: float) -> float:
    """An FP rate in [0, 1] (models summing Poisson terms can overshoot 1 by rounding)."""
    return p if math.isnan(p) else min(1.0, max(0.0, p))
