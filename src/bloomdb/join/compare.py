"""Which join keys are equal: the comparison domain of two key types, as DuckDB decides it.

Keys are compared by value, never by their stored bits. :func:`key_domain` looks at the probe's
and the build's Arrow key types (dictionary types by their value type) and returns a
:class:`KeyDomain`: the one representation both sides' keys are converted into before hashing,
the hash table, the pushed-down filter and min/max pruning see them. Integer domains hold 64-bit
words, so every engine below keeps comparing (and hashing) ``uint64`` words; only their meaning
is fixed here, once per join.

=================  ===========================================================================
key types          compared as
=================  ===========================================================================
int / uint / bool  exact integer values: uint64 on both sides unsigned, else int64 (a uint64
                   above 2^63-1 then equals no key of the other side); bool is 0/1
float and number   float32 when the float side(s) are float32 (an integer is rounded to float32
                   first, as DuckDB does), else float64; -0.0 equals 0.0 and NaN equals NaN
date / timestamp   instants: both sides scaled to the finer unit (date = midnight, days when
                   both are dates); date64 is the day it falls in (truncated, as DuckDB reads
                   it); a value that overflows the finer unit equals nothing; ±(2^63-1)
                   timestamps and ±(2^31-1) dates are DuckDB's ±infinity, equal across units.
                   Timestamps with a time zone join timestamps with a time zone (any zones:
                   the stored values are UTC instants)
string / binary    their bytes (UTF-8 for strings): string, large_string, binary, large_binary
                   and the view types join each other
=================  ===========================================================================

A key column of Arrow's null type (an all-None pandas column) takes the other side's domain and
matches nothing, as DuckDB's NULL-typed column; two null-typed keys compare as int64 (nothing).

Refused with :class:`InvalidArgument` naming both types: every other combination. That is every
pair DuckDB refuses (date or timestamp with a number, binary with a number, ...) and, stricter
than DuckDB, string with a number, bool or date (DuckDB casts each string and fails on the first
that does not parse), a timestamp with a time zone with one without, or with a date (DuckDB's
answer depends on the session's time zone), and decimal, time, duration and nested keys.

Cost: one vectorised numpy pass per key chunk (none for int64/uint64 keys in their own domain).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgument

_I64_MAX = np.iinfo(np.int64).max
_DATE_INF = np.iinfo(np.int32).max  # DuckDB's date 'infinity' (and -_DATE_INF for '-infinity')
_MS_PER_DAY = 86_400_000
_UNIT_EXP = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_CANON_NAN = np.float64("nan")


@dataclass(frozen=True)
class _Type:
    """What a key type is for comparison: class, and its width / unit / zone."""

    cls: str  # int | uint | bool | float | date | ts | bytes
    bits: int = 64  # int/uint/float width
    exp: int = -1  # ts: 0 (s) .. 9 (ns); dates: -1
    date64: bool = False
    tz: bool = False


def _classify(t: pa.DataType) -> _Type | None:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return _Type("bool", 8)
    if pa.types.is_signed_integer(t):
        return _Type("int", t.bit_width)
    if pa.types.is_unsigned_integer(t):
        return _Type("uint", t.bit_width)
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return _Type("float", t.bit_width)
    if pa.types.is_date(t):
        return _Type("date", date64=pa.types.is_date64(t))
    if pa.types.is_timestamp(t):
        return _Type("ts", exp=_UNIT_EXP[t.unit], tz=t.tz is not None)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t) \
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t):  # fmt: skip
        return _Type("bytes")
    return None


@dataclass(frozen=True)
class KeyDomain:
    """The values both sides' keys are compared as (see the module docstring).

    ``kind``: ``"int"`` (keys become ``uint64`` words) or ``"bytes"``. ``order``: how the words
    order, for min/max pruning — ``"int64"``, ``"uint64"``, ``"float"`` (no pruning) or
    ``"bytes"``. ``exp``: temporal domains' unit (-1 = days, 0..9 = 10^-exp seconds).
    """

    kind: str
    order: str
    name: str
    exp: int = -1
    float32: bool = False

    # ---- one side's values into the domain ----------------------------------------------------

    def encode(self, values: np.ndarray, valid: np.ndarray | None, t: pa.DataType) -> tuple[np.ndarray, np.ndarray | None]:
        """``(words, valid)``: the values of a key column of type ``t`` (a numpy array of its
        storage integers, bools, floats or datetime64; null slots hold anything) as uint64 words
        of this domain. ``valid`` comes back with unrepresentable values cleared (they equal no
        key of the other side); None when every row is valid. A null-typed column's keys are all null."""
        if pa.types.is_null(t):
            n = len(values)
            return _ro(np.zeros(n, np.uint64)), np.zeros(n, np.bool_)
        c = _classify(t)
        v = np.asarray(values)
        if v.dtype.kind in "mM":
            v = v.view(np.int64)
        if v.dtype == np.bool_:
            v = v.view(np.uint8)
        ok = None
        if self.order == "float":
            f = v.astype(np.float32).astype(np.float64) if self.float32 else v.astype(np.float64)
            f = np.where(np.isnan(f), _CANON_NAN, f + 0.0)  # -0.0 + 0.0 == +0.0; one NaN bit pattern
            words = f.view(np.uint64)
        elif self.order == "uint64":
            words = v if v.dtype == np.uint64 else v.astype(np.uint64)
        elif c.cls in ("int", "uint", "bool"):
            if v.dtype == np.uint64:
                ok, words = v <= np.uint64(_I64_MAX), v
            else:
                words = (v if v.dtype == np.int64 else v.astype(np.int64)).view(np.uint64)
        else:
            words, ok = self._temporal(v.astype(np.int64, copy=False), c)
        if ok is not None and not ok.all():
            valid = ok if valid is None else (valid & ok)
        return _ro(words), valid

    def _temporal(self, x: np.ndarray, c: _Type) -> tuple[np.ndarray, np.ndarray | None]:
        ok = None
        if c.date64:  # DuckDB reads date64 as the day, truncated toward zero
            x = np.where(x < 0, -((-x) // _MS_PER_DAY), x // _MS_PER_DAY)
            ok = (x >= -_DATE_INF) & (x <= _DATE_INF)
        scale = _scale(c, self.exp)
        if scale == 1:
            return x.view(np.uint64), ok
        inf = _DATE_INF if c.cls == "date" else _I64_MAX
        pos, neg = x == inf, x == -inf
        bound = _I64_MAX // scale
        fits = (x >= -bound) & (x <= bound)
        y = np.where(fits, x, 0) * scale
        y = np.where(pos, _I64_MAX, np.where(neg, -_I64_MAX, y))
        keep = fits | pos | neg
        return y.view(np.uint64), keep if ok is None else (ok & keep)

    # ---- back to one side (Parquet Bloom pruning), and min/max ---------------------------------

    def decode(self, words: np.ndarray, t: pa.DataType) -> np.ndarray | None:
        """The values of type ``t`` (its storage integers) whose domain words are ``words``,
        leaving out words no value of ``t`` maps to; None when this is not computable here."""
        c = _classify(t)
        if self.order == "float" or c.cls == "bool" or c.date64:
            return None
        if c.cls in ("int", "uint"):
            lo, hi = _int_range(c)
            if self.order == "uint64":
                return words[words <= np.uint64(hi)].astype(np.dtype(f"u{c.bits // 8}"))
            x = words.view(np.int64)
            x = x[(x >= lo) & (x <= min(hi, _I64_MAX))]
            return x.astype(np.dtype(f"{'u' if c.cls == 'uint' else 'i'}{c.bits // 8}"))
        x = words.view(np.int64)
        scale = _scale(c, self.exp)
        if scale == 1:
            return x.astype(np.int32) if c.cls == "date" else x
        inf = _DATE_INF if c.cls == "date" else _I64_MAX
        exact = x[(x % scale == 0) & (np.abs(x) != _I64_MAX)] // scale
        exact = exact[(exact > -inf) & (exact < inf)]
        infs = np.array([v for v, w in ((inf, _I64_MAX), (-inf, -_I64_MAX)) if (x == w).any()], np.int64)
        out = np.concatenate([exact, infs])
        return out.astype(np.int32) if c.cls == "date" else out

    def to_arrow(self, values: np.ndarray | None, t: pa.DataType) -> pa.Array | None:
        """:meth:`decode`'s storage integers as an Arrow array of ``t`` (dictionaries: their
        value type); None stays None."""
        if values is None:
            return None
        if pa.types.is_dictionary(t):
            t = t.value_type
        return pa.array(values, _storage_type(t, _classify(t))).view(t)

    def stat_range(self, lo, hi, t: pa.DataType):
        """Chunk statistics ``(lo, hi)`` of a column of type ``t`` as domain values that order as
        :attr:`order` says (ints, or bytes), or None when they cannot be used for pruning."""
        if lo is None or hi is None or self.order == "float":
            return None
        if self.order == "bytes":
            out = [s.encode() if isinstance(s, str) else s for s in (lo, hi)]
            return tuple(out) if all(isinstance(s, bytes) for s in out) else None
        c = _classify(t)
        if c.cls in ("int", "uint") and isinstance(lo, int) and isinstance(hi, int):  # the common case, cheaply
            if lo > hi or (c.cls == "uint" and lo < 0) or (self.order == "int64" and hi > _I64_MAX):
                return None
            return (lo, hi) if self.order in ("int64", "uint64") else None
        storage = _storage_type(t, c)
        try:
            if c.cls in ("date", "ts"):
                raw = pa.array([lo, hi], t).view(storage)
            else:
                raw = pa.array([int(lo), int(hi)], storage)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        words, valid = self.encode(raw.to_numpy(zero_copy_only=False), None, t)
        if valid is not None:
            return None  # an end outside the domain: do not prune
        vals = words.view(np.int64) if self.order == "int64" else words
        return int(vals[0]), int(vals[1])


def _ro(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _scale(c: _Type, exp: int) -> int:
    """Multiplier taking a value of class ``c`` to the temporal unit ``exp``."""
    if exp < 0:
        return 1
    if c.cls == "date":
        return 86_400 * 10**exp
    return 10 ** (exp - c.exp)


def _int_range(c: _Type) -> tuple[int, int]:
    if c.cls == "uint":
        return 0, 2**c.bits - 1
    return -(2 ** (c.bits - 1)), 2 ** (c.bits - 1) - 1


def _storage_type(t: pa.DataType, c: _Type) -> pa.DataType:
    if c.cls == "bool":
        return pa.uint8()
    if c.cls == "date":
        return pa.int64() if c.date64 else pa.int32()
    if c.cls == "ts":
        return pa.int64()
    return t.value_type if pa.types.is_dictionary(t) else t


def _refuse(pkey: str, ptype: pa.DataType, bkey: str, btype: pa.DataType, why: str) -> InvalidArgument:
    return InvalidArgument(f"cannot join probe key {pkey!r} ({ptype}) with build key {bkey!r} ({btype}): {why}")


_NUMBERS = ("int", "uint", "bool")


def key_domain(pkey: str, ptype: pa.DataType, bkey: str, btype: pa.DataType) -> KeyDomain:
    """The domain the probe key (``pkey`` of ``ptype``) and the build key are compared in.

    Raises InvalidArgument naming both keys and types for a pair that has none (module docstring).
    """
    if pa.types.is_null(ptype) or pa.types.is_null(btype):  # an all-null column (pandas' all-None): matches nothing
        other = btype if pa.types.is_null(ptype) else ptype
        if pa.types.is_null(other):
            return KeyDomain("int", "int64", "int64")
        if _classify(other) is None:
            raise _refuse(pkey, ptype, bkey, btype, f"{other} keys are not supported (keys are integers, bool, "
                          "floats, dates, timestamps, strings or binary)")
        return key_domain(pkey, other, bkey, other)
    p, b = _classify(ptype), _classify(btype)
    for t, c in ((ptype, p), (btype, b)):
        if c is None:
            raise _refuse(pkey, ptype, bkey, btype, f"{t} keys are not supported (keys are integers, bool, floats, "
                          "dates, timestamps, strings or binary)")
    pair = {p.cls, b.cls}
    if pair == {"bytes"}:
        return KeyDomain("bytes", "bytes", "bytes")
    if pair <= set(_NUMBERS):
        if p.cls != "int" and b.cls != "int":
            return KeyDomain("int", "uint64", "uint64")
        return KeyDomain("int", "int64", "int64")
    if "float" in pair and pair <= {"float", *_NUMBERS}:
        f32 = all(c.bits == 32 for c in (p, b) if c.cls == "float")
        return KeyDomain("int", "float", "float32" if f32 else "float64", float32=f32)
    if pair <= {"date", "ts"}:
        if pair == {"ts"} and p.tz != b.tz:
            raise _refuse(pkey, ptype, bkey, btype, "a timestamp with a time zone compares with one without only "
                          "through the session's time zone; cast one side")
        if "ts" in pair and any(c.tz for c in (p, b)) and "date" in pair:
            raise _refuse(pkey, ptype, bkey, btype, "a date compares with a timestamp with a time zone only through "
                          "the session's time zone; cast one side")
        exp = max(c.exp for c in (p, b))
        unit = {-1: "date", 0: "s", 3: "ms", 6: "us", 9: "ns"}[exp]
        return KeyDomain("int", "int64", unit if exp < 0 else f"timestamp[{unit}]", exp=exp)
    raise _refuse(pkey, ptype, bkey, btype, "the types have no common type to compare in (cast one side)")
