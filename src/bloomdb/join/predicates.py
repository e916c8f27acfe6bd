"""``where=``: simple predicates on probe columns, evaluated in the scan.

A predicate is ``(column, op, value)`` with op one of ``==  !=  <  <=  >  >=  in  not in`` (``value``
a list for the last two) or ``(column, "is null")`` / ``(column, "is not null")``; a list of them
is AND-combined. As in SQL, a comparison with a null is not true (a null row never passes, except
``is null``). The scan evaluates the predicates one column at a time at the rows still alive
(after the build-side filter and the hash probe where the join allows it), so each predicate column
is decoded only at those rows and the output columns only at the rows that pass.

``where`` filters the probe side before the join: in a right or full join a build row whose only
matches fail the predicate comes out unmatched (SQL: joining ``(SELECT * FROM probe WHERE ...)``).
Literals compare as DuckDB compares them: NaN orders above every number and equals NaN (``NaN > 3``
and ``x <= NaN`` are true, in literals and in ``in`` lists alike), -0.0 equals 0.0, an integer
literal outside an integer column's type is decided by the range (``u8 < 300`` holds for every
row, ``u8 == 256`` for none), a float literal meets an integer or float32 column as float64 (an
integer literal meets a float column as the column's type), a decimal column meets a float
literal as float64 and a Decimal or integer literal exactly (in a decimal wide enough for both), a
boolean column meets an integer as 1 / 0, and a date /
datetime literal meets a date or timestamp column exactly (a date is its midnight; a literal finer
than the column's unit is not truncated: ``d >= datetime(2020, 1, 1, 12)`` excludes 2020-01-01). A chunk whose
min/max statistics (or a hive partition value) show that no row can pass is skipped before any
read, in every kind of join (:meth:`Predicate.may_pass`).
"""

from __future__ import annotations

import datetime
import decimal
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
                hit = _is_in(arr, self.value)
                out = hit if self.op == "in" else pc.and_(pc.invert(hit), arr.is_valid())
            else:
                out = _compare(arr, self.op, self.value)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise InvalidArgument(f"where {self.column} {self.op} {self.value!r}: {exc}") from None
        return pc.fill_null(out, False).to_numpy(zero_copy_only=False)

    def may_pass(self, lo: Any, hi: Any) -> bool:
        """False only when no value in ``[lo, hi]`` (a chunk's min/max statistics, None = unknown)
        can satisfy the predicate. Float columns and NaN literals are never pruned (NaN is outside the
        statistics)."""
        if lo is None or hi is None or self.op not in _PRUNABLE or isinstance(lo, float) or isinstance(hi, float):
            return True
        if self.op != "in" and _is_float(self.value) and self.value != self.value:
            return True  # NaN orders above every number: `< NaN` holds for every number
        try:
            if self.op in ("==", "="):
                return _within(lo, hi, self.value)
            if self.op == "in":
                return any(_within(lo, hi, v) for v in self.value if v is not None)
            lo, hi = _bounds_for(lo, hi, self.value)
            return {"<": lo < self.value, "<=": lo <= self.value, ">": hi > self.value,
                    ">=": hi >= self.value}[self.op]
        except (TypeError, ArithmeticError):  # statistics of another kind than the literal (bytes vs str,
            return True  # Decimal vs NaN): keep



# DuckDB's answer to `column <op> literal` when the literal lies outside every value of the column:
# above (an integer past the type's maximum, or NaN: it orders above every number) / below.
_ABOVE = {"==": False, "=": False, "!=": True, "<": True, "<=": True, ">": False, ">=": False}
_BELOW = {"==": False, "=": False, "!=": True, "<": False, "<=": False, ">": True, ">=": True}


def _int_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    return (0, (1 << bits) - 1) if pa.types.is_unsigned_integer(t) else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def _is_float(value: Any) -> bool:
    return isinstance(value, (float, np.floating))


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _bounds_for(lo: Any, hi: Any, value: Any) -> tuple[Any, Any]:
    """Integer statistics as float64 when the literal is a float (the comparison is float64)."""
    if _is_float(value) and _is_int(lo) and _is_int(hi):
        return float(lo), float(hi)
    return lo, hi


