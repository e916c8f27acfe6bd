"""Probe inputs of many files: folders, globs, lists of paths, ``pyarrow.dataset`` Datasets and
record-batch streams, as one :class:`~.sources.ProbeSource`.

:func:`open_probe` turns whatever the caller gave into a source. Several files become a
:class:`MultiSource`: the chunks (row groups) of every file in one sequence, so the join's thread
pool reads files in parallel and every file's row groups are pruned by that file's own min/max
statistics and Bloom filters. Hive partition values (``year=2024/``) are columns whose value is
constant over a file (min = max = the value, so a key or a predicate on them prunes whole files).
A ``RecordBatchReader`` (or a Dataset that is not a set of local Parquet files) is read once,
batch by batch, as the scan asks for chunks (:class:`ReaderSource`).

:func:`dataset_files` is the file listing on its own — what a partitioned runner (e.g. one task
per partition) needs to run :func:`bloomdb.join.hash_join` over a subset of files: pass it the
list of :class:`ProbeFile` (or their paths).
"""

from __future__ import annotations

import bisect
import glob
import os
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .. import columnar
from ..errors import InvalidArgument
from .compare import KeyDomain
from .keys import JoinKeys, from_arrow
from .sources import ArrowSource, ProbeChunk, ProbeSource, numeric_from_arrow, open_source


@dataclass(frozen=True)
class ProbeFile:
    """One file of a probe dataset and its partition values (column -> Python value)."""

    path: str
    partition: dict[str, Any] = field(default_factory=dict)


def _is_glob(p: str) -> bool:
    return any(c in p for c in "*?[")


def dataset_files(obj: Any) -> tuple[list[ProbeFile], pa.Schema | None] | None:
    """``(files, schema)`` of a multi-file probe input — a folder of Parquet files (hive
    partitions read from the paths), a glob, a list of paths or a file-based
    ``pyarrow.dataset.Dataset`` — or None when ``obj`` is not one. ``schema`` is the dataset's
    (partition columns included) or None for a plain list or glob; either way the scan unifies it
    with the files' own schemas as DuckDB's ``union_by_name`` (int32 with int64 is int64, a
    missing column is null)."""
    import pyarrow.dataset as ds

    if isinstance(obj, (list, tuple)) and obj and all(isinstance(p, (str, os.PathLike, ProbeFile)) for p in obj):
        return [p if isinstance(p, ProbeFile) else ProbeFile(os.fspath(p)) for p in obj], None
    if isinstance(obj, (str, os.PathLike)):
        p = os.fspath(obj)
        if _is_glob(p) and not os.path.exists(p):
            paths = sorted(x for x in glob.glob(p, recursive=True) if os.path.isfile(x))
            if not paths:
                raise InvalidArgument(f"no file matches {p}")
            return [ProbeFile(x) for x in paths], None
        if not os.path.isdir(p) or columnar.is_table(p):
            return None
        try:
            obj = ds.dataset(p, format="parquet", partitioning="hive")
        except (pa.ArrowInvalid, OSError) as exc:
            raise InvalidArgument(f"cannot read the folder {p} as Parquet files: {exc}") from None
        if not obj.files:
            raise InvalidArgument(f"the folder {p} holds no Parquet file")
    if isinstance(obj, ds.FileSystemDataset) and isinstance(obj.format, ds.ParquetFileFormat) \
            and isinstance(obj.filesystem, pa.fs.LocalFileSystem):  # fmt: skip
        files = [ProbeFile(f.path, ds.get_partition_keys(f.partition_expression)) for f in obj.get_fragments()]
        return files, obj.schema
    return None


class _WrappedChunk(ProbeChunk):
    """A file's chunk seen through a wrapper that changes some columns (the rest pass through)."""

    def __init__(self, inner: ProbeChunk):
        self.inner = inner
        self.gathers_repeats = inner.gathers_repeats
        self.decoded = inner.decoded
        self.num_rows = inner.num_rows


