"""Options of the LSM store (:class:`Options`), validated once at :meth:`DB.open`."""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InvalidArgument

MAX_LEVELS = 7
_FS_METHODS = ("open_append", "write_atomic", "read_all", "listdir", "exists", "remove", "rename", "makedirs")
_COMPRESSION_MODULES = {"zstd": "zstandard", "lz4": "lz4.frame"}


def _check_int(o, name: str, low: int, high: int | None = None) -> None:
    v = getattr(o, name)
    if isinstance(v, bool) or not isinstance(v, int) or v < low or (high is not None and v > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise InvalidArgument(f"Options.{name} must be an integer {bound}, got {v!r}")


def _check_compression(name) -> None:
    """``None``, ``"zstd"`` or ``"lz4"``, and its codec importable now (not at the first flush)."""
    if name is None:
        return
    if name not in _COMPRESSION_MODULES:
        raise InvalidArgument(f"Options.compression must be None, 'zstd' or 'lz4', got {name!r}")
    try:
        importlib.import_module(_COMPRESSION_MODULES[name])
    except ImportError as e:
        raise InvalidArgument(f"Options.compression={name!r} needs the {_COMPRESSION_MODULES[name]} module: {e}") from None


def _check_filter_spec(where: str, spec) -> None:
    if spec is None:
        return
    if not isinstance(spec, str):
        raise InvalidArgument(f"{where} must be a filter spec like 'blocked:10' or None, got {spec!r}")
    from .sstable.builder import filter_spec_problem

    why = filter_spec_problem(spec)
    if why is not None:
        raise InvalidArgument(f"{where}={spec!r} cannot be used by the store's tables: {why}")


@dataclass
class Options:
    """Tuning knobs of :class:`bloomdb.lsm.DB`.

    * ``filter``: filter registry spec for every table (``"blocked:10"``; ``None`` = no filter).
      Any family of :func:`bloomdb.filters.available` works; every family with a probe
      descriptor (all but ``scalable``) is checked inside the store's probe kernel by the
      family's own ``check_hash`` on its own hash of the key, ``scalable`` through its
      ``might_contain_many``. A table's filter says its family in its bytes, so
      tables written under another spec stay readable. A table's filter is read on its first
      lookup and kept in memory. :meth:`DB.open` refuses a spec (bad family or parameters, or a
      family the store cannot use) with ``InvalidArgument`` naming it.
    * ``filter_per_level``: ``{level: spec or None}`` overriding ``filter`` per level (e.g. more
      bits at L0, fewer at the bottom).
    * ``optimize_filters_for_hits``: build no filter for tables written to the last level holding
      data (most keys live there; a lookup that reaches it usually finds its key).
    * ``block_size`` (4 KiB), ``restart_interval`` (16), ``memtable_bytes`` (4 MiB),
      ``table_bytes`` (target size of a compaction output, 2 MiB), ``level0_trigger`` (4 L0
      tables start an L0->L1 compaction), ``level0_stop`` (writers wait at this many L0 tables),
      ``level1_bytes`` (10 MiB), ``level_ratio`` (10: Ln+1 may hold 10x Ln). While the
      previous memtable is being flushed (background threads), the writer fills the current one
      up to twice ``memtable_bytes`` before it waits for that flush: up to three memtables'
      bytes in memory (``WritePath._room``).
    * ``max_flush_level`` (2, LevelDB's ``kMaxMemCompactLevel``): a flushed memtable whose keys
      overlap no table of L0 down to this level goes straight to the deepest such level (LevelDB's
      ``PickLevelForMemTableOutput``, :func:`.compaction.policy.flush_level`): a sequential
      fill makes no trivial move. ``0``: every flush writes an L0 table (RocksDB's behaviour).
    * ``compression``: ``None``, ``"zstd"`` or ``"lz4"``, per data block.
    * ``block_cache_bytes``: LRU cache of decompressed data blocks (compressed tables only;
      uncompressed blocks are read straight from the memory-mapped file). Not used with
      ``cache_bytes``.
    * ``cache_bytes``: ``None`` (default: tables are memory-mapped, filters and indexes kept in
      memory once read) or a memory bound in bytes: ONE LRU cache (:mod:`.cache`) holds the data
      blocks, index blocks and filters of every table (RocksDB's block cache with
      ``cache_index_and_filter_blocks``); tables are read with ``os.pread``, nothing is mapped
      (by path: ``fs`` must be one of real files, as :class:`~.fs.RealFS` and its subclasses).
      ``db.stats()["block_cache"]`` gives hits, misses and bytes per kind.
    * ``pin_top_level_filters`` (``True``): with ``cache_bytes``, the filters and indexes of L0
      tables (probed by every read) are pinned in the cache -- counted against its bound, never
      evicted -- and checked inside the probe kernel (RocksDB's
      ``pin_l0_filter_and_index_blocks_in_cache``) while the pinned tables take at most half
      the cache (later L0 tables are cached unpinned); ``False``: every filter may be evicted.
    * ``max_open_files`` (1000, LevelDB's): with ``cache_bytes``, at most this many table files
      are open at once (least recently used closed first, reopened on demand; :mod:`.table_cache`).
      The default route does not honour it: each live table stays memory-mapped, and Python
      3.11's ``mmap.mmap`` keeps a ``dup`` of the file's descriptor for the map's whole life (no
      way to drop it before 3.13's ``trackfd=False``), so an open store holds one descriptor per
      live table (62 for a 1M-key store, measured) whatever this says; the lookup kernel reads
      tables through their maps' addresses, so a map is never closed while its version lives. A
      store with more tables than the process may open files needs ``cache_bytes``.
    * ``filter_file`` (``True``): ``close`` keeps a copy of every table's filter block in one file
      of the store (``FILTERS``, :mod:`.filter_file`; written when the set of tables changed), so
      the next open maps no table file: a table is opened on the first read its filter lets
      through (a key every filter rejects opens none), as LevelDB's table cache opens a table on
      its first read. A copy is used only while its table file is the one it was made from
      (size, inode, modification time); else the table is opened at once. Default route only
      (not with ``cache_bytes``, not read-only). ``False``: no filter file is written or read;
      every table is opened (mapped, its index read) by ``DB.open``.
    * ``store_filter`` (``True``): one filter over the keys of every table of the store
      (:mod:`.store_filter`), checked first by a point lookup: a key it rejects is missing at
      once, one filter line whatever the shape of the levels (else one line per candidate table).
      Kept up by flushes, rebuilt bigger in the flush thread as the store grows, saved at close
      in the file ``STOREFILTER`` (derived: a missing, damaged or stale one is rebuilt, never
      trusted). ~1.5 bytes a key. Not for a read-only open. ``False``: none is kept or read.
    * ``partitioned_filters``: instead of one filter per table, one per
      ``filter_partition_blocks`` (16) data blocks, each read on demand (and kept) by the first
      lookup that needs it, found through a small partition index -- for tables too big to keep
      every filter in memory. The probe kernel finds the partition and checks it itself once
      it is read (the same families as above).
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
    * ``prefix_extractor``: ``FixedPrefix(n)``, ``CappedPrefix(n)`` or a callable (:mod:`.prefix`):
      tables also keep a filter (the level's spec) over their keys' prefixes, and
      ``iterator(prefix=p)`` skips every table whose prefix filter rules ``p`` out.
    * ``whole_key_filtering``: build the whole-key filters ``get`` uses (``False``: prefix
      filters only, RocksDB's option; then every ``get`` reads the tables in its key range).
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
    max_flush_level: int = 2
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
    prefix_extractor: Any = None
    whole_key_filtering: bool = True
    cache_bytes: int | None = None
    pin_top_level_filters: bool = True
    max_open_files: int = 1000
    filter_file: bool = True
    store_filter: bool = True

    def with_fields(self, fields: dict) -> "Options":
        """A copy with ``fields`` (name -> value) replaced (``self`` when empty); an unknown
        name raises :class:`InvalidArgument` listing the fields."""
        if not fields:
            return self
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise InvalidArgument(f"unknown store option(s) {', '.join(unknown)}; the fields of "
                                  f"bloomdb.lsm.Options are: {', '.join(sorted(known))}")
        return replace(self, **fields)

    def validated(self) -> "Options":
        """A checked copy; raises :class:`InvalidArgument` naming the bad field (and, for a filter
        spec, the spec and why): every field is checked here, so a store never accepts options
        that fail later (the first flush used to hit a bad filter parameter). Each filter spec is
        built once over a few keys exactly as a table builds it and read back
        (:func:`.sstable.builder.filter_spec_problem`): a family the store cannot use is refused
        here. Cost: one tiny filter build per distinct spec."""
        for name in ("block_size", "memtable_bytes", "table_bytes", "level1_bytes"):
            _check_int(self, name, 64)
        _check_int(self, "restart_interval", 1, 1024)
        _check_int(self, "level0_trigger", 1)
        _check_int(self, "level0_stop", self.level0_trigger)
        _check_int(self, "filter_partition_blocks", 1)
        _check_int(self, "wal_buffer_bytes", 0)
        _check_int(self, "block_cache_bytes", 0)
        _check_int(self, "max_open_files", 1)
        _check_int(self, "max_flush_level", 0, MAX_LEVELS - 2)
        if self.cache_bytes is not None:
            _check_int(self, "cache_bytes", 0)
        r = self.level_ratio
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 1 < r < float("inf"):
            raise InvalidArgument(f"Options.level_ratio must be a finite number > 1, got {r!r}")
        for name in ("optimize_filters_for_hits", "partitioned_filters", "paranoid_checks",
                     "create_if_missing", "error_if_exists", "background_compaction", "whole_key_filtering",
                     "pin_top_level_filters", "filter_file", "store_filter"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgument(f"Options.{name} must be True or False, got {getattr(self, name)!r}")
        _check_compression(self.compression)
        if not isinstance(self.filter_per_level, dict):
            raise InvalidArgument(f"Options.filter_per_level must be a dict {{level: spec or None}}, got {self.filter_per_level!r}")
        for lvl in self.filter_per_level:
            if isinstance(lvl, bool) or not isinstance(lvl, int) or not 0 <= lvl < MAX_LEVELS:
                raise InvalidArgument(f"Options.filter_per_level keys are levels 0..{MAX_LEVELS - 1}, got {lvl!r}")
        fields = [("Options.filter", self.filter)]
        fields += [(f"Options.filter_per_level[{lvl}]", spec) for lvl, spec in self.filter_per_level.items()]
        for where, spec in fields:
            _check_filter_spec(where, spec)
        if self.fs is not None and not all(callable(getattr(self.fs, m, None)) for m in _FS_METHODS):
            raise InvalidArgument(f"Options.fs must provide {', '.join(_FS_METHODS)} (see bloomdb.lsm.fs)")
        from .prefix import extractor

        return replace(self, filter_per_level=dict(self.filter_per_level), prefix_extractor=extractor(self.prefix_extractor))

    def partition_blocks(self) -> int:
        """Data blocks per filter partition (0: one filter per table)."""
        return self.filter_partition_blocks if self.partitioned_filters else 0

    def filter_for(self, level: int, last_level: bool) -> str | None:
        """The filter spec for a table written to ``level`` (``last_level``: deepest with data)."""
        if last_level and self.optimize_filters_for_hits and level > 0:
            return None
        return self.filter_per_level.get(level, self.filter)
