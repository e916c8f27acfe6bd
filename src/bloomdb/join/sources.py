"""Probe-side inputs of the join, as a sequence of chunks that decode columns on demand.

* :class:`ColumnarSource` — a :mod:`bloomdb.columnar` table: one chunk per row group; any column
  decodes at selected positions only (bit-packed random access), or whole.
* :class:`ParquetSource` — a Parquet file: one chunk per row group; the key column is read first,
  other columns only at the rows that survived, by :class:`bloomdb.parquet.ParquetColumns` (only
  the pages holding those rows are decompressed, only those values decoded; columns it does not
  read go through pyarrow, whole). Row groups whose min/max statistics or own Bloom filters
  exclude every build key are skipped before any read.
* :class:`ArrowSource` — an in-memory Arrow table cut into ``chunk_rows`` slices.

Every chunk counts the rows it decoded per column in ``decoded`` (what ``explain`` reports).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import columnar, recycled
from ..errors import CorruptionError, InvalidArgument
from ._scan_kernels import every_row
from .compare import KeyDomain
from .keys import JoinKeys, from_arrow, from_values
from .open_files import kept_open


# a column chunk is decoded whole (the sequential fast path), then indexed, once more than
# 1/DENSE of its rows are wanted: cheaper than decoding that many values one by one
DENSE = 4


def numeric_from_arrow(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(values, valid)`` of a numeric or bool Arrow column (nulls hold 0; valid None = no nulls)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    if pa.types.is_boolean(arr.type):
        arr = arr.cast(pa.uint8())
    if arr.null_count:
        arr = pc.fill_null(arr, 0)
    return arr.to_numpy(zero_copy_only=False), valid


def gather(arr: pa.Array, positions: np.ndarray) -> pa.Array:
    """``arr`` at ``positions`` (ascending); ``arr`` itself when they are every row in order (a
    left join's usual chunk), saving a copy."""
    if every_row(positions, len(arr)):
        return arr
    return arr.take(pa.array(positions))


class ProbeChunk:
    """One chunk of the probe side. ``whole=True`` decodes a column entirely, then gathers."""

    num_rows: int
    #: whether decoding at repeated positions costs no more than a gather of decoded rows (then a
    #: probe row matching several build rows is decoded once per match; else once, then repeated)
    gathers_repeats = True
    #: set by the scan when whole decoded columns become result columns (joins that keep every
    #: probe row): a source that can decodes them into :mod:`bloomdb.recycled` memory
    recycle = False

    def __init__(self) -> None:
        self.decoded: dict[str, int] = {}
        self._every: tuple[np.ndarray, np.ndarray | None] | None = None

    def _count(self, name: str, rows: int) -> None:
        self.decoded[name] = self.decoded.get(name, 0) + rows

    def _index(self, positions: np.ndarray) -> np.ndarray | None:
        """``positions`` as the index into a whole decoded column, or None when they are every
        row in order (the values are then used as they are, no gather). Checked once per
        positions array (the columns of one chunk share it)."""
        if self._every is None or self._every[0] is not positions:
            self._every = (positions, None if every_row(positions, self.num_rows) else positions)
        return self._every[1]

    def keys(self, key: str, domain: KeyDomain) -> JoinKeys:
        """The chunk's key column as keys of ``domain``."""
        raise NotImplementedError

    def numeric(self, name: str, positions: np.ndarray, whole: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """``(values, valid, index)``: values of the rows at ``positions`` — when ``index`` is None
        they are exactly those rows, in order; otherwise the whole chunk, to be read at ``index``.
        ``valid`` (None = no nulls) is indexed like ``values``."""
        raise NotImplementedError

    def arrow(self, name: str, positions: np.ndarray, whole: bool) -> pa.Array:
        raise NotImplementedError


class ProbeSource:
    """A probe input: column names and types, chunk count, chunk access and min/max pruning."""

    schema: pa.Schema
    num_chunks: int
    label: str

    def chunk(self, i: int) -> ProbeChunk:
        raise NotImplementedError

    def key_stats(self, i: int, key: str) -> tuple[Any, Any]:
        """(min, max) of the key column in chunk ``i``, or (None, None) when unknown."""
        return None, None

    def has_bloom_filters(self, key: str) -> bool:
        """Whether the source stores filters of column ``key`` that :meth:`bloom_may_contain` reads."""
        return False

    def bloom_may_contain(self, key: str, values: Any) -> np.ndarray | None:
        """Per chunk: False when the source's own filters prove none of ``values`` is in it
        (None: the source has no filters)."""
        return None

    def chunk_rows(self, i: int) -> int:
        raise NotImplementedError

    def tasks(self):
        """The chunk numbers to scan, in order (a stream's source reads ahead as they are taken)."""
        return range(self.num_chunks)

    def file_of(self, i: int) -> str:
        """The file (or input) chunk ``i`` belongs to, for ``explain``."""
        return self.label


# ---- bloomdb columnar ---------------------------------------------------------------------


class _ColumnarChunk(ProbeChunk):
    def __init__(self, table: columnar.ColumnarTable, group: int):
        super().__init__()
        self.table, self.group = table, group
        self.num_rows = table.row_groups[group].num_rows
        self._chunks: dict[str, columnar.Chunk] = {}

    def _chunk(self, name: str) -> columnar.Chunk:
        ch = self._chunks.get(name)
        if ch is None:
            ch = self._chunks[name] = self.table.chunk(self.group, name)
            if self.recycle:
                ch.alloc = recycled.empty
        return ch

    def keys(self, key: str, domain: KeyDomain) -> JoinKeys:
        ch = self._chunk(key)
        self._count(key, self.num_rows)
        if domain.kind == "int":
            return from_values(ch.numpy(), ch.validity, ch.ctype.arrow, domain)
        return from_arrow(ch.arrow(), domain)

    def _rows(self, ch: columnar.Chunk, positions: np.ndarray, whole: bool) -> int:
        return self.num_rows if (whole or ch.compressed) else positions.shape[0]

    def numeric(self, name, positions, whole):
        whole = whole or positions.shape[0] * DENSE > self.num_rows  # sequential unpack beats lookups
        ch = self._chunk(name)
        self._count(name, self._rows(ch, positions, whole))
        valid = ch.validity
        if whole:
            return ch.numpy(), valid, self._index(positions)
        return ch.numpy(positions), (None if valid is None else valid[positions]), None

    def arrow(self, name, positions, whole):
        ch = self._chunk(name)
        self._count(name, self._rows(ch, positions, whole))
        if whole:
            return gather(ch.arrow(), positions)
        return ch.arrow(positions)


class ColumnarSource(ProbeSource):
    def __init__(self, table: columnar.ColumnarTable, verify: bool = True):
        if table.verify != verify:  # a private handle: never change the caller's table object
            table = columnar.open(table.path, verify=verify)
        self.table = table
        self.schema = table.schema
        self.num_chunks = len(table.row_groups)
        self.label = f"columnar {table.path}"

    def chunk(self, i):
        return _ColumnarChunk(self.table, i)

    def chunk_rows(self, i):
        return self.table.row_groups[i].num_rows

    def key_stats(self, i, key):
        c = self.table.row_groups[i].chunks[self.table.column_index(key)]
        return c.min, c.max


# ---- Parquet ------------------------------------------------------------------------------


class _ParquetChunk(ProbeChunk):
    """One row group. Fixed-width flat columns are read by :class:`bloomdb.parquet.ParquetColumns`
    (pages walked, only the wanted rows decoded); other columns by pyarrow, whole."""

    gathers_repeats = False  # page decoding: each wanted row once, then repeated

    def __init__(self, src: "ParquetSource", group: int):
        super().__init__()
        self.src, self.group = src, group
        self.num_rows = src.metadata.row_group(group).num_rows
        self._cols: dict[str, pa.Array] = {}

    def _col(self, name: str) -> pa.Array:
        a = self._cols.get(name)
        if a is None:
            try:
                t = self.src.file().read_row_group(self.group, columns=[name], use_threads=False)
            except (pa.ArrowException, OSError) as exc:  # pyarrow's word for damaged pages
                raise CorruptionError(f"row group {self.group}, column {name!r}: {exc}", self.src.path) from None
            col = t.column(0)
            a = self._cols[name] = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            self._count(name, self.num_rows)
        return a

    def _pages(self, name: str, positions: np.ndarray | None, arrow: bool = False):
        """``(values, valid)`` (``arrow``: a pyarrow Array, strings too) at ascending
        ``positions`` (None: all rows) from the page reader, or None when it does not read this
        column chunk (or pyarrow has decoded it already)."""
        cols = self.src.columns
        if name in self._cols or not cols.supports(name, self.group):
            return None
        got = (cols.read_arrow if arrow else cols.read)(self.group, name, positions)
        if got is not None:
            self._count(name, self.num_rows if positions is None else positions.shape[0])
        return got

    def keys(self, key, domain):
        got = self._pages(key, None, arrow=domain.kind != "int")
        if got is not None and domain.kind != "int":
            return from_arrow(got, domain)
        if got is not None:
            return from_values(got[0], got[1], self.src.schema.field(key).type, domain)
        return from_arrow(self._col(key), domain)

    def numeric(self, name, positions, whole):
        whole = whole or positions.shape[0] * DENSE > self.num_rows
        got = self._pages(name, None if whole else positions)
        if got is not None:
            return got[0], got[1], (self._index(positions) if whole else None)
        return (*numeric_from_arrow(self._col(name)), self._index(positions))

    def arrow(self, name, positions, whole):
        """Numbers, dates, timestamps, strings and binary from the page reader (only the wanted
        rows decoded when they are few), other columns from pyarrow, whole."""
        dense = whole or positions.shape[0] * DENSE > self.num_rows
        got = self._pages(name, None if dense else positions, arrow=True) if dense or _ascending(positions) else None
        if got is not None:
            return gather(got, positions) if dense else got
        return gather(self._col(name), positions)


def _ascending(positions: np.ndarray) -> bool:
    return positions.shape[0] < 2 or bool((positions[1:] >= positions[:-1]).all())


class ParquetSource(ProbeSource):
    def __init__(self, path: str):
        import pyarrow.parquet as pq

        from ..parquet import ParquetColumns

        self.path = path
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidArgument(f"cannot read {path} as Parquet: {exc}") from exc
        self.metadata = pf.metadata
        self.schema = pf.schema_arrow
        self.num_chunks = self.metadata.num_row_groups
        self.label = f"parquet {path}"
        self._local = threading.local()
        self.columns = ParquetColumns(path, self.metadata)

    def file(self):
        """A ParquetFile for the calling thread (readers are not shared across threads)."""
        import pyarrow.parquet as pq

        f = getattr(self._local, "f", None)
        if f is None:
            f = self._local.f = pq.ParquetFile(self.path, metadata=self.metadata, page_checksum_verification=True)
        return f

    def chunk(self, i):
        return _ParquetChunk(self, i)

    def chunk_rows(self, i):
        return self.metadata.row_group(i).num_rows

    def has_bloom_filters(self, key):
        """Whether any row group's chunk of ``key`` has a Bloom filter (footer only, no reads)."""
        md = self.metadata
        names = [md.schema.column(j).path for j in range(md.num_columns)]
        if key not in names:
            return False
        j = names.index(key)
        return any((md.row_group(g).column(j).bloom_filter_offset or 0) > 0 for g in range(md.num_row_groups))

    def bloom_may_contain(self, key, values):
        """Row groups whose Parquet split-block Bloom filter may hold one of ``values``.

        Fails open: a file without filters, or with filters this reader cannot use, prunes nothing.
        """
        from .. import parquet as bpq
        from ..errors import BloomDBError

        if len(values) == 0:
            return None
        try:
            hits = bpq.row_groups_that_may_contain(self.path, key, values)
        except BloomDBError:
            return None
        return hits.any(axis=0)

    def key_stats(self, i, key):
        rg = self.metadata.row_group(i)
        for j in range(rg.num_columns):
            c = rg.column(j)
            if c.path_in_schema == key:
                st = c.statistics
                if st is not None and st.has_min_max:
                    try:
                        return st.min, st.max
                    except (OverflowError, ValueError, pa.ArrowException):  # e.g. a date beyond Python's
                        return None, None
        return None, None


# ---- Arrow ----------------------------------------------------------------------------------


class _ArrowChunk(ProbeChunk):
    def __init__(self, table: pa.Table):
        super().__init__()
        self.t = table
        self.num_rows = table.num_rows

    def _col(self, name):
        c = self.t.column(name)
        return c.combine_chunks() if c.num_chunks != 1 else c.chunk(0)

    def keys(self, key, domain):
        self._count(key, self.num_rows)
        return from_arrow(self._col(key), domain)

    def numeric(self, name, positions, whole):
        self._count(name, self.num_rows if whole else positions.shape[0])
        if whole:
            return (*numeric_from_arrow(self._col(name)), self._index(positions))
        return (*numeric_from_arrow(gather(self._col(name), positions)), None)

    def arrow(self, name, positions, whole):
        self._count(name, self.num_rows if whole else positions.shape[0])
        return gather(self._col(name), positions)


class ArrowSource(ProbeSource):
    def __init__(self, table: pa.Table, chunk_rows: int = columnar.DEFAULT_CHUNK_ROWS):
        self.table = table
        self.schema = table.schema
        self.rows = chunk_rows
        self.num_chunks = -(-table.num_rows // chunk_rows)
        self.label = "arrow table"

    def chunk(self, i):
        return _ArrowChunk(self.table.slice(i * self.rows, self.rows))

    def chunk_rows(self, i):
        return min(self.rows, self.table.num_rows - i * self.rows)


def open_source(obj: Any, verify: bool = True, chunk_rows: int = columnar.DEFAULT_CHUNK_ROWS) -> ProbeSource:
    """A probe source from a columnar table (path or object), a Parquet path, or Arrow-like data.
    Paths are kept open between calls (:mod:`bloomdb.join.open_files`)."""
    if isinstance(obj, ProbeSource):
        return obj
    if isinstance(obj, columnar.ColumnarTable):
        return ColumnarSource(obj, verify)
    if isinstance(obj, (str, os.PathLike)):
        p = os.fspath(obj)
        if columnar.is_table(p):
            from ..columnar.table import MANIFEST

            table = kept_open(f"columnar verify={verify}", p, os.path.join(p, MANIFEST),
                              lambda: columnar.open(p, verify=verify))
            return ColumnarSource(table, verify)
        if os.path.isfile(p):
            return kept_open("parquet", p, p, lambda: ParquetSource(p), tail=True)
        raise InvalidArgument(f"{p} is neither a bloomdb columnar table folder nor a Parquet file")
    return ArrowSource(columnar.to_arrow_table(obj), chunk_rows)


def read_all(obj: Any, columns: list[str]) -> pa.Table:
    """The build side as an Arrow table with just ``columns`` (``obj`` as :func:`.dataset.open_build`
    leaves it)."""
    import pyarrow.dataset as ds

    if isinstance(obj, columnar.ColumnarTable):
        return obj.read(columns)
    if isinstance(obj, ds.Dataset):
        try:
            return columnar.without_views(obj.to_table(columns=columns))
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidArgument(f"cannot read {columns} from the build dataset: {exc}") from exc
    if isinstance(obj, (str, os.PathLike)):
        p = os.fspath(obj)
        if columnar.is_table(p):
            return columnar.read(p, columns)
        if os.path.isfile(p):
            import pyarrow.parquet as pq

            try:
                return pq.read_table(p, columns=columns)
            except (pa.ArrowInvalid, OSError, KeyError) as exc:
                raise InvalidArgument(f"cannot read {columns} from {p}: {exc}") from exc
        raise InvalidArgument(f"{p} is neither a bloomdb columnar table folder nor a Parquet file")
    t = columnar.to_arrow_table(obj)
    missing = [c for c in columns if c not in t.column_names]
    if missing:
        raise InvalidArgument(f"build side has no column(s) {missing}")
    return t.select(columns)


def schema_of(obj: Any) -> pa.Schema:
    """Schema of a build-side input without reading its data (where the format allows)."""
    import pyarrow.dataset as ds

    if isinstance(obj, (columnar.ColumnarTable, ds.Dataset)):
        return columnar.without_views_schema(obj.schema)
    if isinstance(obj, (str, os.PathLike)):
        p = os.fspath(obj)
        if columnar.is_table(p):
            return columnar.open(p).schema
        import pyarrow.parquet as pq

        try:
            return pq.read_schema(p)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidArgument(f"cannot read {p} as Parquet or a columnar table: {exc}") from exc
    return columnar.to_arrow_table(obj).schema
