"""Options of the LSM store (:class:`Options`), validated once at :meth:`DB.open`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InvalidArgument

MAX_LEVELS = 7


@dataclass
class Options:
    """Tuning knobs of :class:`bloomdb.lsm.DB`.

    * ``filter``: filter registry spec for every table (``"blocked:10"``; ``None`` = no filter).
      Any family of :func:`bloomdb.filters.available` works; ``blocked`` filters are probed by
      the store's own kernel, others through their family's ``might_contain_hashes``. A table's
      filter is read on its first lookup and kept in memory.
    * ``filter_per_level``: ``{level: spec or None}`` overriding ``filter`` per level (e.g. more
      bits at L0, fewer at the bottom).
    * ``optimize_filters_for_hits``: build no filter for tables written to the last level holding
      data (most keys live there; a lookup that reaches it usually finds its key).
    * ``block_size`` (4 KiB), ``restart_interval`` (16), ``memtable_bytes`` (4 MiB),
      ``table_bytes`` (target size of a compaction output, 2 MiB), ``level0_trigger`` (4 L0
      tables start an L0->L1 compaction), ``level0_stop`` (writers wait at this many L0 tables),
      ``level1_bytes`` (10 MiB), ``level_ratio`` (10: Ln+1 may hold 10x Ln).
    * ``compression``: ``None``, ``"zstd"`` or ``"lz4"``, per data block.
    * ``block_cache_bytes``: LRU cache of decompressed data blocks (compressed tables only;
      uncompressed blocks are read straight from the memory-mapped file).
    * ``partitioned_filters``: instead of one filter per table, one per
      ``filter_partition_blocks`` (16) data blocks, each read on demand (and kept) by the first
      lookup that needs it, found through a small partition index -- for tables too big to keep
      every filter in memory. The probe kernel finds the partition and checks it itself once
      it is read (``blocked`` partitions; other families are asked in Python).
    * ``wal_buffer_bytes``: ``0`` (default, LevelDB's behaviour): every write reaches the OS
      before ``put`` returns, so a crash of the process never loses an acknowledged write (an OS
      crash can lose unsynced ones; ``sync=True`` writes never). A positive value buffers unsynced
      records in the process up to that many bytes before one ``write`` syscall: fewer syscalls,
      but a process crash may lose what is buffered.
    * ``paranoid_checks``: a damaged WAL record in the middle of a log raises ``CorruptionError``
      (``False``: recovery stops at the damage and keeps what came before).
    * ``create_if_missing`` / ``error_if_exists``: as in LevelDB.
    * ``background_compaction``: run flushes and compactions in a background thread (``False``:
      inline in the writer, deterministic; used by some tests).
    * ``fs``: the file system (:mod:`bloomdb.lsm.fs`); ``None`` = the real one.
    """

    filter: str | None = "blocked:10"
    filter_per_level: dict[int, str | None] = field(default_factory=dict)
    optimize_filters_for_hits: bool = False
    block_size: int = 4096
    restart_interval: int = 16
    memtable_bytes: int = 4 << 20
    table_bytes: int = 2 << 20
    level0_trigger: int = 4
    level0_stop: int = 12
    level1_bytes: int = 10 << 20
    level_ratio: float = 10.0
    compression: str | None = None
    block_cache_bytes: int = 8 << 20
    partitioned_filters: bool = False
    filter_partition_blocks: int = 16
    wal_buffer_bytes: int = 0
    paranoid_checks: bool = True
    create_if_missing: bool = True
    error_if_exists: bool = False
    background_compaction: bool = True
    fs: Any = None

    def validated(self) -> "Options":
        """A checked copy; raises :class:`InvalidArgument` naming the bad field."""
        from .. import filters

        for name in ("block_size", "memtable_bytes", "table_bytes", "level1_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 64:
                raise InvalidArgument(f"Options.{name} must be an integer >= 64, got {v!r}")
        if not isinstance(self.restart_interval, int) or not 1 <= self.restart_interval <= 1024:
            raise InvalidArgument(f"Options.restart_interval must be in [1, 1024], got {self.restart_interval!r}")
        if not isinstance(self.level0_trigger, int) or self.level0_trigger < 1:
            raise InvalidArgument(f"Options.level0_trigger must be >= 1, got {self.level0_trigger!r}")
        if not isinstance(self.level0_stop, int) or self.level0_stop < self.level0_trigger:
            raise InvalidArgument("Options.level0_stop must be an integer >= level0_trigger")
        if not isinstance(self.level_ratio, (int, float)) or not self.level_ratio > 1:
            raise InvalidArgument(f"Options.level_ratio must be > 1, got {self.level_ratio!r}")
        if self.compression not in (None, "zstd", "lz4"):
            raise InvalidArgument(f"Options.compression must be None, 'zstd' or 'lz4', got {self.compression!r}")
        if not isinstance(self.filter_partition_blocks, int) or self.filter_partition_blocks < 1:
            raise InvalidArgument("Options.filter_partition_blocks must be an integer >= 1")
        if not isinstance(self.wal_buffer_bytes, int) or self.wal_buffer_bytes < 0:
            raise InvalidArgument("Options.wal_buffer_bytes must be an integer >= 0")
        if not isinstance(self.block_cache_bytes, int) or self.block_cache_bytes < 0:
            raise InvalidArgument("Options.block_cache_bytes must be an integer >= 0")
        specs = [self.filter, *self.filter_per_level.values()]
        for spec in specs:
            if spec is not None:
                name, _ = filters.parse_spec(spec)
                filters.family(name)  # raises InvalidArgument for an unknown family
        for lvl in self.filter_per_level:
            if not isinstance(lvl, int) or not 0 <= lvl < MAX_LEVELS:
                raise InvalidArgument(f"Options.filter_per_level keys are levels 0..{MAX_LEVELS - 1}, got {lvl!r}")
        return replace(self)

    def partition_blocks(self) -> int:
        """Data blocks per filter partition (0: one filter per table)."""
        return self.filter_partition_blocks if self.partitioned_filters else 0

    def filter_for(self, level: int, last_level: bool) -> str | None:
        """The filter spec for a table written to ``level`` (``last_level``: deepest with data)."""
        if last_level and self.optimize_filters_for_hits and level > 0:
            return None
        return self.filter_per_level.get(level, self.filter)
