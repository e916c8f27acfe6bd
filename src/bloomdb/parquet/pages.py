"""Read fixed-width Parquet columns at chosen rows, page by page, without decoding the rest.

>>> from bloomdb.parquet import ParquetColumns
>>> pc = ParquetColumns("events.parquet")
>>> values, valid = pc.read(row_group=0, column="amount", positions=np.array([3, 70_000]))

A column chunk's pages are walked from their Thrift headers (no page body is read for that);
only the dictionary page and the data pages that hold a wanted row are decompressed, and in
those only the wanted values are decoded -- a bit-packed run of dictionary codes is indexed, not
unpacked. That is what a filtered scan needs: the join reads its key column whole and every
other column only at the rows that survived the filter, where ``pyarrow`` would decode every
value of every page.

What it reads: flat columns (no repetition; required or optional) of physical type INT32, INT64,
FLOAT or DOUBLE whose Arrow type is an integer, float32/float64, date32, time or timestamp (any
unit and zone pyarrow reads unconverted) -- :meth:`ParquetColumns.read` gives numpy values --
and BYTE_ARRAY (string / binary, and extension types over them such as ``arrow.json``),
FIXED_LEN_BYTE_ARRAY (fixed-size binary whatever its annotation -- UUID, legacy INTERVAL -- and FLOAT16),
decimals stored as INT32, INT64 or FIXED_LEN_BYTE_ARRAY (decimal128 / decimal256, as pyarrow
reads them) and INT96 timestamps (timestamp[ns], pyarrow's default, with its wrapping
arithmetic) -- :meth:`ParquetColumns.read_arrow` gives a pyarrow Array for any of them. Encodings PLAIN,
dictionary (RLE_DICTIONARY / PLAIN_DICTIONARY), BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED,
DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY; data pages v1 and v2; uncompressed or Snappy
(decoded inside the kernel), or GZIP / ZSTD / BROTLI / LZ4_RAW (pages decompressed by
``pyarrow.decompress`` first; LZ4 as raw blocks). For anything else (nested columns, BYTE_ARRAY
decimals, decimal32/64, INT96 read in another unit, dictionary-typed Arrow columns, BIT_PACKED
levels) the read returns None and the caller uses ``pyarrow`` -- :meth:`supports` says which
columns in advance.

The file is memory-mapped copy-on-write (nothing is ever written back), shared by all threads;
kernels release the GIL. Damaged bytes raise :class:`~bloomdb.errors.CorruptionError` naming the
file, never a crash: every offset and length read from the file is checked against the column
chunk's byte range from the footer, and pages that carry a CRC are checked against it before they
are decoded (pages without one can decode to wrong values if damaged). Valid files are never
called corrupt: zero-row row groups, empty pages and empty values sections (stored with no
compressed block at all by some writers) read as pyarrow reads them, and so do files of legacy
writers whose columns carry only the old ConvertedType (UTF8, DATE, TIME_*, TIMESTAMP_*, INT_*,
UINT_*, DECIMAL, JSON, ENUM, BSON, INTERVAL; no LogicalType, no Arrow schema).
"""

from __future__ import annotations

import mmap
import os
import threading
import zlib

import numpy as np
import pyarrow as pa

from ..errors import CorruptionError, InvalidArgument
from . import _header_kernels as H
from . import _bytes_kernels as B
from . import _page_kernels as K
from .values import column_type

__all__ = ["ParquetColumns"]

_WIDTH = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8}
_KERNEL_CODECS = {"UNCOMPRESSED": K.CODEC_UNCOMPRESSED, "SNAPPY": K.CODEC_SNAPPY}
_ARROW_CODECS = {"GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli", "LZ4_RAW": "lz4_raw", "LZ4": "lz4_raw"}
# pyarrow names both LZ4_RAW and the old Hadoop-framed LZ4 "LZ4": pages that do not decode as raw
# LZ4 blocks are left to pyarrow, which knows the framing (see _decompressed)


