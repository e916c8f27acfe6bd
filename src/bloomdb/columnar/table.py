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
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..errors import CorruptionError, InvalidArgument
from .encoding import ENCODING_NAMES, Chunk, encode
from .types import ColumnType

MANIFEST = "_table.json"
FORMAT_NAME = "bloomdb-columnar"
FORMAT_VERSION = 1
DEFAULT_CHUNK_ROWS = 65536
_ALIGN = 64


def to_arrow_table(data: Any) -> pa.Table:
    """A pyarrow Table from a pyarrow Table/RecordBatch, pandas or Polars DataFrame, or dict of arrays."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    mod = type(data).__module__.split(".")[0]
    if mod == "polars":
        return data.to_arrow()
    if mod == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, dict):
        try:
            return pa.table({k: (v if isinstance(v, (pa.Array, pa.ChunkedArray)) else np.asarray(v)) for k, v in data.items()})
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as exc:
            raise InvalidArgument(f"cannot make a table from this dict: {exc}") from exc
    raise InvalidArgument(
        f"expected a pyarrow Table, pandas/Polars DataFrame or dict of arrays, got {type(data).__name__}"
    )


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
                               "null_count": ec.null_count, "min": ec.min, "max": ec.max})
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


@dataclass(frozen=True)
class RowGroupInfo:
    file: str
    num_rows: int
    chunks: tuple[ChunkInfo, ...]


class ColumnarTable:
    """An open columnar table: schema, row groups, and chunk access (files are memory-mapped).

    Cost of opening: reading the manifest. Chunks are mapped on first use and checksummed then.
    """

    def __init__(self, path: str | os.PathLike, verify: bool = True):
        self.path = os.fspath(path)
        mpath = os.path.join(self.path, MANIFEST)
        try:
            with open(mpath) as fh:
                m = json.load(fh)
        except FileNotFoundError:
            raise InvalidArgument(f"{self.path} is not a bloomdb columnar table (no {MANIFEST})") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorruptionError(f"unreadable manifest: {exc}", mpath) from exc
        try:
            if m["format"] != FORMAT_NAME or m["version"] != FORMAT_VERSION:
                raise CorruptionError(f"unsupported table format {m.get('format')!r} v{m.get('version')}", mpath)
            self.names = [c["name"] for c in m["columns"]]
            self.types = [ColumnType.from_json(c["type"], mpath) for c in m["columns"]]
            self.num_rows = int(m["num_rows"])
            self.row_groups = [
                RowGroupInfo(g["file"], int(g["num_rows"]), tuple(ChunkInfo(**c) for c in g["chunks"]))
                for g in m["row_groups"]
            ]
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CorruptionError):
                raise
            raise CorruptionError(f"bad manifest: {exc!r}", mpath) from exc
        if any(len(g.chunks) != len(self.names) for g in self.row_groups):
            raise CorruptionError("a row group has the wrong number of chunks", mpath)
        self.verify = verify
        self._maps: dict[str, np.ndarray] = {}
        self.schema = pa.schema([pa.field(n, t.arrow) for n, t in zip(self.names, self.types)])

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
        ch = Chunk(buf[info.offset : info.offset + info.length], self.types[ci], os.path.join(self.path, g.file), self.verify)
        if ch.num_rows != g.num_rows:
            raise CorruptionError("column chunk row count differs from its row group", os.path.join(self.path, g.file))
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