def _within(lo: Any, hi: Any, value: Any) -> bool:
    lo, hi = _bounds_for(lo, hi, value)
    return lo <= value <= hi


def _constant(arr: pa.Array, answer: bool) -> pa.Array:
    """``answer`` at every valid row of ``arr`` (nulls stay null)."""
    return pc.if_else(arr.is_valid(), answer, None)


def _unsigned_zero(arr: pa.Array) -> pa.Array:
    """Floats with -0.0 made +0.0 (x + 0.0; NaN and nulls unchanged), so -0.0 equals 0.0 in sets."""
    return pc.add(arr, pa.scalar(0.0, arr.type))


def _bool_as_number(arr: pa.Array, t: pa.DataType, values) -> tuple[pa.Array, pa.DataType]:
    """A boolean column met by integer literals is compared as integers (true 1, false 0), as DuckDB
    casts it (a float literal is refused, as DuckDB refuses BOOLEAN < DOUBLE)."""
    if not pa.types.is_boolean(t) or not values or not all(_is_int(v) for v in values):
        return arr, t
    return pc.cast(arr, pa.int64()), pa.int64()


def _decimal_common(arr: pa.Array, t: pa.DataType, values) -> tuple[pa.Array, pa.DataType, list]:
    """A decimal column met by a float literal compares as float64 (DuckDB: DECIMAL with DOUBLE is
    DOUBLE; Decimal literals in the list as floats too); by Decimal and integer literals exactly, in
    a decimal wide enough for the column and every literal (a literal with more digits or a finer
    scale than the column was refused by Arrow's cast)."""
    values = list(values)
    if not pa.types.is_decimal(t) or not values:
        return arr, t, values
    if any(_is_float(v) for v in values):
        return pc.cast(arr, pa.float64()), pa.float64(), [float(v) if isinstance(v, decimal.Decimal) else v
                                                           for v in values]
    scale, digits = t.scale, t.precision - t.scale
    for v in values:
        if isinstance(v, decimal.Decimal) and v.is_finite():
            tup = v.as_tuple()
            scale, digits = max(scale, -tup.exponent), max(digits, len(tup.digits) + tup.exponent)
        elif _is_int(v):
            digits = max(digits, len(str(abs(int(v)))))
    p = digits + scale
    if (scale, p) == (t.scale, t.precision) or p > 76:
        return arr, t, values
    wide = pa.decimal128(p, scale) if p <= 38 else pa.decimal256(p, scale)
    return pc.cast(arr, wide), wide, values


