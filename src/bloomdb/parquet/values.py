"""Values as a Parquet column stores them: which values a column can hold at all, their physical
(plain-encoded) bytes -- what its Bloom filters hash -- and where they fall against its min/max.

The rules are parquet-format's (LogicalTypes.md): integer logical types ``INT(8|16|32, signed)``
and ``INT(8|16|32, unsigned)`` are stored in INT32, ``INT(64, *)`` in INT64, unsigned ones as the
two's-complement bit pattern of the value (``2**31`` in a uint32 column is INT32 ``-2**31``, and
``2**64 - 1`` in a uint64 column is INT64 ``-1``); statistics of unsigned columns order as unsigned
(``pyarrow``'s ``Statistics.min``/``max`` give them as Python ints already). DATE and TIME(ms) are
INT32, TIME(us/ns) and TIMESTAMP INT64, compared as signed physical integers. FLOAT / DOUBLE are
their IEEE bytes; BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY the bytes themselves (``str`` as UTF-8).

A value a column cannot hold at all (``2**40`` or ``-1`` for a uint32 column, a 3-byte string for
a 4-byte FIXED_LEN_BYTE_ARRAY, a timestamp that is not a whole day for a DATE column) can never be
in it. Decimal, INT96, BOOLEAN and FLOAT16 columns are declined (:func:`encode` returns None: the
caller must answer "may contain").

Cost: one vectorized pass over the values (a Python list of ints is converted once).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgument
from ..pyvalues import array_from_values
from ..keys import KeyBatch

__all__ = ["ColumnType", "Encoded", "column_type", "encode", "in_bounds"]

_UNITS = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}
_LEGACY_INTS = {f"{s}INT_{w}": (w, s == "") for w in (8, 16, 32, 64) for s in ("", "U")}


@dataclass(frozen=True)
class ColumnType:
    """What values a Parquet leaf column holds.

    ``family``: ``"int"`` (integer logical type or none: ``lo``..``hi`` is the value range),
    ``"temporal"`` (DATE / TIME / TIMESTAMP: ``arrow`` is the Arrow type; plain integers are taken
    as physical values), ``"float"``, ``"bytes"`` (``width`` > 0 for FIXED_LEN_BYTE_ARRAY) or
    ``"declined"``."""

    physical: str
    family: str
    lo: int = 0
    hi: int = 0
    arrow: pa.DataType | None = None
    width: int = 0


def column_type(col) -> ColumnType:
    """The :class:`ColumnType` of a ``pyarrow.parquet.ColumnSchema``."""
    phys = col.physical_type
    try:
        lt = json.loads(col.logical_type.to_json())
    except (ValueError, AttributeError):
        lt = {}
    kind = lt.get("Type", "None")
    conv = col.converted_type
    if kind in ("Decimal", "Float16") or conv == "DECIMAL":
        return ColumnType(phys, "declined")
    if phys in ("INT32", "INT64"):
        bits = 32 if phys == "INT32" else 64
        if kind == "Int":
            width, signed = int(lt["bitWidth"]), bool(lt["isSigned"])
        elif conv in _LEGACY_INTS:
            width, signed = _LEGACY_INTS[conv]
        elif kind in ("Date", "Time", "Timestamp"):
            return ColumnType(phys, "temporal", -(1 << (bits - 1)), (1 << (bits - 1)) - 1, _temporal(lt, bits))
        elif kind == "None" and conv in (None, "NONE"):
            width, signed = bits, True
        else:
            return ColumnType(phys, "declined")
        if width > bits:
            return ColumnType(phys, "declined")
        lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
        return ColumnType(phys, "int", lo, hi)
    if phys in ("FLOAT", "DOUBLE"):
        return ColumnType(phys, "float")
    if phys == "BYTE_ARRAY":
        return ColumnType(phys, "bytes")
    if phys == "FIXED_LEN_BYTE_ARRAY" and kind in ("None", "UUID"):
        return ColumnType(phys, "bytes", width=int(col.length))
    return ColumnType(phys, "declined")  # INT96, BOOLEAN, other logical types


def _temporal(lt: dict, bits: int) -> pa.DataType | None:
    kind = lt["Type"]
    if kind == "Date":
        return pa.date32()
    unit = _UNITS.get(lt.get("timeUnit", ""))
    if unit is None:
        return None
    if kind == "Timestamp":
        return pa.timestamp(unit, tz="UTC" if lt.get("isAdjustedToUTC") else None)
    return pa.time32(unit) if bits == 32 else pa.time64(unit)


@dataclass
class Encoded:
    """Values ready to probe: ``rows`` (int64) are the input positions the column can hold, ``batch``
    their plain encodings (Bloom hashing), ``loose`` (bool per row of ``rows``) those a Bloom filter
    cannot rule out (``0.0`` vs ``-0.0``, NaN), and ``key`` what :func:`in_bounds` compares."""

    rows: np.ndarray
    batch: KeyBatch
    loose: np.ndarray
    key: Any


class _Ints:
    """Integers as ``bits`` (uint64 two's complement), ``neg`` (value < 0) and ``valid`` (not null
    and within [-2**63, 2**64)): value = bits when not negative, else bits viewed as int64."""

    def __init__(self, bits: np.ndarray, neg: np.ndarray, valid: np.ndarray):
        self.bits, self.neg, self.valid = bits, neg, valid

    def __len__(self) -> int:
        return int(self.bits.shape[0])

    @classmethod
    def from_list(cls, values: list) -> "_Ints":
        ints = [int(v) for v in values]
        valid = np.array([-(1 << 63) <= v < (1 << 64) for v in ints], np.bool_)
        bits = np.array([v & 0xFFFFFFFFFFFFFFFF if ok else 0 for v, ok in zip(ints, valid)], np.uint64)
        return cls(bits, np.array([v < 0 for v in ints], np.bool_) & valid, valid)

    @classmethod
    def from_arrow(cls, arr: pa.Array) -> "_Ints":
        valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(len(arr), np.bool_)
        v = (pc.fill_null(arr, 0) if arr.null_count else arr).to_numpy(zero_copy_only=False)
        if v.dtype.kind == "u":
            return cls(v.astype(np.uint64), np.zeros(v.shape[0], np.bool_), valid)
        v = v.astype(np.int64)
        return cls(v.view(np.uint64), v < 0, valid)

    def floats(self) -> np.ndarray:
        return np.where(self.neg, self.bits.view(np.int64).astype(np.float64), self.bits.astype(np.float64))


def _as_array(values: Any) -> pa.Array | _Ints:
    """The batch ``values`` as one Arrow array (dictionaries decoded), or :class:`_Ints` for a
    Python list of integers (which may mix negatives with values >= 2**63)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.Array):
        return values.dictionary_decode() if pa.types.is_dictionary(values.type) else values
    if isinstance(values, (str, bytes, int, float)) or np.ndim(values) != 1:
        raise InvalidArgument(f"values must be a one-dimensional batch, got {type(values).__name__}")
    if isinstance(values, np.ndarray) and values.dtype.kind in "iufM":  # M: datetime64, in its own unit
        return pa.array(values)
    values = list(values)
    if values and all((type(v) is int or isinstance(v, np.integer)) for v in values):
        return _Ints.from_list(values)
    try:
        return array_from_values(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as exc:
        raise InvalidArgument(f"values must be all integers, all floats or all str/bytes: {exc}") from None


def _ge(bits: np.ndarray, neg: np.ndarray, bound: int) -> np.ndarray:
    """value >= bound, exactly, for values in bits/neg form and a Python int bound."""
    if bound <= 0:
        return ~neg | (bits.view(np.int64) >= max(bound, -(1 << 63)))
    return ~neg & (bits >= min(bound, (1 << 64) - 1)) if bound < (1 << 64) else np.zeros(bits.shape, np.bool_)


def _le(bits: np.ndarray, neg: np.ndarray, bound: int) -> np.ndarray:
    """value <= bound, exactly."""
    if bound >= 0:
        return neg | (bits <= min(bound, (1 << 64) - 1))
    return neg & (bits.view(np.int64) <= bound) if bound >= -(1 << 63) else np.zeros(bits.shape, np.bool_)


def _fixed(enc: np.ndarray) -> KeyBatch:
    enc = np.ascontiguousarray(enc)
    w = enc.dtype.itemsize
    return KeyBatch(data=enc.view(np.uint8), offsets=np.arange(0, w * (enc.shape[0] + 1), w, dtype=np.int64))


def _encode_ints(arr: pa.Array | _Ints, ct: ColumnType) -> Encoded:
    ints = arr if isinstance(arr, _Ints) else _Ints.from_arrow(arr)
    bits, neg, valid = ints.bits, ints.neg, ints.valid
    ok = valid & _ge(bits, neg, ct.lo) & _le(bits, neg, ct.hi)
    rows = np.flatnonzero(ok)
    b, n = bits[rows], neg[rows]
    phys = (b & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32) if ct.physical == "INT32" else b.view(np.int64)
    return Encoded(rows, _fixed(phys.astype("<" + phys.dtype.str[1:])), np.zeros(rows.shape[0], np.bool_), (b, n))


def _encode_temporal(arr: pa.Array, ct: ColumnType) -> Encoded | None:
    if isinstance(arr, _Ints) or pa.types.is_integer(arr.type):  # physical values (days since the epoch, ticks of the column's unit)
        return _encode_ints(arr, ct)
    t = arr.type
    if ct.arrow is None or not pa.types.is_temporal(t):
        return None
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(ct.arrow) and (t.tz is None) != (ct.arrow.tz is None):
        return None  # a local time against an instant: not comparable without a zone
    try:
        there = arr.cast(ct.arrow, safe=False)
        back = there.cast(t, safe=False)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return None
    same = pc.fill_null(pc.equal(back, arr), False).to_numpy(zero_copy_only=False)
    ints = there.view(pa.int32() if ct.physical == "INT32" else pa.int64())
    ints = pc.if_else(pa.array(same), ints, pa.nulls(len(ints), ints.type))  # not exact: not there
    return _encode_ints(ints, ct)


def _encode_floats(arr: pa.Array | _Ints, ct: ColumnType) -> Encoded:
    if isinstance(arr, _Ints):
        v, valid = arr.floats(), arr.valid
    elif not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise InvalidArgument(f"{ct.physical} column: values must be numbers, got {arr.type}")
    else:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        v = pc.fill_null(arr.cast(pa.float64(), safe=False), 0.0).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(valid)
    v = v[rows].astype("<f4" if ct.physical == "FLOAT" else "<f8")  # rounded: a value equal to x is this
    loose = (v == 0) | np.isnan(v)  # -0.0 == 0.0 under different bytes; NaNs of many payloads
    return Encoded(rows, _fixed(v), loose, v.astype(np.float64))


def _encode_bytes(arr: pa.Array | _Ints, ct: ColumnType) -> Encoded:
    t = pa.int64() if isinstance(arr, _Ints) else arr.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t) or pa.types.is_null(t)):
        raise InvalidArgument(f"{ct.physical} column: values must be str or bytes, not {t}")
    b = arr.cast(pa.large_binary())
    ok = b.is_valid()
    if ct.width:
        ok = pc.and_(ok, pc.equal(pc.binary_length(b), ct.width))
    rows = np.flatnonzero(pc.fill_null(ok, False).to_numpy(zero_copy_only=False))
    kept = b.take(pa.array(rows)) if rows.shape[0] != len(b) else b
    n = len(kept)
    bufs = kept.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, count=n + 1, offset=kept.offset * 8) if n else np.zeros(1, np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return Encoded(rows, KeyBatch(data=data, offsets=offsets, owner=kept), np.zeros(n, np.bool_), kept)


def encode(values: Any, ct: ColumnType) -> tuple[int, Encoded | None]:
    """``(number of values, Encoded)``; Encoded None when the column type is declined or the
    values' type cannot be compared with it (e.g. timestamps against a DATE column when one is a
    local time). Raises InvalidArgument for a batch that is not one (a scalar) or values of a kind
    the column never holds (str for an int column)."""
    arr = _as_array(values)
    n = len(arr)
    t = pa.int64() if isinstance(arr, _Ints) else arr.type
    if ct.family == "declined" or pa.types.is_null(t):
        return n, None
    if ct.family in ("int", "temporal"):
        if not (pa.types.is_integer(t) or pa.types.is_temporal(t)):
            raise InvalidArgument(f"{ct.physical} column: values must be integers, got {t}")
        if ct.family == "int":
            return n, (_encode_ints(arr, ct) if pa.types.is_integer(t) else None)
        return n, _encode_temporal(arr, ct)
    if ct.family == "float":
        return n, _encode_floats(arr, ct)
    return n, _encode_bytes(arr, ct)


def in_bounds(enc: Encoded, ct: ColumnType, stats) -> np.ndarray | None:
    """Per row of ``enc``: may the value lie within the chunk's min/max (None: no usable bounds).

    ``stats`` is a ``pyarrow`` Statistics (or None). Integer columns compare logical values
    (unsigned ones as unsigned), temporal ones signed physical values, floats as numbers (NaN
    bounds ignored), BYTE_ARRAY as unsigned bytes; FIXED_LEN_BYTE_ARRAY is not bounded here."""
    if stats is None or not stats.has_min_max or ct.width:
        return None
    if ct.family in ("int", "temporal"):
        lo, hi = (stats.min, stats.max) if ct.family == "int" else (stats.min_raw, stats.max_raw)
        if not isinstance(lo, int) or not isinstance(hi, int):
            return None
        bits, neg = enc.key
        return _ge(bits, neg, lo) & _le(bits, neg, hi)
    if ct.family == "float":
        lo, hi = stats.min_raw, stats.max_raw
        if not isinstance(lo, float) or not isinstance(hi, float) or np.isnan(lo) or np.isnan(hi):
            return None
        v = enc.key
        return ((v >= lo) & (v <= hi)) | np.isnan(v)
    lo, hi = stats.min_raw, stats.max_raw
    lo = lo.encode() if isinstance(lo, str) else lo
    hi = hi.encode() if isinstance(hi, str) else hi
    if not isinstance(lo, bytes) or not isinstance(hi, bytes):
        return None
    k = enc.key
    ok = pc.and_(pc.greater_equal(k, pa.scalar(lo, pa.large_binary())), pc.less_equal(k, pa.scalar(hi, pa.large_binary())))
    return pc.fill_null(ok, True).to_numpy(zero_copy_only=False)
