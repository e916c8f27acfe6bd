"""``db.get_property(name)`` and ``db.approximate_size(start, end)`` (LevelDB's ``GetProperty``
and ``GetApproximateSizes``, with plyvel's names).

Properties (``bloomdb.`` names; ``leveldb.``/``rocksdb.`` prefixes are accepted for code ported
from plyvel or rocksdict):

* ``bloomdb.stats``: a text table per level (files, size, entries, deletions, filter bytes) and
  the read counters of :meth:`DB.stats`;
* ``bloomdb.num-files-at-level<N>``; ``bloomdb.sstables`` (every table, per level);
* ``bloomdb.estimate-num-keys``: entries in the tables and memtables (overwritten and deleted
  versions counted, as RocksDB does);
* ``bloomdb.filter-memory-bytes``: bytes of the filters read into memory so far;
  ``bloomdb.filter-bytes``: bytes of every table's filter block;
* ``bloomdb.total-sst-files-size``, ``bloomdb.cur-size-all-mem-tables``,
  ``bloomdb.num-entries-all-mem-tables``, ``bloomdb.approximate-memory-usage``
  (memtables, loaded filters, cached blocks);
* ``bloomdb.block-cache-usage``, ``bloomdb.block-cache-capacity``,
  ``bloomdb.block-cache-pinned-usage`` (RocksDB's names): bytes the store's cache holds, may
  hold, holds pinned (``Options(cache_bytes=)``, :mod:`.cache`; ``None`` without it; the
  default route's cache of decompressed blocks reports its usage).

An unknown name gives ``None`` (plyvel's behaviour). The answer is ``str`` for a ``str`` name and
``bytes`` for a ``bytes`` name (plyvel takes and returns bytes). Cost: O(tables).
"""

from __future__ import annotations

from bisect import bisect_left

from ..errors import InvalidArgument
from .options import MAX_LEVELS

PREFIXES = ("bloomdb.", "leveldb.", "rocksdb.")


def get(db, name):
    """The property ``name`` of ``db`` (see the module docstring), or ``None``."""
    if isinstance(name, (bytes, bytearray)):
        value = get(db, bytes(name).decode("utf-8", "replace"))
        return None if value is None else value.encode()
    if not isinstance(name, str):
        raise InvalidArgument(f"a property name is a str or bytes, not {type(name).__name__}")
    short = next((name[len(p):] for p in PREFIXES if name.startswith(p)), None)
    if short is None:
        return None
    mem, imm, ver = db._state  # a closed store raises StoreClosed here
    mems = [m for m in (mem, imm) if m is not None]
    if short.startswith("num-files-at-level"):
        n = short[len("num-files-at-level"):]
        if not n.isdigit() or int(n) >= MAX_LEVELS:
            return None
        return str(len(ver.levels[int(n)]))
    refs = ver.all_refs()
    simple = {
        "estimate-num-keys": lambda: sum(r.table.entries for r in refs) + sum(len(m) for m in mems),
        "filter-memory-bytes": lambda: _filter_memory(db._cache, refs),
        "filter-bytes": lambda: sum(r.table.filter_bytes for r in refs),
        "total-sst-files-size": lambda: sum(r.info.file_size for r in refs),
        "cur-size-all-mem-tables": lambda: sum(m.bytes for m in mems),
        "num-entries-all-mem-tables": lambda: sum(len(m) for m in mems),
        "approximate-memory-usage": lambda: (sum(m.bytes for m in mems) + (db._cache.bytes if db._cache else 0)
                                             + (0 if getattr(db._cache, "holds_tables", False) else _filter_memory(None, refs))),
    }
    cache = db._cache
    if short.startswith("block-cache-") and cache is not None:
        field = {"usage": "bytes", "capacity": "capacity", "pinned-usage": "pinned_bytes"}.get(short[12:])
        return None if field is None else str(getattr(cache, field, 0))
    if short in simple:
        return str(simple[short]())
    if short == "stats":
        return _stats_text(db, ver)
    if short == "sstables":
        return _sstables_text(ver)
    return None


def _filter_memory(cache, refs) -> int:
    """Bytes of filters in memory: the filter blocks read so far, or, with ``cache_bytes``, the
    filters the cache holds now."""
    if getattr(cache, "holds_tables", False):
        return cache.stats()["filter"]["bytes"]
    return sum(r.table.filter_bytes for r in refs if r.table.filter_loaded)


def _stats_text(db, ver) -> str:
    """LevelDB's ``leveldb.stats`` table, with the columns this store knows."""
    lines = ["                          Tables",
             "Level  Files   Size(MB)     Entries  Deletions  Filter(KB)",
             "-" * 58]
    for i, level in enumerate(ver.levels):
        if not level:
            continue
        size = sum(r.info.file_size for r in level) / 1048576
        entries = sum(r.table.entries for r in level)
        dels = sum(r.table.deletions for r in level)
        fkb = sum(r.table.filter_bytes for r in level) / 1024
        lines.append(f"{i:5d} {len(level):6d} {size:10.2f} {entries:11d} {dels:10d} {fkb:11.1f}")
    st = db.stats()
    lines.append("")
    lines.append(f"filter checks {st['filter_checks']}, rejected {st['filter_useful']}, "
                 f"passed {st['filter_positive']}, found {st['true_positive']}")
    lines.append(f"data blocks read {st['data_blocks_read']}, block cache hits {st['block_cache_hits']}, "
                 f"misses {st['block_cache_misses']}")
    for kind, c in ((k, st["block_cache"][k]) for k in ("data", "index", "filter") if "block_cache" in st):
        lines.append(f"block cache {kind}: hits {c['hits']}, misses {c['misses']}, bytes {c['bytes']}")
    if "block_cache" in st:
        bc = st["block_cache"]
        lines.append(f"block cache usage {bc['usage']} of {bc['capacity']} bytes, pinned {bc['pinned_bytes']}, "
                     f"open files {bc['open_files']}")
    lines.append(f"compactions {st['compactions']}, write amplification {st['write_amplification']:.2f}, "
                 f"memtable entries {st['memtable_entries']}, last sequence {st['last_sequence']}")
    return "\n".join(lines) + "\n"


def _sstables_text(ver) -> str:
    lines = []
    for i, level in enumerate(ver.levels):
        lines.append(f"--- level {i} ---")
        for r in level:
            lines.append(f" {r.number}:{r.info.file_size}[{r.info.min_key!r} .. {r.info.max_key!r}] "
                         f"seq {r.info.min_seq}..{r.info.max_seq}")
    return "\n".join(lines) + "\n"


def approximate_size(db, start, end) -> int:
    """Bytes of table files that hold keys in ``[start, end)`` (LevelDB's
    ``GetApproximateSizes``: from the tables' indexes, data not yet flushed is not counted;
    ``None`` = unbounded). Cost: one binary search per bound per overlapping table."""
    _, _, ver = db._state
    total = 0
    for r in ver.all_refs():
        t = r.table
        a = 0 if start is None else _offset(t, start)
        b = r.info.file_size if end is None else _offset(t, end)
        total += max(0, b - a)
    return total


def _offset(t, key: bytes) -> int:
    """Approximate file offset where ``key`` would be in table ``t`` (LevelDB's
    ``ApproximateOffsetOf``): the start of the block that would hold it; past the last key, the
    file's size (filter, index and footer count as the end)."""
    i = bisect_left(t.last_keys, key)
    if i >= len(t.offsets):
        return t.file_size
    return t.offsets[i]
