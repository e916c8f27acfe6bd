"""Sizes of Parquet files from their footers (what a plain Dask read-and-shuffle would move)."""

from __future__ import annotations


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
