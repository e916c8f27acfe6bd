"""A columnar table on disk: a folder of row-group files plus a JSON manifest.

Layout::

    <path>/_table.json          the manifest (schema, row groups, chunk offsets, min/max)
    <path>/rg-000000.bdc        row group 0: its column chunks back to back, each at a multiple
    <path>/rg-000001.bdc        of 64 bytes (zero padding between them)

Each row group holds up to ``chunk_rows`` rows (64Ki by default) and one chunk per column. The
manifest is written last (temp file + rename), so a table whose manifest is present is complete.
See docs/formats.md for every field.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..errors import CorruptionError, InvalidArgument
from ..checksum import crc32c
from ..pyvalues import array_from_values
from .encoding import ENCODING_NAMES, HEADER_SIZE, Chunk, encode
from .types import ColumnType

MANIFEST = "_table.json"
FORMAT_NAME = "bloomdb-columnar"
FORMAT_VERSION = 2  # 2: the manifest and every chunk header are checksummed (1 is still read)
_MANIFEST_KEYS = {1: {"format", "version", "num_rows", "chunk_rows", "columns", "row_groups"}}
_MANIFEST_KEYS[2] = _MANIFEST_KEYS[1] | {"crc32c"}
_CHUNK_KEYS = {1: {"offset", "length", "encoding", "null_count", "min", "max"}}
_CHUNK_KEYS[2] = _CHUNK_KEYS[1] | {"header_crc"}
_FILE_NAME = re.compile(r"rg-[0-9]{6,}\.bdc")
DEFAULT_CHUNK_ROWS = 65536
_ALIGN = 64


def _canonical(manifest: dict) -> bytes:
    """The bytes a manifest's ``crc32c`` covers: the manifest without that key, as compact JSON
    with sorted keys (what ``json.dumps(..., sort_keys=True, separators=(",", ":"))`` gives)."""
    rest = {k: v for k, v in manifest.items() if k != "crc32c"}
    return json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()


#: Arrow's view layouts (Polars' and DuckDB's newer Arrow output) and the layouts read in their place
_VIEWS = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}


def without_views(t: pa.Table) -> pa.Table:
    """``t`` with ``string_view`` / ``binary_view`` columns as ``large_string`` / ``large_binary``
    (same values; pyarrow's take and hash kernels do not take views). Cost: a copy of those columns."""
    if not any(f.type in _VIEWS for f in t.schema):
        return t
    return t.cast(without_views_schema(t.schema))


def without_views_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with view types replaced as :func:`without_views` replaces them."""
    return pa.schema([f.with_type(_VIEWS.get(f.type, f.type)) for f in schema], metadata=schema.metadata)


def to_arrow_table(data: Any) -> pa.Table:
    """A pyarrow Table from a pyarrow Table/RecordBatch, pandas or Polars DataFrame (a Polars
    LazyFrame is collected; a pandas or Polars Series is a one-column table), or dict of arrays.
    View-typed columns come back as large strings / binaries (:func:`without_views`)."""
    return without_views(_arrow_table(data))


def _arrow_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    mod, name = type(data).__module__.split(".")[0], type(data).__name__
    if mod == "polars":
        if name == "LazyFrame":
            data = data.collect()
        return (data.to_frame() if name == "Series" else data).to_arrow()
    if mod == "pandas":
        try:
            return pa.Table.from_pandas(data.to_frame() if name == "Series" else data, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, TypeError) as exc:
            raise InvalidArgument(f"cannot make an Arrow table from this pandas {name}: {exc}") from None
    if isinstance(data, dict):
        try:
            return pa.table({k: _column(v) for k, v in data.items()})
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError) as exc:
            raise InvalidArgument(f"cannot make a table from this dict: {exc}") from exc
    raise InvalidArgument(
        f"expected a pyarrow Table, pandas/Polars DataFrame or dict of arrays, got {type(data).__name__}"
    )


def _column(values: Any) -> Any:
    """One column of a dict of arrays: Arrow arrays as given, numpy's own dtypes as numpy reads
    them, and lists of Python objects through :func:`~bloomdb.pyvalues.array_from_values`
    (pandas Timestamps keep their nanoseconds)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    arr = np.asarray(values)
    return array_from_values(list(values)) if arr.dtype == object and arr.ndim == 1 else arr


class TableWriter:
    """Streams record batches into a new columnar table folder.

    ``path`` must not exist or be an empty folder. Call :meth:`write_batch` any number of times,
    then :meth:`close` (or use it as a context manager). Cost: one encode pass per column.
    """

    def __init__(self, path: str | os.PathLike, schema: pa.Schema, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                 compression: str | None = None):
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or not 1 <= chunk_rows <= (1 << 31) - 1:
            raise InvalidArgument(f"chunk_rows must be an integer in [1, 2^31), got {chunk_rows!r}")
        if compression not in (None, "none", "zstd"):
            raise InvalidArgument(f"compression must be None or 'zstd', got {compression!r}")
        self.path = os.fspath(path)
        if os.path.exists(self.path) and (not os.path.isdir(self.path) or os.listdir(self.path)):
            raise InvalidArgument(f"{self.path} exists and is not an empty folder")
        os.makedirs(self.path, exist_ok=True)
        self.names = list(schema.names)
        if len(set(self.names)) != len(self.names):
            raise InvalidArgument("column names must be unique")
        self.types = [ColumnType.of(f.type, f.name) for f in schema]
        self.schema = schema
        self.chunk_rows = chunk_rows
        self.compression = None if compression == "none" else compression
        self._groups: list[dict] = []
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._rows = 0

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        if isinstance(batch, pa.Table):
            for b in batch.to_batches():
                self.write_batch(b)
            return
        if batch.schema.names != self.names:
            raise InvalidArgument(f"batch columns {batch.schema.names} differ from the table's {self.names}")
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        while self._pending_rows >= self.chunk_rows:
            self._flush(self.chunk_rows)

    def _flush(self, rows: int) -> None:
        t = pa.Table.from_batches(self._pending, schema=self._pending[0].schema)
        self._write_group(t.slice(0, rows))
        rest = t.slice(rows)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def _write_group(self, t: pa.Table) -> None:
        fname = f"rg-{len(self._groups):06d}.bdc"
        chunks = []
        pos = 0
        with open(os.path.join(self.path, fname), "wb") as fh:
            for name, ctype, col in zip(self.names, self.types, t.columns):
                arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
                if pa.types.is_dictionary(arr.type):
                    arr = arr.dictionary_decode()
                if arr.type != ctype.arrow:
                    arr = arr.cast(ctype.arrow)
                ec = encode(arr, ctype, self.compression)
                fh.write(ec.data)
                pad = -len(ec.data) % _ALIGN
                fh.write(b"\0" * pad)
                chunks.append({"offset": pos, "length": len(ec.data), "encoding": ENCODING_NAMES[ec.encoding],
                               "null_count": ec.null_count, "min": ec.min, "max": ec.max,
                               "header_crc": crc32c(ec.data[:HEADER_SIZE])})
                pos += len(ec.data) + pad
        self._groups.append({"file": fname, "num_rows": t.num_rows, "chunks": chunks})
        self._rows += t.num_rows

    def close(self) -> None:
        if self._pending_rows:
            self._flush(self._pending_rows)
        manifest = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "num_rows": self._rows,
            "chunk_rows": self.chunk_rows,
            "columns": [{"name": n, "type": t.to_json()} for n, t in zip(self.names, self.types)],
            "row_groups": self._groups,
        }
        manifest["crc32c"] = crc32c(_canonical(manifest))
        tmp = os.path.join(self.path, MANIFEST + ".tmp")
        with open(tmp, "w") as fh:
            json.dump(manifest, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, os.path.join(self.path, MANIFEST))

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()


