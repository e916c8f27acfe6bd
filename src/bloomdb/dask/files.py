"""The Parquet files of a probe dataset given as a folder, a glob or a list of paths."""

from __future__ import annotations

import glob
import os
from typing import Any

from ..errors import InvalidArgument


def parquet_files(obj: Any) -> list[str] | None:
    """Sorted Parquet file paths for a folder (every ``*.parquet`` below it), a glob pattern, one
    file, or a list/tuple of those; None when ``obj`` is not a path-like input. Raises
    InvalidArgument when a path names nothing or a folder/glob holds no Parquet file."""
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(p, (str, os.PathLike)) for p in obj):
        return [f for p in obj for f in parquet_files(p) or []]
    if not isinstance(obj, (str, os.PathLike)):
        return None
    p = os.fspath(obj)
    if any(ch in p for ch in "*?["):
        found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
    elif os.path.isdir(p):
        found = sorted(os.path.join(d, f) for d, _, names in os.walk(p) for f in names if f.endswith(".parquet"))
    elif os.path.isfile(p):
        found = [p]
    else:
        raise InvalidArgument(f"probe path {p!r} does not exist")
    if not found:
        raise InvalidArgument(f"no Parquet files in {p!r}")
    return found


def uncompressed_bytes(path: str, columns: list[str] | None) -> int:
    """The decoded size of ``columns`` (all when None) in a Parquet file, from its footer: what a
    reader that loads the file whole (``dd.read_parquet`` then a shuffle) holds and moves."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(path).metadata
    total = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            if columns is None or col.path_in_schema in columns:
                total += col.total_uncompressed_size
    return total