def _compare(arr: pa.Array, op: str, value: Any) -> pa.Array:
    """``arr <op> value`` as DuckDB answers it: NaN equals NaN and orders above every number,
    -0.0 equals 0.0, an integer column against an integer literal outside its type's range is
    decided by the range, and against a float literal compares as float64 (so does a float32
    column: ``float32(0.1) == 0.1`` is false, as in DuckDB)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr, t = arr.dictionary_decode(), t.value_type
    arr, t = _bool_as_number(arr, t, (value,))
    arr, t, _ = _decimal_common(arr, t, (value,))
    if pa.types.is_integer(t) and _is_int(value):
        lo, hi = _int_range(t)
        if not lo <= int(value) <= hi:
            return _constant(arr, (_ABOVE if int(value) > hi else _BELOW)[op])
        return getattr(pc, _CMP[op])(arr, pa.scalar(int(value), t))
    if pa.types.is_integer(t) and _is_float(value):
        if value != value:
            return _constant(arr, _ABOVE[op])
        return getattr(pc, _CMP[op])(pc.cast(arr, pa.float64(), safe=False), pa.scalar(float(value), pa.float64()))
    if pa.types.is_floating(t) and (_is_float(value) or _is_int(value)):
        if _is_float(value) and t != pa.float64():  # a float literal is a double: float32 rows meet it as float64
            arr, t = pc.cast(arr, pa.float64()), pa.float64()
        nan = pc.is_nan(arr)
        if value != value:  # NaN literal: equal to NaN rows, above every number
            return {"==": nan, "=": nan, "!=": pc.invert(nan), "<": pc.invert(nan), "<=": _constant(arr, True),
                    ">": _constant(arr, False), ">=": nan}[op]
        out = getattr(pc, _CMP[op])(arr, pa.scalar(float(value), t) if t != pa.float16() else float(value))
        return pc.or_(out, nan) if op in (">", ">=", "!=") else out  # NaN orders above every number
    common = _temporal_common(t, (value,))
    if common is not None:  # a date or instant literal finer than the column: compare exactly
        return getattr(pc, _CMP[op])(arr.cast(common), _temporal_scalar(value, common))
    return getattr(pc, _CMP[op])(arr, pa.scalar(value, t))


_UNITS = ("s", "ms", "us", "ns")


def _unit_of(x: Any) -> str | None:
    """The finest unit a date / datetime / pandas Timestamp literal carries (None: not temporal)."""
    if hasattr(x, "nanosecond") and isinstance(x, datetime.datetime):
        return "ns"
    if isinstance(x, datetime.datetime):
        return "us"
    if isinstance(x, datetime.date):
        return "s"
    return None


def _column_unit(t: pa.DataType) -> str | None:
    if pa.types.is_timestamp(t):
        return t.unit
    return "s" if pa.types.is_date32(t) else ("ms" if pa.types.is_date64(t) else None)


def _temporal_common(t: pa.DataType, values: Any) -> pa.DataType | None:
    """The timestamp type a date / timestamp column and date / datetime literals compare in
    exactly (the finer unit; the column's zone), as DuckDB compares them (a date is its midnight);
    None when the column or a literal is not temporal or no literal is finer than the column
    (then the column's own type holds every literal exactly)."""
    col_unit = _column_unit(t)
    units = [_unit_of(v) for v in values if v is not None]
    if col_unit is None or not units or None in units:
        return None
    unit = max([col_unit, *units], key=_UNITS.index)
    if pa.types.is_timestamp(t) and unit == col_unit and all(isinstance(v, datetime.datetime) for v in values
                                                             if v is not None):
        return None
    if pa.types.is_date(t) and all(type(v) is datetime.date for v in values if v is not None):
        return None
    return pa.timestamp(unit, tz=t.tz if pa.types.is_timestamp(t) else None)


def _temporal_scalar(value: Any, t: pa.DataType) -> pa.Scalar:
    if not isinstance(value, datetime.datetime):  # a date is its midnight
        value = datetime.datetime(value.year, value.month, value.day)
    return pa.scalar(value, t)


def _is_in(arr: pa.Array, values: tuple) -> pa.Array:
    """Whether each value of ``arr`` equals one of ``values`` as DuckDB's ``IN`` decides it (nulls:
    null): -0.0 equals 0.0, NaN equals NaN, an integer that no value of the column's type can hold
    matches nothing, a float against an integer column compares as float64."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr, t = arr.dictionary_decode(), t.value_type
    values = [v for v in values if v is not None]
    arr, t = _bool_as_number(arr, t, values)
    arr, t, values = _decimal_common(arr, t, values)
    value_set = None
    if pa.types.is_integer(t) and any(_is_float(v) for v in values):
        arr, t = pc.cast(arr, pa.float64(), safe=False), pa.float64()
        values = [float(v) if _is_int(v) else v for v in values]
    elif pa.types.is_integer(t):
        lo, hi = _int_range(t)
        values = [v for v in values if not _is_int(v) or lo <= int(v) <= hi]
    elif pa.types.is_floating(t) and values and all(_is_float(v) or _is_int(v) for v in values):
        if any(_is_float(v) for v in values) and t != pa.float64():  # a double in the list: compare as float64
            arr, t = pc.cast(arr, pa.float64()), pa.float64()
        # integers as the column's floats (huge ones rounded, as DuckDB casts), never refused
        value_set = pa.array(np.array([float(v) for v in values], np.float64)).cast(t, safe=False)
    elif (common := _temporal_common(t, values)) is not None:
        arr, t = arr.cast(common), common
        values = [_temporal_scalar(v, t).as_py() for v in values]
    if value_set is None:
        try:
            value_set = pa.array(values, t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):  # e.g. a string against ints
            value_set = pa.array(values)
    if pa.types.is_floating(t) and pa.types.is_floating(value_set.type):
        arr, value_set = _unsigned_zero(arr), _unsigned_zero(value_set)
    return pc.is_in(arr, value_set=value_set, skip_nulls=True)


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