@dataclass(frozen=True)
class ChunkInfo:
    offset: int
    length: int
    encoding: str
    null_count: int
    min: Any
    max: Any
    header_crc: int | None = None  # format 2: CRC32C of the chunk's 48-byte header


@dataclass(frozen=True)
class RowGroupInfo:
    file: str
    num_rows: int
    chunks: tuple[ChunkInfo, ...]


class ColumnarTable:
    """An open columnar table: schema, row groups, and chunk access (files are memory-mapped).

    ``verify`` (the default): every chunk's body is checked against its CRC32C the first time this
    open table reads it (a pass over the chunk, once: the verified chunks are remembered, so
    repeated joins over a kept-open table do not re-hash). ``verify=False`` skips that pass
    (damaged bodies may then decode to wrong values). The manifest's and the chunk headers'
    checksums (format 2) are always checked; they are small.

    Cost of opening: reading and checking the manifest.
    """

    def __init__(self, path: str | os.PathLike, verify: bool = True):
        self.path = os.fspath(path)
        mpath = os.path.join(self.path, MANIFEST)
        try:
            with open(mpath, "rb") as fh:
                m = json.loads(fh.read())
        except FileNotFoundError:
            raise InvalidArgument(f"{self.path} is not a bloomdb columnar table (no {MANIFEST})") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise CorruptionError(f"unreadable manifest: {exc}", mpath) from exc
        try:
            self._load(m, mpath)
        except CorruptionError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise CorruptionError(f"bad manifest: {exc!r}", mpath) from exc
        self.verify = verify
        self._maps: dict[str, np.ndarray] = {}
        self._verified: set[tuple[int, int]] = set()  # (row group, column) whose body CRC matched
        self._verify_lock = threading.Lock()
        self.schema = pa.schema([pa.field(n, t.arrow) for n, t in zip(self.names, self.types)])

    def _load(self, m: Any, mpath: str) -> None:
        """Check the manifest ``m`` (its checksum, keys, types and sums) and take it in."""
        if not isinstance(m, dict) or m.get("format") != FORMAT_NAME or m.get("version") not in _MANIFEST_KEYS:
            version = m.get("version") if isinstance(m, dict) else None
            raise CorruptionError(f"unsupported table format {m.get('format') if isinstance(m, dict) else m!r} "
                                  f"v{version}", mpath)
        version = m["version"]
        if set(m) != _MANIFEST_KEYS[version]:
            raise CorruptionError(f"manifest keys {sorted(m)} are not those of format {version}", mpath)
        if version >= 2 and (type(m["crc32c"]) is not int or crc32c(_canonical(m)) != m["crc32c"]):
            raise CorruptionError("manifest checksum mismatch", mpath)
        self.format_version = version
        self.names = [c["name"] for c in m["columns"]]
        if any(not isinstance(n, str) for n in self.names) or len(set(self.names)) != len(self.names):
            raise CorruptionError("manifest column names are not unique strings", mpath)
        self.types = [ColumnType.from_json(c["type"], mpath) for c in m["columns"]]
        self.num_rows = _count(m["num_rows"])
        groups = []
        for g in m["row_groups"]:
            if set(g) != {"file", "num_rows", "chunks"} or not isinstance(g["file"], str) \
                    or not _FILE_NAME.fullmatch(g["file"]):
                raise CorruptionError(f"bad row group entry {g!r}"[:200], mpath)
            chunks = []
            for c in g["chunks"]:
                if set(c) != _CHUNK_KEYS[version]:
                    raise CorruptionError(f"bad chunk entry {c!r}"[:200], mpath)
                chunks.append(ChunkInfo(**c))
                if any(type(getattr(chunks[-1], f)) is not int or getattr(chunks[-1], f) < 0
                       for f in ("offset", "length", "null_count")):
                    raise CorruptionError(f"bad chunk entry {c!r}"[:200], mpath)
            groups.append(RowGroupInfo(g["file"], _count(g["num_rows"]), tuple(chunks)))
        self.row_groups = groups
        if any(len(g.chunks) != len(self.names) for g in self.row_groups):
            raise CorruptionError("a row group has the wrong number of chunks", mpath)
        if sum(g.num_rows for g in self.row_groups) != self.num_rows:
            raise CorruptionError("row groups' rows do not add up to the table's", mpath)

    def column_index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise InvalidArgument(f"no column {name!r} in {self.path} (columns: {', '.join(self.names)})") from None

    def _file(self, fname: str) -> np.ndarray:
        buf = self._maps.get(fname)
        if buf is None:
            p = os.path.join(self.path, fname)
            try:
                with open(p, "rb") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    # a plain read-only ndarray over the mapping (np.memmap slices are slow objects)
                    buf = np.frombuffer(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), np.uint8) if size \
                        else np.zeros(0, np.uint8)
            except FileNotFoundError:
                raise CorruptionError("row group file missing", p) from None
            self._maps[fname] = buf
        return buf

    def chunk(self, group: int, column: int | str) -> Chunk:
        """The decoded view of one column chunk (``column`` by index or name)."""
        ci = column if isinstance(column, int) else self.column_index(column)
        g = self.row_groups[group]
        info = g.chunks[ci]
        buf = self._file(g.file)
        if info.offset + info.length > buf.nbytes:
            raise CorruptionError("column chunk beyond the end of its file", os.path.join(self.path, g.file))
        where = os.path.join(self.path, g.file)
        raw = buf[info.offset : info.offset + info.length]
        if info.header_crc is not None and (raw.nbytes < HEADER_SIZE or crc32c(raw[:HEADER_SIZE]) != info.header_crc):
            raise CorruptionError(f"column chunk header checksum mismatch (row group {group}, column {ci})", where)
        check = self.verify and (group, ci) not in self._verified
        ch = Chunk(raw, self.types[ci], where, check, info)
        if ch.num_rows != g.num_rows:
            raise CorruptionError("column chunk row count differs from its row group", where)
        if check:
            with self._verify_lock:
                self._verified.add((group, ci))
        return ch

    def read(self, columns: Iterable[str] | None = None) -> pa.Table:
        """The whole table (or ``columns``) as a pyarrow Table. Cost: decodes every chunk read."""
        names = self.names if columns is None else list(columns)
        idx = [self.column_index(n) for n in names]
        cols = []
        for i in idx:
            arrays = [self.chunk(g, i).arrow() for g in range(len(self.row_groups))]
            cols.append(pa.chunked_array(arrays, type=self.types[i].arrow))
        return pa.Table.from_arrays(cols, schema=pa.schema([pa.field(self.names[i], self.types[i].arrow) for i in idx]))

    def iter_chunks(self, column: str) -> Iterator[Chunk]:
        ci = self.column_index(column)
        for g in range(len(self.row_groups)):
            yield self.chunk(g, ci)


def _count(v: Any) -> int:
    if type(v) is not int or v < 0:
        raise CorruptionError(f"a row count is not a non-negative integer: {v!r}"[:200])
    return v