def _storage_dtype(col, arrow_type: pa.DataType) -> tuple[np.dtype, np.dtype] | None:
    """``(dtype of the stored bytes, dtype of the result)`` of a fixed-width column, or None when
    the pair is not read here. Dates, times and timestamps are read as their stored integers when
    pyarrow reads them in the stored unit (any time zone: the instants are the same integers)."""
    physical = col.physical_type
    if pa.types.is_integer(arrow_type):
        out = np.dtype(arrow_type.to_pandas_dtype())
        if physical == "INT32" and out.itemsize <= 4:
            return np.dtype("<u4" if out.kind == "u" else "<i4"), out
        if physical == "INT64" and out.itemsize == 8:
            return np.dtype("<u8" if out.kind == "u" else "<i8"), out
        return None
    if physical == "FLOAT" and pa.types.is_float32(arrow_type):
        return np.dtype("<f4"), np.dtype(np.float32)
    if physical == "DOUBLE" and pa.types.is_float64(arrow_type):
        return np.dtype("<f8"), np.dtype(np.float64)
    if pa.types.is_temporal(arrow_type) and physical in ("INT32", "INT64"):
        stored = column_type(col).arrow
        if stored is None or getattr(stored, "unit", None) != getattr(arrow_type, "unit", None) \
                or type(stored) is not type(arrow_type) or arrow_type.bit_width != (32 if physical == "INT32" else 64):
            return None  # e.g. DATE read as date64, a unit pyarrow converts, or INT96
        dt = np.dtype("<i4" if physical == "INT32" else "<i8")
        return dt, dt
    return None


def _byte_type(col, arrow_type: pa.DataType) -> int | None:
    """The FIXED_LEN_BYTE_ARRAY width (0 for BYTE_ARRAY) of a column read by the byte-string
    kernel into ``arrow_type`` (or into the storage of an extension type pyarrow gives, e.g.
    ``arrow.json`` or ``arrow.uuid``), or None (decimals, float16, dictionaries: left to pyarrow)."""
    physical = col.physical_type
    storage = arrow_type.storage_type if isinstance(arrow_type, pa.BaseExtensionType) else arrow_type
    if physical == "BYTE_ARRAY" and (
            pa.types.is_string(storage) or pa.types.is_large_string(storage) or pa.types.is_binary(storage)
            or pa.types.is_large_binary(storage) or pa.types.is_string_view(storage)
            or pa.types.is_binary_view(storage)):
        return 0
    if physical == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_fixed_size_binary(storage) \
            and storage.byte_width == col.length:  # the bytes themselves, whatever the annotation (e.g. INTERVAL)
        return int(col.length)
    return None


_JULIAN_UNIX_EPOCH = 2_440_588  # the Julian day of 1970-01-01 (INT96 timestamps count from it)
_NS_PER_DAY = 86_400 * 10**9


def _converted(col, arrow_type: pa.DataType) -> tuple[str, int] | None:
    """``(conversion, FIXED_LEN_BYTE_ARRAY width or -1)`` of a column whose stored values become
    other Arrow values: ``"decimal"`` (INT32 / INT64 unscaled integers, or big-endian two's
    complement bytes, into decimal128 / decimal256 of the same precision and scale),
    ``"float16"`` (FLBA(2) little-endian halves) and ``"int96"`` (Impala / Spark timestamps,
    nanoseconds of the day then the Julian day, into timestamp[ns] as pyarrow reads them by
    default). None for everything else (decimal32/64, byte-array decimals: left to pyarrow)."""
    physical = col.physical_type
    if pa.types.is_decimal128(arrow_type) or pa.types.is_decimal256(arrow_type):
        if (col.precision, col.scale) != (arrow_type.precision, arrow_type.scale):
            return None
        if physical in ("INT32", "INT64"):
            return "decimal", -1
        if physical == "FIXED_LEN_BYTE_ARRAY" and 0 < col.length <= arrow_type.byte_width:
            return "decimal", int(col.length)
        return None
    if pa.types.is_float16(arrow_type) and physical == "FIXED_LEN_BYTE_ARRAY" and col.length == 2:
        return "float16", 2
    if physical == "INT96" and arrow_type == pa.timestamp("ns"):
        return "int96", 12
    return None


