"""Parquet files: the split-block Bloom filters they carry, and their columns read at chosen rows.

* :mod:`.bloom` -- ``read_filters``, ``row_groups_that_may_contain``, ``hash_values``: the
  per-column-chunk split-block filters DuckDB, Arrow and other writers store (as
  :class:`.column_bloom.ColumnBloom`: keys are the column's own values).
* :mod:`.pages` -- :class:`ParquetColumns`: fixed-width flat columns decoded page by page at the
  rows a filtered scan kept (the join's Parquet probe path).
"""

from .bloom import (
    UnsupportedBloomFilter,
    hash_values,
    parse_bloom_filter_header,
    read_filters,
    row_groups_that_may_contain,
)
from .column_bloom import ColumnBloom
from .pages import ParquetColumns

__all__ = ["read_filters", "row_groups_that_may_contain", "hash_values", "UnsupportedBloomFilter",
           "parse_bloom_filter_header", "ParquetColumns", "ColumnBloom"]
