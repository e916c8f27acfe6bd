"""Read the split-block Bloom filters Parquet files carry, and ask which row groups may hold values.

>>> from bloomdb import parquet
>>> parquet.read_filters("events.parquet", "user_id")          # one ColumnBloom (or None) per row group
>>> parquet.row_groups_that_may_contain("events.parquet", "user_id", [17, 42])
array([[ True, False], [False, False]])                           # value x row group

Where a filter is: pyarrow's footer metadata gives each column chunk's ``bloom_filter_offset``
and ``bloom_filter_length``; at the offset sits a Thrift compact-protocol ``BloomFilterHeader``
(``1: i32 numBytes; 2: algorithm = union {1: BLOCK}; 3: hash = union {1: XXHASH};
4: compression = union {1: UNCOMPRESSED}``) followed by ``numBytes`` of bitset. The header is
parsed here by hand (pyarrow does not expose Bloom filters to Python, and four fields do not
justify a Thrift dependency); an algorithm, hash or compression other than those raises
:class:`UnsupportedBloomFilter`.

Values are hashed as Parquet does — XXH64 (seed 0) of the plain encoding of the column's
*physical* type: INT32 as 4 bytes little-endian, INT64 as 8, FLOAT / DOUBLE as their IEEE bytes,
BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY as the bytes themselves (``str`` as UTF-8). Pass physical
values (e.g. days since the epoch for a DATE column, which is INT32).

Cost: one footer read plus one read per filter; the probe is one compiled pass over
values x row groups (one 32-byte block per probe).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import CorruptionError, InvalidArgument
from ..filters import _sbbf_kernels as _K
from ..keys import KeyBatch, to_batches
from .column_bloom import ColumnBloom
from .values import column_type, encode, in_bounds

__all__ = ["read_filters", "row_groups_that_may_contain", "hash_values", "UnsupportedBloomFilter",
           "parse_bloom_filter_header"]


class UnsupportedBloomFilter(CorruptionError):
    """A Bloom filter this reader does not know (algorithm, hash or compression)."""


# ---- Thrift compact protocol (just enough for BloomFilterHeader) -------------------------------

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class _Compact:
    """A reader of Thrift compact-protocol values from ``buf`` (unknown fields are parsed and kept)."""

    def __init__(self, buf: bytes, source: str | None):
        self.buf = buf
        self.pos = 0
        self.source = source

    def _byte(self) -> int:
        if self.pos >= len(self.buf):
            raise CorruptionError("truncated Parquet BloomFilterHeader", self.source)
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def _varint(self) -> int:
        out = shift = 0
        while True:
            b = self._byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise CorruptionError("bad varint in Parquet BloomFilterHeader", self.source)

    def _zigzag(self) -> int:
        v = self._varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, t: int) -> Any:
        if t in (_TRUE, _FALSE):
            return t == _TRUE
        if t == _BYTE:
            return self._byte()
        if t in (_I16, _I32, _I64):
            return self._zigzag()
        if t == _DOUBLE:
            self.pos += 8
            return None
        if t == _BINARY:
            n = self._varint()
            self.pos += n
            return self.buf[self.pos - n : self.pos]
        if t in (_LIST, _SET):
            head = self._byte()
            n = head >> 4 if head >> 4 != 15 else self._varint()
            return [self.value(head & 15) if head & 15 not in (_TRUE, _FALSE) else self._byte() == 1 for _ in range(n)]
        if t == _MAP:
            n = self._varint()
            kv = self._byte() if n else 0
            return {self.value(kv >> 4): self.value(kv & 15) for _ in range(n)}
        if t == _STRUCT:
            return self.struct()
        raise CorruptionError(f"unknown Thrift compact type {t} in Parquet BloomFilterHeader", self.source)

    def struct(self) -> dict[int, Any]:
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self._byte()
            if head == _STOP:
                return fields
            delta, t = head >> 4, head & 15
            fid = last + delta if delta else self._zigzag()
            fields[fid] = self.value(t)
            last = fid


def parse_bloom_filter_header(buf: bytes, source: str | None = None) -> tuple[int, int]:
    """``(numBytes, header_length)`` of the BloomFilterHeader at the start of ``buf``.

    Raises :class:`UnsupportedBloomFilter` unless the filter is BLOCK / XXHASH / UNCOMPRESSED,
    :class:`~bloomdb.errors.CorruptionError` when the header is malformed.
    """
    r = _Compact(buf, source)
    f = r.struct()
    num_bytes = f.get(1)
    if not isinstance(num_bytes, int) or any(i not in f for i in (2, 3, 4)):
        raise CorruptionError(f"Parquet BloomFilterHeader lacks required fields: {sorted(f)}", source)
    for fid, what, known in ((2, "algorithm", "BLOCK"), (3, "hash", "XXHASH"), (4, "compression", "UNCOMPRESSED")):
        v = f[fid]
        if not isinstance(v, dict) or set(v) != {1}:
            member = sorted(v) if isinstance(v, dict) else v
            raise UnsupportedBloomFilter(
                f"Parquet Bloom filter {what} {member!r} is not supported (only {known}, field 1)", source
            )
    if num_bytes <= 0 or num_bytes % 32:
        raise CorruptionError(f"Parquet Bloom filter numBytes {num_bytes} is not a positive multiple of 32", source)
    return num_bytes, r.pos


# ---- reading filters ----------------------------------------------------------------------------


def _column_index(metadata, column: str, source: str) -> int:
    schema = metadata.schema
    names = [schema.column(i).path for i in range(len(schema))]
    if column in names:
        return names.index(column)
    raise InvalidArgument(f"column {column!r} is not in {source}; columns: {', '.join(names)}")


def _open(path) -> tuple[Any, int, str]:
    import pyarrow.parquet as pq

    source = os.fspath(path)
    try:
        pf = pq.ParquetFile(source)
        return pf.metadata, os.path.getsize(source), source
    except (pa.ArrowException, OSError) as exc:
        raise InvalidArgument(f"cannot read {source} as Parquet: {exc}") from None


def _read_bitset(fh, offset: int, length: int | None, file_size: int, source: str) -> np.ndarray:
    if offset < 0 or offset >= file_size:
        raise CorruptionError(f"bloom_filter_offset {offset} is outside the file ({file_size} bytes)", source)
    fh.seek(offset)
    head = fh.read(length if length else min(256, file_size - offset))
    num_bytes, hlen = parse_bloom_filter_header(head, source)
    if length and hlen + num_bytes != length:
        raise CorruptionError(
            f"Bloom filter at {offset}: header + {num_bytes} bytes != bloom_filter_length {length}", source
        )
    if offset + hlen + num_bytes > file_size:
        raise CorruptionError(f"Bloom filter at {offset} runs past the end of the file", source)
    if length:
        body = head[hlen:]
    else:
        fh.seek(offset + hlen)
        body = fh.read(num_bytes)
    return np.frombuffer(body, dtype=np.uint8)


def _bitsets(metadata, ci: int, size: int, source: str) -> list[np.ndarray | None]:
    out: list[np.ndarray | None] = []
    with open(source, "rb") as fh:
        for g in range(metadata.num_row_groups):
            chunk = metadata.row_group(g).column(ci)
            offset = chunk.bloom_filter_offset
            if offset is None or offset <= 0:
                out.append(None)
                continue
            length = chunk.bloom_filter_length
            out.append(_read_bitset(fh, int(offset), int(length) if length else None, size, source))
    return out


def read_filters(path: str | os.PathLike, column: str) -> list[ColumnBloom | None]:
    """The split-block Bloom filter of ``column`` in every row group of the Parquet file at
    ``path`` (``None`` where the column chunk has none), in row-group order: each a
    :class:`~.column_bloom.ColumnBloom`, a ``SplitBlockBloom`` that takes the column's own values
    (``might_contain(5)`` on an INT32 column hashes the 4 bytes the column stores).

    ``column`` is the column's dotted path (``"a.b"`` for nested fields). Raises InvalidArgument
    for an unknown column, :class:`UnsupportedBloomFilter` / CorruptionError for filters that
    cannot be read. Cost: the footer plus each filter's bytes.
    """
    metadata, size, source = _open(path)
    ci = _column_index(metadata, column, source)
    bitsets = _bitsets(metadata, ci, size, source)
    ct = column_type(metadata.schema.column(ci))
    return [None if b is None else ColumnBloom.for_column(b, ct) for b in bitsets]


# ---- hashing values as Parquet does ---------------------------------------------------------


def _fixed_width(values: Any, dtype: str, physical: str) -> KeyBatch:
    """Values as the Parquet plain encoding of a fixed-width type (``dtype`` little-endian)."""
    arr = values.to_numpy(zero_copy_only=False) if hasattr(values, "to_numpy") else np.asarray(values)
    if arr.ndim != 1:
        raise InvalidArgument(f"{physical} column: values must be a one-dimensional batch, got shape {arr.shape}")
    if np.dtype(dtype).kind == "i":
        if arr.dtype.kind not in "iu":
            raise InvalidArgument(f"{physical} column: values must be integers, got {arr.dtype}")
        info = np.iinfo(dtype)
        if arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
            raise InvalidArgument(f"{physical} column: values outside the {np.dtype(dtype).name} range")
    elif arr.dtype.kind not in "iuf":
        raise InvalidArgument(f"{physical} column: values must be numbers, got {arr.dtype}")
    enc = np.ascontiguousarray(arr.astype("<" + dtype))
    width = enc.dtype.itemsize
    return KeyBatch(data=enc.view(np.uint8), offsets=np.arange(0, width * (enc.shape[0] + 1), width, dtype=np.int64))


def hash_values(values: Any, physical_type: str) -> np.ndarray:
    """XXH64 (seed 0) of each value's Parquet plain encoding for a column of ``physical_type``
    (``"INT32"``, ``"INT64"``, ``"FLOAT"``, ``"DOUBLE"``, ``"BYTE_ARRAY"``,
    ``"FIXED_LEN_BYTE_ARRAY"``) — the hash Parquet Bloom filters are probed with."""
    from ..hashing import hash_batch_xxh64

    if physical_type == "INT32":
        return hash_batch_xxh64(_fixed_width(values, "i4", physical_type), 0)
    if physical_type == "FLOAT":
        return hash_batch_xxh64(_fixed_width(values, "f4", physical_type), 0)
    if physical_type == "DOUBLE":
        return hash_batch_xxh64(_fixed_width(values, "f8", physical_type), 0)
    if physical_type in ("INT64", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        batches = to_batches(values)
        if physical_type == "INT64":
            for b in batches:
                if not b.is_int:
                    raise InvalidArgument("INT64 column: values must be integers")
        elif any(b.is_int for b in batches if len(b)):
            raise InvalidArgument(f"{physical_type} column: values must be str or bytes, not integers")
        parts = [hash_batch_xxh64(b, 0) for b in batches]
        return np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    raise InvalidArgument(f"Parquet Bloom filters are not defined for {physical_type} columns")


def row_groups_that_may_contain(path: str | os.PathLike, column: str, values: Any) -> np.ndarray:
    """Which row groups of ``path`` may hold each of ``values`` in ``column``, by their Bloom
    filters and min/max statistics.

    Returns a bool array of shape ``(len(values), num_row_groups)``: False means the row group
    cannot hold the value (its filter proves it absent, it lies outside the chunk's min/max, or
    the column cannot hold it at all -- ``2**40`` or ``-1`` for a uint32 column; a null value);
    True means it may be there, including every row group without a filter or statistics.

    Values are the column's *logical* values for integer columns (``2**31`` for a uint32 column
    is hashed as the INT32 ``-2**31`` Parquet stores, see :mod:`.values`); for DATE / TIME /
    TIMESTAMP columns, Arrow temporal arrays (converted exactly to the column's unit) or plain
    integers taken as physical values; numbers for FLOAT / DOUBLE; str or bytes for BYTE_ARRAY and
    FIXED_LEN_BYTE_ARRAY. Decimal, INT96, BOOLEAN and FLOAT16 columns answer True everywhere.
    Raises InvalidArgument for an unknown column, a scalar, or values of a kind the column never
    holds (str for an integer column). Cost: the footer, the filters, one compiled pass.
    """
    metadata, size, source = _open(path)
    ci = _column_index(metadata, column, source)
    ct = column_type(metadata.schema.column(ci))
    groups = metadata.num_row_groups
    n, enc = encode(values, ct)
    out = np.zeros((n, groups), dtype=np.bool_)
    if enc is None:  # a type this reader does not compare: no proof of absence
        out[:] = True
        return out
    bitsets = _bitsets(metadata, ci, size, source)
    sizes = [0 if b is None else b.nbytes // 4 for b in bitsets]
    starts = np.zeros(groups + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    words = np.empty(int(starts[-1]), dtype=np.uint32)
    for g, b in enumerate(bitsets):
        if b is not None:
            words[starts[g] : starts[g + 1]] = b.view("<u4")
    from ..hashing import hash_batch_xxh64

    hashes = hash_batch_xxh64(enc.batch, 0) if enc.rows.shape[0] else np.zeros(0, np.uint64)
    sub = np.empty((enc.rows.shape[0], groups), dtype=np.bool_)
    _K.row_groups_query(words, starts, hashes, sub)
    sub[enc.loose] = True
    for g in range(groups):
        chunk = metadata.row_group(g).column(ci)
        ok = in_bounds(enc, ct, chunk.statistics if chunk.is_stats_set else None)
        if ok is not None:
            sub[:, g] &= ok
    out[enc.rows] = sub
    return out
