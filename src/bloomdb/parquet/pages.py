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
FLOAT or DOUBLE whose Arrow type is an integer or float32/float64; values PLAIN, dictionary
(RLE_DICTIONARY / PLAIN_DICTIONARY) or BYTE_STREAM_SPLIT encoded; data pages v1 and v2;
uncompressed or Snappy (decoded inside the kernel), or GZIP / ZSTD / BROTLI / LZ4_RAW (pages
decompressed by ``pyarrow.decompress`` first; LZ4 as raw blocks). For anything else :meth:`ParquetColumns.read`
returns None and the caller uses ``pyarrow`` -- :meth:`supports` says which in advance.

The file is memory-mapped copy-on-write (nothing is ever written back), shared by all threads;
kernels release the GIL. Damaged bytes raise :class:`~bloomdb.errors.CorruptionError` naming the
file, never a crash: every offset and length read from the file is checked against the column
chunk's byte range from the footer, and pages that carry a CRC are checked against it before they
are decoded (pages without one can decode to wrong values if damaged). Valid files are never
called corrupt: zero-row row groups, empty pages and empty values sections (stored with no
compressed block at all by some writers) read as pyarrow reads them.
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
from . import _page_kernels as K

__all__ = ["ParquetColumns"]

_WIDTH = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8}
_KERNEL_CODECS = {"UNCOMPRESSED": K.CODEC_UNCOMPRESSED, "SNAPPY": K.CODEC_SNAPPY}
_ARROW_CODECS = {"GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli", "LZ4_RAW": "lz4_raw", "LZ4": "lz4_raw"}
# pyarrow names both LZ4_RAW and the old Hadoop-framed LZ4 "LZ4": pages that do not decode as raw
# LZ4 blocks are left to pyarrow, which knows the framing (see _decompressed)


def _storage_dtype(physical: str, arrow_type: pa.DataType) -> tuple[np.dtype, np.dtype] | None:
    """``(dtype of the stored bytes, dtype of the result)`` or None when the pair is not read here."""
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
    return None


class _Column:
    """What the reader needs of one column: its index, widths, level depth and dtypes."""

    __slots__ = ("index", "width", "max_def", "stored", "dtype")

    def __init__(self, index, width, max_def, stored, dtype):
        self.index, self.width, self.max_def, self.stored, self.dtype = index, width, max_def, stored, dtype


class ParquetColumns:
    """Random-access reader of a Parquet file's fixed-width flat columns (see the module doc).

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
            if metadata is None:
                metadata = pq.ParquetFile(self.path).metadata
            with open(self.path, "rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        except (pa.ArrowInvalid, OSError, ValueError) as exc:
            raise InvalidArgument(f"cannot read {self.path} as Parquet: {exc}") from exc
        self.metadata = metadata
        # ACCESS_COPY: a writable view for numba (one array type for file and scratch buffers);
        # pages are private copy-on-write, and the kernels never write to this array anyway
        self._buf = np.frombuffer(self._map, np.uint8)
        self._arrow = metadata.schema.to_arrow_schema()
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
            if c.max_repetition_level == 0 and c.max_definition_level <= 1 and c.physical_type in _WIDTH \
                    and name in self._arrow.names:
                dt = _storage_dtype(c.physical_type, self._arrow.field(name).type)
                if dt is not None:
                    col = _Column(i, _WIDTH[c.physical_type], c.max_definition_level, dt[0], dt[1])
            break
        else:
            if name not in self._arrow.names:  # a nested column's own name: declined (None)
                raise InvalidArgument(f"column {name!r} is not in {self.path}")
        self._columns[name] = col
        return col

    def supports(self, column: str, row_group: int | None = None) -> bool:
        """Whether :meth:`read` decodes ``column`` itself (of ``row_group``'s codec, when given)."""
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
        """``(values, valid)`` of ``column`` in ``row_group`` at ascending row ``positions`` (all
        rows when None): values a numpy array of the column's Arrow type (0 at nulls), ``valid``
        a bool array or None when no wanted row is null. Returns None when the column or this
        chunk's encoding is not one this reader decodes (use ``pyarrow``).

        Cost: the page headers, the dictionary page and the pages holding wanted rows.
        """
        col = self._column(column)
        if col is None:
            return None
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
        if positions.shape[0] == 0:  # nothing wanted (a zero-row row group's offsets may be 0)
            return np.zeros(0, col.dtype), None
        where = f"row group {row_group}, column {column!r}"
        start, end = self._chunk_range(meta)
        pages, n = self._pages(start, end, where)
        if self.verify:
            self._check_crcs(pages, n, positions, where)
        buf = self._buf
        if codec in _ARROW_CODECS:
            got = self._decompressed(pages, n, positions, codec, where)
            if got is None:
                return None
            buf, pages, n = got
            kcodec = K.CODEC_UNCOMPRESSED
        else:
            kcodec = _KERNEL_CODECS[codec]
        out = np.empty(positions.shape[0] * col.width, np.uint8)
        valid = np.empty(positions.shape[0], np.bool_)
        work = self._take_work(4 * positions.shape[0], int(K.work_bytes(pages, n, kcodec)))
        try:
            st = K.read_at(buf, pages, n, kcodec, col.width, col.max_def, positions, out, valid, *work)
        finally:
            self._give_work(work)
        if st == H.ST_UNSUPPORTED:
            return None
        if st != H.ST_OK:
            raise CorruptionError(f"{where}: damaged page data", self.path)
        values = out.view(col.stored)
        if values.dtype != col.dtype:
            values = values.astype(col.dtype) if values.dtype.itemsize != col.dtype.itemsize else values.view(col.dtype)
        return values, (None if valid.all() else valid)

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
