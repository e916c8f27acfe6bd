"""Turn user keys into the one batch form every kernel reads.

Contract
--------
A *key* is ``bytes``, ``str`` (its UTF-8 bytes) or an integer in the signed or unsigned 64-bit
range (its 8-byte little-endian two's-complement encoding, so ``-1`` and ``2**64 - 1`` are the same
key, and ``5`` and ``np.uint64(5)`` agree). The same value in another wrapper is the same key:

* any Python buffer that is not a numpy array (``bytearray``, ``memoryview``, ``array.array``,
  ``np.bytes_``, ``mmap``, a ``pyarrow.Buffer``) is **one bytes key**: its raw bytes;
* a 0-d numpy array and a pyarrow scalar are the one value they hold;
* a numpy array with dimensions is always a batch (a ``uint8`` array is a batch of small integers,
  never a bytes key), so as a single key it raises :class:`~bloomdb.errors.KeyTypeError`.

Anything else raises :class:`~bloomdb.errors.KeyTypeError`; an integer outside 64 bits raises
:class:`~bloomdb.errors.InvalidArgument`; a null (``None``, a null pyarrow scalar) is not a key.
Batch functions refuse one key given where a batch is expected (a ``str`` is never split into
characters, a buffer never into its byte values).

A *batch* becomes one or more :class:`KeyBatch` objects, each of one of two shapes:

* integers: ``ints`` is a ``uint64`` array (numpy int64/uint64 input is viewed in place, no copy);
* byte strings: ``data`` is a ``uint8`` array and ``offsets`` an ``int32`` or ``int64`` array of
  ``n + 1`` positions; key ``i`` is ``data[offsets[i]:offsets[i + 1]]`` (Arrow's layout: pyarrow
  string/binary arrays are read from their buffers without copying).

An integer key hashes exactly like its 8-byte encoding given as ``bytes``; kernels rely on that.

numpy byte strings: an ``S`` array is refused (:class:`~bloomdb.errors.KeyTypeError`), because numpy
strips trailing NUL bytes from its items (``b"a\\x00"`` would read as ``b"a"``, so a key added from
a list could read absent through it). Fixed-width keys where every byte counts go in as a ``V``
(void) array, ``arr.view("V16")``: each item is exactly its ``itemsize`` bytes. A ``U`` array is
read as numpy holds it (numpy also drops trailing ``"\\x00"`` characters from ``str`` items).

Cost: numpy/Arrow inputs are O(1) (views) except narrower integer widths (one cast) and numpy
``U`` arrays (one pass to encode). A Python list is converted once, by
numpy (all ints) or pyarrow (str/bytes), falling back to a per-key loop for mixed lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .errors import InvalidArgument, KeyTypeError

__all__ = ["KeyBatch", "to_batches", "encode_key", "Key", "U64_MASK"]

U64_MASK = (1 << 64) - 1
_I64_MIN = -(1 << 63)

Key = bytes | str | int


@dataclass(frozen=True, slots=True)
class KeyBatch:
    """A batch of keys in kernel form: either ``ints`` or ``data`` + ``offsets``.

    ``owner`` keeps the object whose memory the arrays view alive.
    """

    ints: np.ndarray | None = None
    data: np.ndarray | None = None
    offsets: np.ndarray | None = None
    owner: Any = None

    @property
    def is_int(self) -> bool:
        return self.ints is not None

    def __len__(self) -> int:
        if self.ints is not None:
            return int(self.ints.shape[0])
        return int(self.offsets.shape[0]) - 1  # type: ignore[union-attr]

    def as_bytes_list(self) -> list[bytes]:
        """The keys as Python ``bytes`` (slow; for tests and reference models)."""
        if self.ints is not None:
            return [int(x).to_bytes(8, "little") for x in self.ints]
        raw = self.data.tobytes()  # type: ignore[union-attr]
        off = self.offsets
        return [raw[off[i] : off[i + 1]] for i in range(len(self))]  # type: ignore[index]


def encode_key(key: Any) -> bytes | int:
    """One key in canonical form: ``bytes`` for strings, an ``int`` in ``[0, 2**64)`` for integers.

    Raises :class:`KeyTypeError` for other types and :class:`InvalidArgument` for an integer outside
    the signed/unsigned 64-bit range.
    """
    t = type(key)
    if t is bytes:
        return key
    if t is str:
        return key.encode("utf-8")
    if t is int or (isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_))):
        v = int(key)
        if v < _I64_MIN or v > U64_MASK:
            raise InvalidArgument(f"integer key {v} is outside the 64-bit range [-2**63, 2**64)")
        return v & U64_MASK
    if isinstance(key, str):
        return str(key).encode("utf-8")
    if isinstance(key, np.generic) and not isinstance(key, np.bytes_):
        raise KeyTypeError(f"unsupported key type numpy.{type(key).__name__}: keys are bytes, str or 64-bit integers")
    if isinstance(key, np.ndarray):
        if key.ndim == 0:
            return encode_key(key[()])
        raise KeyTypeError(
            f"a numpy array of shape {key.shape} is a batch of keys, not one key: use the *_many "
            "method (or bytes(arr) for one bytes key)"
        )
    pa = _pa()
    if pa is not None and isinstance(key, pa.Scalar):
        if not key.is_valid:
            raise KeyTypeError("a null pyarrow scalar is not a key")
        return encode_key(key.as_py())
    if _is_buffer(key):
        return memoryview(key).tobytes()
    raise KeyTypeError(
        f"unsupported key type {type(key).__name__!r}: keys are bytes, str or 64-bit integers"
    )


def _is_buffer(obj: Any) -> bool:
    """True for an object exporting the buffer protocol (bytes-like); callers rule out numpy
    arrays first."""
    try:
        memoryview(obj)
    except (TypeError, ValueError, BufferError):
        return False
    return True


def _single_key_name(keys: Any) -> str | None:
    """What ``keys`` is when it is one key rather than a batch (None for a batch)."""
    if isinstance(keys, (str, bytes, int, np.generic)):
        return type(keys).__name__
    if isinstance(keys, np.ndarray):
        return "0-d numpy array" if keys.ndim == 0 else None
    pa = _pa()
    if pa is not None and isinstance(keys, pa.Scalar):
        return f"pyarrow scalar ({keys.type})"
    if _is_buffer(keys):
        return f"{type(keys).__name__} (a buffer is one bytes key)"
    return None


def _from_int_array(arr: np.ndarray, owner: Any = None) -> KeyBatch:
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.uint64:
        ints = arr
    elif arr.dtype == np.int64:
        ints = arr.view(np.uint64)
    elif arr.dtype.kind == "i":
        ints = arr.astype(np.int64).view(np.uint64)
    else:
        ints = arr.astype(np.uint64)
    return KeyBatch(ints=ints.reshape(-1), owner=owner if owner is not None else arr)


def _refuse_s_array(arr: np.ndarray) -> KeyBatch:
    """numpy ``S`` arrays are refused: numpy pads items with NUL bytes and strips trailing NULs, so
    ``b"a\\x00"`` in one reads as ``b"a"`` and a key added as bytes would read absent."""
    w = arr.dtype.itemsize
    raise KeyTypeError(
        f"numpy {arr.dtype} (S) arrays are not accepted as keys: numpy drops trailing NUL bytes "
        "(b'a\\x00' reads as b'a'), so a key could silently read absent. Pass a list of bytes or a "
        "pyarrow binary array; for keys of exactly "
        f"{w} bytes each (NULs included), pass arr.view('V{w}')"
    )


def _from_fixed_width(arr: np.ndarray) -> KeyBatch:
    """numpy ``V`` (void) array: item ``i`` is exactly its ``itemsize`` bytes, NULs included."""
    n = arr.shape[0]
    width = arr.dtype.itemsize
    data = np.ascontiguousarray(arr).view(np.uint8).reshape(-1) if n and width else np.zeros(0, np.uint8)
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return KeyBatch(data=data, offsets=offsets, owner=arr)


def _pa():
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        return None
    return pa


def _from_arrow_array(arr: Any) -> KeyBatch:
    pa = _pa()
    t = arr.type
    if arr.null_count:
        raise InvalidArgument(f"key batch has {arr.null_count} null value(s); nulls are not keys")
    if pa.types.is_integer(t):
        return _from_int_array(arr.to_numpy(zero_copy_only=True), owner=arr)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr = arr.cast(pa.large_binary())
        t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        off_dtype = np.int32
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        off_dtype = np.int64
    elif pa.types.is_fixed_size_binary(t):
        arr = arr.cast(pa.binary())
        off_dtype = np.int32
    else:
        raise KeyTypeError(f"unsupported Arrow key type {t}: use string, binary or an integer type")
    bufs = arr.buffers()
    n = len(arr)
    offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=arr.offset + n + 1)[arr.offset :]
    data = (
        np.frombuffer(bufs[2], dtype=np.uint8)
        if bufs[2] is not None and bufs[2].size
        else np.zeros(0, np.uint8)
    )
    return KeyBatch(data=data, offsets=offsets, owner=arr)


def _from_mixed_list(keys: Iterable[Any]) -> KeyBatch:
    pa = _pa()
    encoded = [encode_key(k) for k in keys]
    if all(type(e) is int for e in encoded):
        return KeyBatch(ints=np.array(encoded, dtype=np.uint64))
    encoded = [e.to_bytes(8, "little") if type(e) is int else e for e in encoded]
    return _from_arrow_array(pa.array(encoded, type=pa.large_binary()))


def _from_list(keys: list | tuple) -> KeyBatch:
    if len(keys) == 0:
        return KeyBatch(ints=np.zeros(0, np.uint64))
    first = keys[0]
    pa = _pa()
    if type(first) is int:
        # One C pass to be sure every element is a plain int (numpy and pyarrow would both
        # silently truncate a float), then a typed conversion: int64, else uint64, else per key.
        if set(map(type, keys)) == {int}:
            for arrow_type in (pa.int64(), pa.uint64()):
                try:
                    return _from_arrow_array(pa.array(keys, type=arrow_type))
                except OverflowError:
                    continue
        return _from_mixed_list(keys)
    if type(first) is str or type(first) is bytes:
        try:
            arr = pa.array(keys, type=pa.large_string() if type(first) is str else pa.large_binary())
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            return _from_mixed_list(keys)
        if arr.null_count:
            # None (or another null-like) somewhere in the list: let the per-key path name it.
            return _from_mixed_list(keys)
        return _from_arrow_array(arr)
    return _from_mixed_list(keys)


def to_batches(keys: Any) -> list[KeyBatch]:
    """Convert a batch of keys into one or more :class:`KeyBatch` (one per Arrow chunk).

    Accepts a list/tuple of keys (types may mix), a 1-D numpy integer / ``U`` / ``V`` / object array
    (or an (n, 1) column; other shapes raise InvalidArgument naming the shape),
    a pyarrow integer/string/binary (large or not) ``Array`` or ``ChunkedArray``, or any object
    exposing the Arrow C data interface (pandas/Polars series). One key (``str``, ``bytes``, an
    integer, any non-numpy buffer such as a ``memoryview`` or ``bytearray``, a 0-d array, a pyarrow
    scalar) is refused with KeyTypeError (pass ``[key]`` or use the single-key method), so a string
    is never split into characters nor a buffer into its byte values. Any other iterable (a set, a
    range, a generator) gives the keys it yields: a dict its keys, as ``set.update`` and rbloom's
    ``update`` take them.
    """
    if isinstance(keys, KeyBatch):
        return [keys]
    if isinstance(keys, (list, tuple)):
        return [_from_list(keys)]
    single = _single_key_name(keys)
    if single is not None:
        raise KeyTypeError(
            f"expected a batch of keys, got a single {single}; "
            "wrap it in a list or use the single-key method"
        )
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            if keys.ndim != 2 or keys.shape[1] != 1:
                raise InvalidArgument(
                    f"expected a 1-D array of keys, got a numpy array of shape {keys.shape}: a key is one "
                    "item, never a row (rbloom refuses it too); pass arr.ravel() for every item as a key, "
                    f"or arr.view('V{keys.dtype.itemsize * keys.shape[-1]}') (C-contiguous) for each row's bytes "
                    "as one key"
                )
            keys = keys.reshape(-1)  # a column (n, 1): one key per row, e.g. an (n, 16) uint8 array .view("V16")
        kind = keys.dtype.kind
        if kind in "iu":
            return [_from_int_array(keys)]
        if kind == "S":
            return [_refuse_s_array(keys)]
        if kind == "V" and keys.dtype.fields is None:
            return [_from_fixed_width(keys)]
        if kind == "U":
            pa = _pa()
            return [_from_arrow_array(pa.array(keys, type=pa.large_string()))]
        if kind == "O":
            return [_from_list(keys.tolist())]
        raise KeyTypeError(f"unsupported numpy key dtype {keys.dtype}: use integers, U or V (fixed-width bytes) arrays")
    pa = _pa()
    if pa is not None:
        if isinstance(keys, pa.ChunkedArray):
            return [_from_arrow_array(c) for c in keys.chunks if len(c)] or [
                KeyBatch(ints=np.zeros(0, np.uint64))
            ]
        if isinstance(keys, pa.Array):
            return [_from_arrow_array(keys)]
        if hasattr(keys, "__arrow_c_stream__") or hasattr(keys, "__arrow_c_array__"):
            try:
                obj = pa.chunked_array(keys) if hasattr(keys, "__arrow_c_stream__") else pa.array(keys)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
                raise KeyTypeError(f"cannot read keys from {type(keys).__name__}: {exc}") from exc
            return to_batches(obj)
    if hasattr(keys, "to_numpy") and not isinstance(keys, (str, bytes)):
        return to_batches(keys.to_numpy())
    if isinstance(keys, (range, set, frozenset)) or hasattr(keys, "__iter__"):
        return [_from_list(list(keys))]
    raise KeyTypeError(f"unsupported key batch type {type(keys).__name__!r}")
