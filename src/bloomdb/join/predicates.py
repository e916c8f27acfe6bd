"""``where=``: simple predicates on probe columns, evaluated in the scan.

A predicate is ``(column, op, value)`` with op one of ``==  !=  <  <=  >  >=  in  not in`` (``value``
a list for the last two) or ``(column, "is null")`` / ``(column, "is not null")``; a list of them
is AND-combined. As in SQL, a comparison with a null is not true (a null row never passes, except
``is null``). The scan evaluates the predicates one column at a time at the rows still alive
(after the build-side filter and the hash probe where the join allows it), so each predicate column
is decoded only at those rows and the output columns only at the rows that pass.

``where`` filters the probe side before the join: in a right or full join a build row whose only
matches fail the predicate comes out unmatched (SQL: joining ``(SELECT * FROM probe WHERE ...)``).
Float comparisons order NaN above every number, as DuckDB does (``NaN > 3`` is true). A chunk whose
min/max statistics (or a hive partition value) show that no row can pass is skipped before any
read, in every kind of join (:meth:`Predicate.may_pass`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgument

_CMP = {"==": "equal", "=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
        ">=": "greater_equal"}
_SETS = ("in", "not in")
_NULLS = ("is null", "is not null")
_PRUNABLE = ("==", "=", "<", "<=", ">", ">=", "in")


@dataclass(frozen=True)
class Predicate:
    column: str
    op: str
    value: Any = None

    def test(self, arr: pa.Array) -> np.ndarray:
        """Bool mask of the values of ``arr`` that satisfy the predicate (nulls: False)."""
        if self.op in _NULLS:
            out = arr.is_null() if self.op == "is null" else arr.is_valid()
            return out.to_numpy(zero_copy_only=False)
        try:
            if self.op in _SETS:
                hit = pc.is_in(arr, value_set=self._values(arr.type), skip_nulls=True)
                out = hit if self.op == "in" else pc.and_(pc.invert(hit), arr.is_valid())
            else:
                out = getattr(pc, _CMP[self.op])(arr, pa.scalar(self.value, arr.type) if _fits(self.value) else self.value)
                if self.op in (">", ">=", "!=") and pa.types.is_floating(arr.type) and self.value == self.value:
                    out = pc.or_(out, pc.is_nan(arr))  # NaN orders above every number (DuckDB)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
            raise InvalidArgument(f"where {self.column} {self.op} {self.value!r}: {exc}") from None
        return pc.fill_null(out, False).to_numpy(zero_copy_only=False)

    def may_pass(self, lo: Any, hi: Any) -> bool:
        """False only when no value in ``[lo, hi]`` (a chunk's min/max statistics, None = unknown)
        can satisfy the predicate. Floats are never pruned (NaN is outside the statistics)."""
        if lo is None or hi is None or self.op not in _PRUNABLE or isinstance(lo, float) or isinstance(hi, float):
            return True
        try:
            if self.op in ("==", "="):
                return lo <= self.value <= hi
            if self.op == "in":
                return any(lo <= v <= hi for v in self.value if v is not None)
            return {"<": lo < self.value, "<=": lo <= self.value, ">": hi > self.value,
                    ">=": hi >= self.value}[self.op]
        except TypeError:  # statistics of another kind than the literal (e.g. bytes vs str): keep
            return True

    def _values(self, t: pa.DataType) -> pa.Array:
        if pa.types.is_dictionary(t):
            t = t.value_type
        try:
            return pa.array(list(self.value), t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):  # e.g. 2.5 against ints
            return pa.array(list(self.value))


def _fits(value: Any) -> bool:
    """Whether a literal is compared in the column's own type (ints vs floats are not)."""
    return not isinstance(value, float)


def parse_where(where: Any, schema: pa.Schema) -> list[Predicate]:
    """Predicates from ``("v", ">", 3)`` or a list of such tuples (AND); InvalidArgument when a
    column is not a probe column or the form is not one of the documented ones."""
    if where is None:
        return []
    items = [where] if isinstance(where, tuple) else where
    if not isinstance(items, list) or not items:
        raise InvalidArgument(f"where must be a tuple like ('v', '>', 3) or a non-empty list of them, got {where!r}")
    out = []
    for p in items:
        if not isinstance(p, (tuple, list)) or len(p) not in (2, 3) or not isinstance(p[0], str):
            raise InvalidArgument(f"cannot read predicate {p!r} (expected (column, op, value))")
        col, op = p[0], str(p[1]).lower()
        if col not in schema.names:
            raise InvalidArgument(f"where: {col!r} is not a probe column (predicates read probe columns)")
        if len(p) == 2:
            if op not in _NULLS:
                raise InvalidArgument(f"predicate {p!r}: only 'is null' / 'is not null' take no value")
            out.append(Predicate(col, op))
            continue
        value = p[2]
        if op in _SETS:
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise InvalidArgument(f"predicate {p!r}: {op!r} takes a list of values")
            value = tuple(value)
        elif op not in _CMP:
            raise InvalidArgument(f"predicate {p!r}: op must be one of {sorted(_CMP) + list(_SETS) + list(_NULLS)}")
        elif value is None:
            raise InvalidArgument(f"predicate {p!r}: compare with None using 'is null'")
        out.append(Predicate(col, op, value))
    return out


def chunk_may_pass(preds: list[Predicate], src: Any, i: int) -> bool:
    """False when the statistics of chunk ``i`` of ``src`` prove a predicate fails on every row."""
    return all(p.may_pass(*src.key_stats(i, p.column)) for p in preds)


def passing(preds: list[Predicate], ch: Any, rows: np.ndarray, whole: bool) -> np.ndarray | None:
    """Indices into ``rows`` (ascending positions in probe chunk ``ch``) of the rows that pass
    every predicate (None when there are no predicates); each predicate column is decoded only at
    the rows the earlier ones kept."""
    if not preds:
        return None
    alive = np.arange(rows.shape[0], dtype=np.int64)
    for p in preds:
        if alive.shape[0] == 0:
            break
        alive = alive[p.test(ch.arrow(p.column, rows[alive], whole))]
    return alive
