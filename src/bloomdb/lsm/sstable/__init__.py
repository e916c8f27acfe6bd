"""Sorted string tables: immutable files of sorted entries with an index and a filter block.

See ``docs/formats.md`` ("LSM store") for every byte. :mod:`.builder` writes a table from sorted
entries; :mod:`.reader` opens one (footer, meta and index read once and kept in memory; the
filter block read lazily on the first lookup; data blocks read from a memory map on demand).
"""

from .builder import TableInfo, build_table
from .reader import MISSING, DELETED, Table

__all__ = ["TableInfo", "build_table", "Table", "MISSING", "DELETED"]