def _from_fixed(t: pa.DataType, convert: str, rows: np.ndarray, mask, nulls: int) -> pa.Array:
    """The Arrow array of type ``t`` of FIXED_LEN_BYTE_ARRAY values ``rows`` (uint8, one row per
    value, zeros at nulls) as ``convert`` (see :func:`_converted`) says. One vectorised pass."""
    m = rows.shape[0]
    if convert == "float16":
        body = np.ascontiguousarray(rows).reshape(-1)
    elif convert == "int96":
        nanos = np.ascontiguousarray(rows[:, :8]).view("<u8").reshape(-1)
        days = np.ascontiguousarray(rows[:, 8:12]).view("<u4").reshape(-1).astype(np.uint64)
        # pyarrow's arithmetic: unsigned, wrapping modulo 2^64
        body = (days - np.uint64(_JULIAN_UNIX_EPOCH)) * np.uint64(_NS_PER_DAY) + nanos
    else:  # decimal: big-endian two's complement, sign-extended into the little-endian decimal
        w = rows.shape[1]
        out = np.where((rows[:, :1] >= 0x80) if w else np.zeros((m, 1), np.bool_), np.uint8(0xFF), np.uint8(0))
        body = np.repeat(out, t.byte_width, axis=1)
        body[:, :w] = rows[:, ::-1]
    return pa.Array.from_buffers(t, m, [mask, pa.py_buffer(body)], null_count=nulls)