class _ConstChunk(_WrappedChunk):
    """A file's chunk with its partition columns added as constants."""

    def __init__(self, inner: ProbeChunk, consts: dict[str, pa.Scalar]):
        super().__init__(inner)
        self.consts = consts

    def _const(self, name: str, n: int) -> pa.Array:
        return pa.repeat(self.consts[name], n)

    def keys(self, key: str, domain: KeyDomain) -> JoinKeys:
        if key in self.consts:
            return from_arrow(self._const(key, self.num_rows), domain)
        return self.inner.keys(key, domain)

    def numeric(self, name, positions, whole):
        if name in self.consts:
            return (*numeric_from_arrow(self._const(name, positions.shape[0])), None)
        return self.inner.numeric(name, positions, whole)

    def arrow(self, name, positions, whole):
        if name in self.consts:
            return self._const(name, positions.shape[0])
        return self.inner.arrow(name, positions, whole)


def _unified(schemas: list[pa.Schema]) -> pa.Schema:
    """One schema for files written apart (DuckDB's ``union_by_name``): a column takes the type
    every file's values fit (int32 with int64 is int64); InvalidArgument when there is none."""
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise InvalidArgument(f"the probe files' schemas do not agree: {exc}") from None


class _WidenedChunk(_WrappedChunk):
    """A file's chunk whose columns ``types`` names are read as the dataset's wider types."""

    def __init__(self, inner: ProbeChunk, types: dict[str, pa.DataType]):
        super().__init__(inner)
        self.types = types

    def keys(self, key: str, domain: KeyDomain) -> JoinKeys:
        if key in self.types:
            return from_arrow(self.arrow(key, np.arange(self.num_rows, dtype=np.int64), True), domain)
        return self.inner.keys(key, domain)

    def numeric(self, name, positions, whole):
        if name in self.types:
            return (*numeric_from_arrow(self.arrow(name, positions, whole)), None)
        return self.inner.numeric(name, positions, whole)

    def arrow(self, name, positions, whole):
        out = self.inner.arrow(name, positions, whole)
        return out.cast(self.types[name]) if name in self.types else out


class MultiSource(ProbeSource):
    """The chunks of several sources (files) in one sequence; chunk ``i`` is chunk ``i - start``
    of the file whose range holds it."""

    def __init__(self, files: list[ProbeFile], schema: pa.Schema | None, verify: bool, chunk_rows: int):
        if not files:
            raise InvalidArgument("the probe dataset holds no file")
        self.parts = [open_source(f.path, verify, chunk_rows) for f in files]
        self.labels = [f.path for f in files]
        # the dataset's schema (partition columns) widened by every file's own: a file's column
        # is never read as a narrower type than it holds
        self.schema = _unified(([schema] if schema is not None else []) + [p.schema for p in self.parts])
        self.consts: list[dict[str, pa.Scalar]] = []
        for f, part in zip(files, self.parts):
            c = {n: pa.scalar(f.partition.get(n), self.schema.field(n).type)
                 for n in self.schema.names if n not in part.schema.names}
            self.consts.append(c)
        self.starts = np.cumsum([0] + [p.num_chunks for p in self.parts]).tolist()
        self.num_chunks = self.starts[-1]
        self.label = f"{len(files)} files ({files[0].path}, ...)" if len(files) > 1 else files[0].path

    def _at(self, i: int) -> tuple[int, int]:
        f = bisect.bisect_right(self.starts, i) - 1
        return f, i - self.starts[f]

    def chunk(self, i):
        f, j = self._at(i)
        ch = self.parts[f].chunk(j)
        ch = _ConstChunk(ch, self.consts[f]) if self.consts[f] else ch
        widen = {n: self.schema.field(n).type for n in self.parts[f].schema.names
                 if n in self.schema.names and self.parts[f].schema.field(n).type != self.schema.field(n).type}
        return _WidenedChunk(ch, widen) if widen else ch

    def chunk_rows(self, i):
        f, j = self._at(i)
        return self.parts[f].chunk_rows(j)

    def file_of(self, i):
        return self.labels[self._at(i)[0]]

    def key_stats(self, i, key):
        f, j = self._at(i)
        if key in self.consts[f]:
            v = self.consts[f][key].as_py()
            return (v, v) if v is not None else (None, None)
        return self.parts[f].key_stats(j, key)

    def has_bloom_filters(self, key):
        return any(p.has_bloom_filters(key) for p in self.parts)

    def bloom_may_contain(self, key, values):
        out = []
        for p in self.parts:
            hits = p.bloom_may_contain(key, values) if p.has_bloom_filters(key) else None
            out.append(np.ones(p.num_chunks, np.bool_) if hits is None else hits)
        return np.concatenate(out) if out else None


