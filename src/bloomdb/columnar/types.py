"""Column types the columnar format stores, and how each maps to a physical encoding.

``int``  (frame of reference + bit-packing): int8..int64, uint8..uint64, bool, date32, date64,
         timestamp[unit, tz] — values are widened to 64 bits (two's complement for signed types).
``float`` (plain little-endian IEEE 754): float32, float64.
``dict``  (bit-packed dictionary codes): string, large_string, binary, large_binary.

A type is persisted as a small JSON object (``{"name": "int64"}``, ``{"name": "timestamp",
"unit": "us", "tz": null}``) in the table manifest; see docs/formats.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import CorruptionError, InvalidArgument

_SIMPLE = {
    "int8": (pa.int8(), "int", True), "int16": (pa.int16(), "int", True),
    "int32": (pa.int32(), "int", True), "int64": (pa.int64(), "int", True),
    "uint8": (pa.uint8(), "int", False), "uint16": (pa.uint16(), "int", False),
    "uint32": (pa.uint32(), "int", False), "uint64": (pa.uint64(), "int", False),
    "bool": (pa.bool_(), "int", False),
    "date32": (pa.date32(), "int", True), "date64": (pa.date64(), "int", True),
    "float": (pa.float32(), "float", True), "double": (pa.float64(), "float", True),
    "string": (pa.string(), "dict", False), "large_string": (pa.large_string(), "dict", False),
    "binary": (pa.binary(), "dict", False), "large_binary": (pa.large_binary(), "dict", False),
}  # fmt: skip
_NAME_OF = {v[0]: k for k, v in _SIMPLE.items()}


@dataclass(frozen=True)
class ColumnType:
    """A stored column's Arrow type, physical encoding kind and (for ints) signedness."""

    arrow: pa.DataType
    kind: str  # "int" | "float" | "dict"
    signed: bool

    @property
    def is_string(self) -> bool:
        return pa.types.is_string(self.arrow) or pa.types.is_large_string(self.arrow)

    @property
    def storage(self) -> pa.DataType:
        """The integer type whose bits the values are (ints), else the Arrow type itself."""
        if self.kind != "int" or pa.types.is_integer(self.arrow):
            return self.arrow
        if pa.types.is_boolean(self.arrow):
            return pa.uint8()
        return pa.int32() if self.arrow.bit_width == 32 else pa.int64()

    @property
    def numpy_dtype(self) -> np.dtype:
        """dtype of decoded values (ints: the storage integer type; floats: float32/64)."""
        if self.kind == "dict":
            return np.dtype(object)
        return np.dtype(self.storage.to_pandas_dtype())

    def to_json(self) -> dict:
        t = self.arrow
        if pa.types.is_timestamp(t):
            return {"name": "timestamp", "unit": t.unit, "tz": t.tz}
        return {"name": _NAME_OF[t]}

    @classmethod
    def from_json(cls, obj: dict, source: str | None = None) -> "ColumnType":
        try:
            name = obj["name"]
            if name == "timestamp":
                return cls(pa.timestamp(obj["unit"], obj.get("tz")), "int", True)
            t, kind, signed = _SIMPLE[name]
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptionError(f"unknown column type {obj!r}", source) from exc
        return cls(t, kind, signed)

    @classmethod
    def of(cls, t: pa.DataType, column: str = "?") -> "ColumnType":
        """The stored type for an Arrow type; other types raise :class:`InvalidArgument`."""
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_string_view(t):
            t = pa.large_string()
        if pa.types.is_binary_view(t):
            t = pa.large_binary()
        if pa.types.is_timestamp(t):
            return cls(t, "int", True)
        name = _NAME_OF.get(t)
        hit = None if name is None else _SIMPLE[name]
        if hit is None:
            raise InvalidArgument(
                f"column {column!r}: type {t} is not supported by bloomdb.columnar "
                "(integers, bool, dates, timestamps, float32/64, string and binary are)"
            )
        return cls(hit[0], hit[1], hit[2])