def _decimal_from_ints(t: pa.DataType, values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """A decimal array of type ``t`` of the unscaled integers ``values`` (INT32 / INT64 decimals)."""
    v = values.astype(np.int64)
    words = np.repeat((v >> 63)[:, None], t.byte_width // 8, axis=1)
    words[:, 0] = v
    nulls = 0 if valid is None else int(valid.shape[0] - np.count_nonzero(valid))
    mask = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(t, v.shape[0], [mask, pa.py_buffer(words)], null_count=nulls)


class _Column:
    """What the reader needs of one column: its index, widths, level depth, dtypes and Arrow type
    (``fixed`` >= 0: a byte-string column, FIXED_LEN_BYTE_ARRAY width or 0; -1: fixed-width
    numbers); ``convert``: how stored values become Arrow values (:func:`_converted`) or None."""

    __slots__ = ("index", "width", "max_def", "stored", "dtype", "arrow", "fixed", "convert")

    def __init__(self, index, width, max_def, stored, dtype, arrow, fixed=-1, convert=None):
        self.index, self.width, self.max_def, self.stored, self.dtype = index, width, max_def, stored, dtype
        self.arrow, self.fixed, self.convert = arrow, fixed, convert


def _byte_array(col: _Column, offsets: np.ndarray, data: np.ndarray, valid: np.ndarray) -> pa.Array:
    """The Arrow array of ``col``'s type from the kernel's large-binary layout (offsets cast to
    int32 for the small types when the data fit in 2 GiB; else the large form of the type)."""
    m = offsets.shape[0] - 1
    nulls = m - int(np.count_nonzero(valid))
    mask = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    t = col.arrow
    storage = t.storage_type if isinstance(t, pa.BaseExtensionType) else t
    body = pa.py_buffer(data[:int(offsets[-1])])
    if col.fixed > 0:
        if nulls or col.convert:  # fixed-size binary keeps ``fixed`` (zero) bytes at a null; the kernel left none
            full = np.zeros((m, col.fixed), np.uint8)
            full[valid] = data[:int(offsets[-1])].reshape(-1, col.fixed)
            if col.convert:
                return _from_fixed(t, col.convert, full, mask, nulls)
            body = pa.py_buffer(full.reshape(-1))
        arr = pa.Array.from_buffers(storage, m, [mask, body], null_count=nulls)
        return pa.ExtensionArray.from_storage(t, arr) if storage is not t else arr
    text = pa.types.is_string(storage) or pa.types.is_large_string(storage) or pa.types.is_string_view(storage)
    small = offsets[-1] < (1 << 31) and not (pa.types.is_large_string(storage) or pa.types.is_large_binary(storage))
    base = (pa.string() if small else pa.large_string()) if text else (pa.binary() if small else pa.large_binary())
    offs = pa.py_buffer(offsets.astype(np.int32) if small else offsets)
    arr = pa.Array.from_buffers(base, m, [mask, offs, body], null_count=nulls)
    if pa.types.is_string_view(storage) or pa.types.is_binary_view(storage):
        arr = arr.cast(storage)
    return pa.ExtensionArray.from_storage(t, arr) if storage is not t else arr  # e.g. JSON: arrow.json


class ParquetColumns:
    """Random-access reader of a Parquet file's flat columns (see the module doc).

    ``metadata``: a ``pyarrow`` FileMetaData of the file when the caller has it already.
    ``verify`` (default): pages that carry a CRC are checked against it before they are decoded,
    once per page per open file (a damaged page raises CorruptionError instead of decoding to
    wrong values); pages without one cannot be checked.
    Thread-safe: any number of threads may call :meth:`read` at once.
    """

    def __init__(self, path: str | os.PathLike, metadata=None, verify: bool = True):
        import pyarrow.parquet as pq

        self.path = os.fspath(path)
        try:
            pf = pq.ParquetFile(self.path, metadata=metadata)
            metadata = pf.metadata
            # pyarrow's own reading's types: extension types (UUID) and the stored Arrow schema
            # (large strings, time zones), which ``metadata.schema.to_arrow_schema()`` drops in part
            self._arrow = pf.schema_arrow
            with open(self.path, "rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        except (pa.ArrowInvalid, OSError, ValueError) as exc:
            raise InvalidArgument(f"cannot read {self.path} as Parquet: {exc}") from exc
        self.metadata = metadata
        # ACCESS_COPY: a writable view for numba (one array type for file and scratch buffers);
        # pages are private copy-on-write, and the kernels never write to this array anyway
        self._buf = np.frombuffer(self._map, np.uint8)
        self._columns: dict[str, _Column | None] = {}
        self._spare: list[tuple[np.ndarray, np.ndarray]] = []  # scratch buffers not in use
        self._arange: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()
        self.verify = verify
        self._crc_ok: set[int] = set()  # body offsets of pages whose CRC matched

    def _take_work(self, ints: int, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        """A pair of scratch buffers of at least the sizes asked, from the spares (kept between
        calls, and between the short-lived threads of successive joins: fresh buffers would cost
        a page fault per 4 KiB every time). Give it back with :meth:`_give_work`."""
        with self._lock:
            iw, bw = self._spare.pop() if self._spare else (None, None)
        if iw is None or iw.shape[0] < ints:
            iw = np.empty(max(ints, 4 * 65536), np.int64)
        if bw is None or bw.shape[0] < nbytes:
            bw = np.empty(max(nbytes, 1 << 20), np.uint8)
        return iw, bw

    def _give_work(self, work: tuple[np.ndarray, np.ndarray]) -> None:
        with self._lock:
            self._spare.append(work)

    def _all_rows(self, nrows: int) -> np.ndarray:
        """``arange(nrows)``, made once per row-group size (whole-chunk reads). Shared: only ever
        passed to the kernels, which do not write it (left writable so that they need no second
        compiled variant for read-only input)."""
        rows = self._arange.get(nrows)
        if rows is None:
            rows = self._arange[nrows] = np.arange(nrows, dtype=np.int64)
        return rows

    def _column(self, name: str) -> _Column | None:
        if name in self._columns:
            return self._columns[name]
        schema = self.metadata.schema
        col = None
        for i in range(len(schema)):
            c = schema.column(i)
            if c.path != name:
                continue
            if c.max_repetition_level == 0 and c.max_definition_level <= 1 and name in self._arrow.names:
                t = self._arrow.field(name).type
                conv = _converted(c, t)
                dt = _storage_dtype(c, t) if c.physical_type in _WIDTH and conv is None else None
                fixed = _byte_type(c, t) if dt is None and conv is None else None
                if conv is not None and conv[1] < 0:  # INT32 / INT64 decimals: numbers, then converted
                    stored = np.dtype("<i4" if c.physical_type == "INT32" else "<i8")
                    col = _Column(i, _WIDTH[c.physical_type], c.max_definition_level, stored, np.dtype("<i8"), t,
                                  convert=conv[0])
                elif conv is not None:
                    col = _Column(i, 0, c.max_definition_level, None, None, t, conv[1], conv[0])
                elif dt is not None:
                    col = _Column(i, _WIDTH[c.physical_type], c.max_definition_level, dt[0], dt[1], t)
                elif fixed is not None:
                    col = _Column(i, 0, c.max_definition_level, None, None, t, fixed)
            break
        else:
            if name not in self._arrow.names:  # a nested column's own name: declined (None)
                raise InvalidArgument(f"column {name!r} is not in {self.path}")
        self._columns[name] = col
        return col

    def supports(self, column: str, row_group: int | None = None) -> bool:
        """Whether :meth:`read_arrow` decodes ``column`` itself (of ``row_group``'s codec, when
        given); :meth:`read` then does too unless it is a byte-string, decimal, float16 or INT96
        column (those come as Arrow arrays only)."""
        col = self._column(column)
        if col is None:
            return False
        if row_group is None:
            return True
        codec = self.metadata.row_group(row_group).column(col.index).compression
        return codec in _KERNEL_CODECS or codec in _ARROW_CODECS

    def _chunk_range(self, meta) -> tuple[int, int]:
        start = meta.data_page_offset
        d = meta.dictionary_page_offset
        if meta.has_dictionary_page and d is not None and 0 < d < start:
            start = d
        end = start + meta.total_compressed_size
        if start < 4 or end > self._buf.shape[0] or meta.total_compressed_size < 0:
            raise CorruptionError(f"column chunk [{start}, {end}) lies outside the file", self.path)
        return start, end

    def _pages(self, start: int, end: int, where: str) -> tuple[np.ndarray, int]:
        pages = np.empty((64, H.P_FIELDS), np.int64)
        while True:
            n = H.walk_pages(self._buf, start, end, pages)
            if n != H.ST_FULL:
                break
            pages = np.empty((pages.shape[0] * 8, H.P_FIELDS), np.int64)
        if n < 0:
            raise CorruptionError(f"{where}: damaged page header", self.path)
        return pages, n

    def read(self, row_group: int, column: str, positions: np.ndarray | None = None):
        """``(values, valid)`` of a numeric or temporal ``column`` in ``row_group`` at ascending row
        ``positions`` (all rows when None): values a numpy array of the column's Arrow type (0 at
        nulls; dates, times and timestamps as their int32 / int64 ticks), ``valid`` a bool array
        or None when no wanted row is null. Returns None when the column (byte strings: see
        :meth:`read_arrow`) or this chunk's encoding is not one this reader decodes (use ``pyarrow``).

        Cost: the page headers, the dictionary page and the pages holding wanted rows.
        """
        col = self._column(column)
        if col is None or col.fixed >= 0 or col.convert:
            return None
        return self._numbers(row_group, column, col, positions)

    def _numbers(self, row_group: int, column: str, col: _Column, positions: np.ndarray | None):
        """:meth:`read` of a fixed-width column (its stored numbers, before any conversion)."""
        got = self._prepare(row_group, column, col, positions)
        if got is None or got[0].shape[0] == 0:
            return None if got is None else (np.zeros(0, col.dtype), None)
        positions, buf, pages, n, kcodec, where = got
        out = np.empty(positions.shape[0] * col.width, np.uint8)
        valid = np.empty(positions.shape[0], np.bool_)
        work = self._take_work(4 * positions.shape[0], int(K.work_bytes(pages, n, kcodec)))
        try:
            st = K.read_at(buf, pages, n, kcodec, col.width, col.max_def, positions, out, valid, *work)
        finally:
            self._give_work(work)
        if not self._status(st, where):
            return None
        values = out.view(col.stored)
        if values.dtype != col.dtype:
            values = values.astype(col.dtype) if values.dtype.itemsize != col.dtype.itemsize else values.view(col.dtype)
        return values, (None if valid.all() else valid)

    def read_arrow(self, row_group: int, column: str, positions: np.ndarray | None = None) -> pa.Array | None:
        """``column`` of ``row_group`` at ascending row ``positions`` (all rows when None) as a
        ``pyarrow`` Array equal to pyarrow's own reading -- its type included (string / binary /
        their large and view forms, fixed-size binary and UUID, date32, time, timestamp with its
        unit and zone, the integers and floats of :meth:`read`); a string column whose values pass
        2 GiB comes back as its large form. None when the column or chunk is not read here.

        Cost: as :meth:`read`; byte strings are copied once into the result's buffers (PLAIN and
        DELTA pages are scanned up to their last wanted value).
        """
        col = self._column(column)
        if col is None:
            return None
        if col.fixed < 0:
            got = self._numbers(row_group, column, col, positions)
            if got is None:
                return None
            values, valid = got
            if col.convert:
                return _decimal_from_ints(col.arrow, values, valid)
            return pa.array(values, type=col.arrow, mask=None if valid is None else ~valid)
        got = self._prepare(row_group, column, col, positions)
        if got is None:
            return None
        positions, buf, pages, n, kcodec, where = got
        m = positions.shape[0]
        offsets = np.empty(m + 1, np.int64)
        valid = np.empty(m, np.bool_)
        # a first guess at the output's size (the kernel grows it when short): the chunk's
        # uncompressed bytes pro rata, which PLAIN values never exceed
        meta = self.metadata.row_group(row_group).column(col.index)
        rows = max(self.metadata.row_group(row_group).num_rows, 1)
        guess = min(max(meta.total_uncompressed_size, 0), 1 << 30) * m // rows
        data = np.empty(max(col.fixed * m, guess, 1 << 12), np.uint8)
        work = self._take_work(4 * m, int(K.work_bytes(pages, n, kcodec)))
        try:
            st, data = B.read_bytes_at(buf, pages, n, kcodec, col.fixed, col.max_def, positions, offsets, data,
                                       valid, *work)
        finally:
            self._give_work(work)
        if m and not self._status(st, where):
            return None
        return _byte_array(col, offsets, data, valid)

    def _status(self, st: int, where: str) -> bool:
        """True for ST_OK, False for a chunk this reader leaves to pyarrow; raises on damage."""
        if st == H.ST_UNSUPPORTED:
            return False
        if st != H.ST_OK:
            raise CorruptionError(f"{where}: damaged page data", self.path)
        return True

    def _prepare(self, row_group: int, column: str, col: _Column, positions: np.ndarray | None):
        """Checked ``positions`` and the chunk's pages, decompressed by pyarrow where the kernels
        do not decompress: ``(positions, buf, pages, npages, kernel codec, where)``; None when the
        codec is not read here. No pages when no row is wanted."""
        if not 0 <= row_group < self.metadata.num_row_groups:
            raise InvalidArgument(f"row group {row_group} is not in {self.path}")
        meta = self.metadata.row_group(row_group).column(col.index)
        codec = meta.compression
        if codec not in _KERNEL_CODECS and codec not in _ARROW_CODECS:
            return None
        nrows = self.metadata.row_group(row_group).num_rows
        if positions is None:
            positions = self._all_rows(nrows)
        else:
            positions = np.ascontiguousarray(positions, dtype=np.int64)
            if positions.ndim != 1:
                raise InvalidArgument("positions must be one-dimensional")
            if positions.size and (positions[0] < 0 or positions[-1] >= nrows):
                raise InvalidArgument(f"positions must lie in [0, {nrows}) for row group {row_group}")
        where = f"row group {row_group}, column {column!r}"
        if positions.shape[0] == 0:  # nothing wanted (a zero-row row group's offsets may be 0)
            return positions, self._buf, np.zeros((0, H.P_FIELDS), np.int64), 0, K.CODEC_UNCOMPRESSED, where
        start, end = self._chunk_range(meta)
        pages, n = self._pages(start, end, where)
        if self.verify:
            self._check_crcs(pages, n, positions, where)
        if codec in _ARROW_CODECS:
            got = self._decompressed(pages, n, positions, codec, where)
            if got is None:
                return None
            buf, pages, n = got
            return positions, buf, pages, n, K.CODEC_UNCOMPRESSED, where
        return positions, self._buf, pages, n, _KERNEL_CODECS[codec], where

    @staticmethod
    def _wanted(pages: np.ndarray, p: int, positions: np.ndarray) -> bool:
        """Whether page ``p`` is read for ``positions``: a dictionary page, or a data page holding
        one of them."""
        kind = int(pages[p, H.P_TYPE])
        if kind == 2:
            return True
        if kind not in (0, 3):
            return False
        first, count = int(pages[p, H.P_FIRST_ROW]), int(pages[p, H.P_NROWS])
        lo = np.searchsorted(positions, first)
        return lo < positions.shape[0] and positions[lo] < first + count

    def _check_crcs(self, pages: np.ndarray, n: int, positions: np.ndarray, where: str) -> None:
        """Every page to be read that carries a CRC (writers store one when asked, e.g. pyarrow's
        ``write_page_checksum=True``) matches it, checked once per page per open file. Cost: one
        zlib CRC-32 pass over those pages' stored bytes, the first time."""
        for p in np.flatnonzero(pages[:n, H.P_CRC] >= 0):
            body = int(pages[p, H.P_BODY])
            if body in self._crc_ok or not self._wanted(pages, p, positions):
                continue
            if zlib.crc32(self._buf[body:body + int(pages[p, H.P_CSIZE])]) != int(pages[p, H.P_CRC]):
                raise CorruptionError(f"{where}: page checksum mismatch", self.path)
            self._crc_ok.add(body)

    def _decompressed(self, pages: np.ndarray, n: int, positions: np.ndarray, codec: str, where: str):
        """The dictionary page and the data pages holding a wanted row, decompressed by pyarrow
        into one buffer, with a page table pointing into it (other data pages left out); None
        for "LZ4" pages that are not raw LZ4 blocks (Hadoop framing: pyarrow's to read)."""
        name = _ARROW_CODECS[codec]
        parts: list[np.ndarray] = []
        rows = []
        pos = 0
        src = self._buf
        for p in range(n):
            kind = int(pages[p, H.P_TYPE])
            if not self._wanted(pages, p, positions):
                continue
            body, csize, usize = (int(pages[p, c]) for c in (H.P_BODY, H.P_CSIZE, H.P_USIZE))
            head = 0
            if kind == 3:
                head = int(pages[p, H.P_DEF_LEN] + pages[p, H.P_REP_LEN])
            raw = src[body:body + csize]
            if usize == head:  # nothing compressed (writers may store no block for it at all)
                body_bytes = raw[:head]
            elif kind != 3 or pages[p, H.P_COMPRESSED]:
                try:
                    values = pa.decompress(raw[head:], decompressed_size=usize - head, codec=name, asbytes=False)
                except (pa.ArrowInvalid, pa.ArrowIOError, OSError, ValueError) as exc:
                    if codec == "LZ4":
                        return None
                    raise CorruptionError(f"{where}: page does not decompress: {exc}", self.path) from None
                body_bytes = np.concatenate([raw[:head], np.frombuffer(values, np.uint8)]) if head else \
                    np.frombuffer(values, np.uint8)
            else:
                body_bytes = raw
            row = pages[p].copy()
            row[H.P_BODY] = pos
            row[H.P_CSIZE] = row[H.P_USIZE] = body_bytes.shape[0]
            row[H.P_COMPRESSED] = 0
            parts.append(body_bytes)
            rows.append(row)
            pos += body_bytes.shape[0]
        buf = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        table = np.array(rows, np.int64).reshape(len(rows), H.P_FIELDS)
        return buf, table, len(rows)

    def close(self) -> None:
        """Release the memory map (arrays returned by :meth:`read` are copies and stay valid)."""
        self._buf = None
        try:
            self._map.close()
        except BufferError:  # a caller still holds a view into the map: it closes when collected
            pass

    def __enter__(self) -> "ParquetColumns":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
