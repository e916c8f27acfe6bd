"""The store's memory bound: ONE byte-bounded LRU cache holding the data blocks, index blocks and
filters of every table (RocksDB's block cache with ``cache_index_and_filter_blocks=True``), used
when the store is opened with ``Options(cache_bytes=N)``.

* :class:`Cache`: entries ``key -> value`` with a size in bytes and a kind (``"data"``,
  ``"index"``, ``"filter"``); one lock (readers run from many threads, the compaction beside
  them). :meth:`Cache.insert` evicts the least recently used entries until the bytes held fit
  the capacity; an entry larger than the whole capacity is not kept (the caller uses it once).
  *Pinned* entries (:meth:`Cache.pin`: the filters and indexes of L0 tables with
  ``Options(pin_top_level_filters=True)``) count against the capacity but are never evicted;
  they go when their table is dropped (:meth:`Cache.drop_table`). A table pins only while the
  bytes promised to pinned tables stay within half the capacity (:meth:`Cache.may_pin`; a table
  that would pass it is cached unpinned), so pins never push the bytes held past the bound. A
  table pinned at L0 stays pinned if a trivial move takes it down a level (as in RocksDB).
* hits, misses and bytes held per kind: :meth:`Cache.stats` (``db.stats()["block_cache"]``).
* :func:`make_cache` picks the store's read route at open: this cache and its table files
  (:class:`.table_cache.TableFiles`, at most ``max_open_files`` descriptors) for tables read with
  ``os.pread`` (:class:`.sstable.cached_reader.CachedTable`), or, ``cache_bytes=None``, the
  default memory-mapped route with its small cache of decompressed blocks.

Cost: one lock round trip and one dict operation per lookup; eviction O(1) per entry evicted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from .sstable.reader import BlockCache
from .table_cache import TableFiles

KINDS = ("data", "index", "filter")


class Cache:
    """A byte-bounded LRU of table blocks and filters, shared by every table of one store."""

    holds_tables = True  #: tables opened with this cache read through it (:func:`open_table`)

    def __init__(self, capacity: int, files: TableFiles | None = None, pin_top_level: bool = True):
        self.capacity = capacity
        self.files = files if files is not None else TableFiles(1000)
        self.pin_top_level = pin_top_level
        self._lru: OrderedDict = OrderedDict()  # key -> (value, nbytes, kind)
        self._pinned: dict = {}  # key -> (value, nbytes, kind)
        self._lock = threading.Lock()
        self._dead: list[int] = []  # tables dropped (appended by finalizers, handled under the lock)
        self._promises: dict[int, int] = {}  # table number -> bytes it may pin (may_pin)
        self._promised = 0
        self._hits = dict.fromkeys(KINDS, 0)
        self._misses = dict.fromkeys(KINDS, 0)
        self._bytes = dict.fromkeys(KINDS, 0)
        self.usage = 0  # bytes held (pinned included)
        self.pinned_bytes = 0
        self.evictions = 0
        self.peak = 0  # the most bytes ever held after an insertion's evictions

    # -- lookups ------------------------------------------------------------------------------
    def get(self, key, kind: str, count: bool = True):
        """The value cached under ``key`` (made most recently used), or ``None``. ``count``:
        the lookup counts as a hit or a miss of ``kind``."""
        with self._lock:
            e = self._pinned.get(key)
            if e is None:
                e = self._lru.get(key)
                if e is not None:
                    self._lru.move_to_end(key)
            if count:
                if e is None:
                    self._misses[kind] += 1
                else:
                    self._hits[kind] += 1
            return None if e is None else e[0]

    def insert(self, key, value, nbytes: int, kind: str):
        """Keep ``value`` (``nbytes`` long) under ``key``, evicting least recently used entries
        until the bytes held fit the capacity; returns ``value``. Not kept when larger than the
        capacity, or when ``key`` is held already (two threads that missed the same block)."""
        with self._lock:
            self._reap()
            if nbytes > self.capacity or key in self._lru or key in self._pinned:
                return value
            self._lru[key] = (value, nbytes, kind)
            self._add(kind, nbytes)
            self._evict()
        return value

    def pin(self, key, value, nbytes: int, kind: str):
        """Keep ``value`` under ``key`` until its table is dropped (never evicted; it counts
        against the capacity, so unpinned entries are evicted to make room). Returns ``value``."""
        with self._lock:
            self._reap()
            if key in self._pinned:
                return self._pinned[key][0]
            old = self._lru.pop(key, None)
            if old is not None:
                self._add(old[2], -old[1])
            self._pinned[key] = (value, nbytes, kind)
            self._add(kind, nbytes)
            self.pinned_bytes += nbytes
            self._evict()
        return value

    def _evict(self) -> None:
        """Evict least recently used entries until the bytes held fit (pinned ones stay)."""
        lru = self._lru
        while self.usage > self.capacity and lru:
            _, (_, b, k) = lru.popitem(last=False)
            self._add(k, -b)
            self.evictions += 1
        self.peak = max(self.peak, self.usage)

    def may_pin(self, number: int, nbytes: int) -> bool:
        """Whether table ``number``, whose pinned entries will take about ``nbytes``, may pin
        them (the bytes are then promised to it until it is dropped): pinned entries may take at
        most half the capacity, so they never push the cache past its bound (later tables are
        cached unpinned)."""
        with self._lock:
            self._reap()
            if self._promised + nbytes > self.capacity // 2:
                return False
            self._promises[number] = nbytes
            self._promised += nbytes
            return True

    def close(self) -> None:
        """The store is closing: drop every entry and close the table files not in use."""
        with self._lock:
            self._reap()
            self._lru.clear()
            self._pinned.clear()
            self._promises.clear()
            self._promised = 0
            self._bytes = dict.fromkeys(KINDS, 0)
            self.usage = self.pinned_bytes = 0
        self.files.close_all()

    def is_pinned(self, key) -> bool:
        with self._lock:
            return key in self._pinned

    def drop_table(self, number: int) -> None:
        """Forget every entry of table ``number`` (its reader is gone). Safe from a finalizer:
        the work is done under the lock by the next cache call (or :meth:`reap`)."""
        self._dead.append(number)

    def reap(self) -> None:
        """Drop the entries of the tables :meth:`drop_table` named since the last call."""
        with self._lock:
            self._reap()

    def _reap(self) -> None:
        if not self._dead:
            return
        dead = set()
        while self._dead:
            dead.add(self._dead.pop())
        for n in dead:
            self._promised -= self._promises.pop(n, 0)
        for d in (self._lru, self._pinned):
            for key in [k for k in d if k[0] in dead]:
                _, b, k = d.pop(key)
                self._add(k, -b)
                if d is self._pinned:
                    self.pinned_bytes -= b

    def _add(self, kind: str, nbytes: int) -> None:
        self._bytes[kind] += nbytes
        self.usage += nbytes

    # -- reporting ----------------------------------------------------------------------------
    @property
    def bytes(self) -> int:
        """Bytes held now (pinned included)."""
        return self.usage

    @property
    def hits(self) -> int:
        return sum(self._hits.values())

    @property
    def misses(self) -> int:
        return sum(self._misses.values())

    def stats(self) -> dict:
        """``capacity``, ``usage`` (bytes held), ``pinned_bytes``, ``peak_usage`` (the most ever
        held), ``evictions``, ``entries``,
        ``open_files`` and per kind (``data``, ``index``, ``filter``) ``{"hits", "misses",
        "bytes"}``: lookups answered from the cache, lookups that read the file, bytes held."""
        with self._lock:
            self._reap()
            out = {"capacity": self.capacity, "usage": self.usage, "pinned_bytes": self.pinned_bytes,
                   "peak_usage": self.peak,
                   "evictions": self.evictions, "entries": len(self._lru) + len(self._pinned),
                   "open_files": self.files.open_count}
            for k in KINDS:
                out[k] = {"hits": self._hits[k], "misses": self._misses[k], "bytes": self._bytes[k]}
        return out


def make_cache(options, read_only: bool = False):
    """The read route of a store opened with ``options``: a :class:`Cache` (``cache_bytes`` set:
    every table read through it with ``os.pread``), the default route's cache of decompressed
    blocks (compressed tables), or ``None``. ``read_only``: the table files stay open while their
    tables are live (``max_open_files`` is not applied): a writer in another process may delete
    a file this process still reads, and a closed one could not be opened again."""
    if options.cache_bytes is not None:
        files = TableFiles(None if read_only else options.max_open_files)
        return Cache(options.cache_bytes, files, options.pin_top_level_filters)
    if options.compression and options.block_cache_bytes:
        return BlockCache(options.block_cache_bytes)
    return None


def cache_stats(cache) -> dict:
    """``{"block_cache": Cache.stats()}`` for :meth:`DB.stats` (empty on the default route)."""
    return {"block_cache": cache.stats()} if isinstance(cache, Cache) else {}
