"""Join keys in kernel form: integer keys as ``uint64`` bits, string keys as bytes + offsets.

Integer-like Arrow types (ints, dates, timestamps) become their value widened to 64 bits (two's
complement), so ``int32 -5`` and ``int64 -5`` are the same key; strings and binary become their
bytes (UTF-8 for strings). Nulls are reported in ``valid`` and never match.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgument
from ..hashing import hash_batch
from ..keys import KeyBatch


def _ro(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def key_kind(t: pa.DataType, column: str) -> str:
    """``"int"`` or ``"bytes"`` for a join key column type; others raise InvalidArgument."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "int"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t) \
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t):  # fmt: skip
        return "bytes"
    raise InvalidArgument(f"join key {column!r} has type {t}; keys must be integers, dates, timestamps, strings or binary")


@dataclass
class JoinKeys:
    """One chunk of keys: ``ints`` (uint64, read-only) or ``data``/``offsets`` (uint8/int64), plus
    ``valid`` (bool, True = not null) or None when there are no nulls."""

    n: int
    ints: np.ndarray | None = None
    data: np.ndarray | None = None
    offsets: np.ndarray | None = None
    valid: np.ndarray | None = None
    _hashes: np.ndarray | None = None

    @property
    def batch(self) -> KeyBatch:
        if self.ints is not None:
            return KeyBatch(ints=self.ints)
        return KeyBatch(data=self.data, offsets=self.offsets)

    def hashes(self) -> np.ndarray:
        """XXH3-64 of every key (computed once; null slots hash whatever they hold)."""
        if self._hashes is None:
            self._hashes = _ro(hash_batch(self.batch)) if self.n else np.zeros(0, np.uint64)
        return self._hashes

    def valid_or_empty(self) -> np.ndarray:
        return _ro(self.valid) if self.valid is not None else _NO_VALID


_NO_VALID = _ro(np.zeros(0, np.bool_))


def int_bits(values: np.ndarray) -> np.ndarray:
    """Integer values widened to 64 bits, as uint64 (read-only; no copy for int64/uint64)."""
    if values.dtype == np.uint64:
        return _ro(values)
    if values.dtype == np.int64:
        return _ro(values.view(np.uint64))
    if values.dtype.kind == "i":
        return _ro(values.astype(np.int64).view(np.uint64))
    return _ro(values.astype(np.uint64))


def from_arrow(arr: pa.Array | pa.ChunkedArray, kind: str) -> JoinKeys:
    """Keys of an Arrow array (chunked arrays are combined)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    n = len(arr)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    if kind == "int":
        t = arr.type
        if not pa.types.is_integer(t):
            arr = arr.view(pa.int32() if t.bit_width == 32 else pa.int64())
        if arr.null_count:
            arr = pc.fill_null(arr, 0)
        return JoinKeys(n, ints=int_bits(arr.to_numpy(zero_copy_only=False)), valid=valid)
    arr = arr.cast(pa.large_binary())
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, count=n + 1, offset=arr.offset * 8) if n else np.zeros(1, np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return JoinKeys(n, data=_ro(data), offsets=_ro(offsets), valid=valid)
