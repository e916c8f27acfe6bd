"""``bloomdb.columnar``: a small column store with lightweight, randomly accessible encodings.

>>> from bloomdb import columnar
>>> columnar.write("/tmp/t", {"k": np.arange(10), "v": np.random.rand(10)})
>>> columnar.read("/tmp/t", columns=["v"])          # -> pyarrow.Table

A table is a folder of row groups (``chunk_rows`` rows each, 64Ki by default); each column chunk
is encoded on its own: integers (and bools, dates, timestamps) by frame of reference +
bit-packing, strings/binary by bit-packed dictionary codes, floats plain; nulls by a validity
bitmap; min/max per chunk in the manifest. Unless zstd is asked for, any value of a chunk can be
decoded without decoding its neighbours (:meth:`Chunk.numpy` / :meth:`Chunk.arrow` with
``positions``) — what the filtered hash join uses to decode only the rows that survive.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import pyarrow as pa

from ..errors import CorruptionError, InvalidArgument
from .encoding import Chunk
from .table import DEFAULT_CHUNK_ROWS, ColumnarTable, TableWriter, to_arrow_table, without_views, without_views_schema
from .types import ColumnType

__all__ = ["write", "read", "open", "import_parquet", "is_table", "ColumnarTable", "TableWriter", "Chunk",
           "ColumnType", "DEFAULT_CHUNK_ROWS", "to_arrow_table", "without_views", "without_views_schema"]


def write(path: str | os.PathLike, table: Any, chunk_rows: int = DEFAULT_CHUNK_ROWS,
          compression: str | None = None) -> ColumnarTable:
    """Write ``table`` (pyarrow Table, pandas/Polars DataFrame or dict of arrays) to a new folder.

    ``compression="zstd"`` compresses each chunk body (smaller, but a chunk then decodes whole).
    Raises :class:`~bloomdb.errors.InvalidArgument` for unsupported column types, a non-empty
    target folder or bad parameters. Returns the opened table.
    """
    t = to_arrow_table(table)
    with TableWriter(path, t.schema, chunk_rows, compression) as w:
        w.write_batch(t)
    return ColumnarTable(path)


def import_parquet(path_in: str | os.PathLike, path_out: str | os.PathLike, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                   compression: str | None = None, columns: Iterable[str] | None = None) -> ColumnarTable:
    """Convert a Parquet file to a columnar table, streaming ``chunk_rows`` rows at a time."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(os.fspath(path_in), page_checksum_verification=True)
        cols = None if columns is None else list(columns)
        schema = pf.schema_arrow if cols is None else pa.schema([pf.schema_arrow.field(c) for c in cols])
    except (pa.ArrowException, OSError, KeyError) as exc:
        raise InvalidArgument(f"cannot import {os.fspath(path_in)} as Parquet: {exc}") from None
    with TableWriter(path_out, schema, chunk_rows, compression) as w:
        try:
            for batch in pf.iter_batches(batch_size=chunk_rows, columns=cols):
                w.write_batch(batch)
        except (pa.ArrowException, OSError) as exc:  # pyarrow's word for damaged pages
            raise CorruptionError(f"cannot import {os.fspath(path_in)}: {exc}", os.fspath(path_in)) from None
    return ColumnarTable(path_out)


def open(path: str | os.PathLike, verify: bool = True) -> ColumnarTable:  # noqa: A001
    """Open a table folder (reads the manifest only)."""
    return ColumnarTable(path, verify=verify)


def read(path: str | os.PathLike, columns: Iterable[str] | None = None) -> pa.Table:
    """Read a table (or some ``columns``) into a pyarrow Table."""
    return ColumnarTable(path).read(columns)


def is_table(path: Any) -> bool:
    """True when ``path`` is a folder holding a columnar table manifest."""
    from .table import MANIFEST

    try:
        return os.path.isfile(os.path.join(os.fspath(path), MANIFEST))
    except TypeError:
        return False