class _Batch(int):
    """A chunk number that carries its rows (a stream's chunk lives as long as its task)."""

    table: pa.Table


#: readers a join has started to read (a second join would silently see no rows)
_CONSUMED: "weakref.WeakSet[pa.RecordBatchReader]" = weakref.WeakSet()


class ReaderSource(ProbeSource):
    """A ``RecordBatchReader`` read once: batches (cut to ``chunk_rows``) become chunks as the
    scan takes them; no statistics, so nothing is pruned before reading. A reader a join has
    already read is refused (InvalidArgument), not taken for an empty input."""

    def __init__(self, reader: pa.RecordBatchReader, chunk_rows: int):
        if reader in _CONSUMED:
            raise InvalidArgument("this RecordBatchReader was read by an earlier join (a reader is read once)")
        self.reader, self.rows = reader, chunk_rows
        self.schema = columnar.without_views_schema(reader.schema)
        self.num_chunks = 0
        self.label = "record batch reader"

    def tasks(self):
        _CONSUMED.add(self.reader)
        i = 0
        for batch in self.reader:
            for off in range(0, batch.num_rows, self.rows):
                t = _Batch(i)
                t.table = columnar.without_views(pa.Table.from_batches([batch.slice(off, self.rows)]))
                self.num_chunks = i = i + 1
                yield t

    def chunk(self, i):
        return ArrowSource(i.table, max(1, i.table.num_rows)).chunk(0)

    def chunk_rows(self, i):
        return i.table.num_rows


def index_keys(obj: Any, keys: list[str], side: str) -> Any:
    """A pandas DataFrame whose key columns include named index levels (pandas' ``merge`` takes
    index level names in ``on``) with those levels made columns (first, as ``reset_index`` puts
    them); anything else as given. A name that is both a column and an index level raises
    InvalidArgument, as pandas refuses it as ambiguous."""
    if type(obj).__module__.split(".")[0] != "pandas" or type(obj).__name__ != "DataFrame":
        return obj
    levels = [k for k in dict.fromkeys(keys) if k in obj.index.names]
    both = [k for k in levels if k in obj.columns]
    if both:
        raise InvalidArgument(f"{side} key {both[0]!r} is both an index level and a column of the {side} DataFrame, "
                              "which is ambiguous (pandas refuses it too)")
    return obj.reset_index(level=levels) if levels else obj


def open_build(obj: Any) -> Any:
    """The build side in a form :func:`.sources.read_all` and :func:`.sources.schema_of` read:
    a folder of Parquet files (hive partitions as columns), a glob or a list of Parquet paths
    becomes a ``pyarrow.dataset.Dataset`` (read whole, only the columns the join needs); a
    ``RecordBatchReader`` is read into a table once; anything else is returned as given."""
    import pyarrow.dataset as ds

    if isinstance(obj, pa.RecordBatchReader):
        return columnar.without_views(obj.read_all())
    if isinstance(obj, ds.Dataset):
        return obj
    listed = dataset_files(obj)
    if listed is None:
        return obj
    files, schema = listed
    if schema is not None and isinstance(obj, (str, os.PathLike)) and os.path.isdir(obj):
        return ds.dataset(os.fspath(obj), format="parquet", partitioning="hive")
    if any(f.partition for f in files):
        raise InvalidArgument("a build side of files with partition values: give the folder or a pyarrow Dataset")
    try:
        return ds.dataset([f.path for f in files], format="parquet")
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidArgument(f"cannot read the build side's files as Parquet: {exc}") from None


def open_probe(obj: Any, verify: bool = True, chunk_rows: int = columnar.DEFAULT_CHUNK_ROWS) -> ProbeSource:
    """A probe source for anything :func:`bloomdb.join.hash_join` takes as ``probe``."""
    import pyarrow.dataset as ds

    if isinstance(obj, pa.RecordBatchReader):
        return ReaderSource(obj, chunk_rows)
    listed = dataset_files(obj)
    if listed is not None:
        files, schema = listed
        return MultiSource(files, schema, verify, chunk_rows)
    if isinstance(obj, ds.Dataset):
        return ReaderSource(obj.scanner().to_reader(), chunk_rows)
    return open_source(obj, verify, chunk_rows)
