"""The one checksum of bloomdb's files: CRC32C (Castagnoli), as LevelDB, RocksDB and Parquet use it.

``crc32c(data, value=0)`` is the ``crc32c`` library's hardware-accelerated function itself (no
wrapper: one C call per buffer, ~10+ GB/s); ``value`` continues a running checksum. Every format
that stores a CRC (filter envelopes, column files and manifests, WAL records, SSTable blocks)
imports it from here, so no engine reaches into another's format module for it.
"""

from __future__ import annotations

from crc32c import crc32c

__all__ = ["crc32c"]
