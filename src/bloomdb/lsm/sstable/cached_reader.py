"""A table read through the store's byte-bounded cache (``Options(cache_bytes=N)``): the cached
read route, chosen when the store opens (:func:`open_table`).

A :class:`CachedTable` answers like a :class:`~.reader.Table` but maps nothing: every block is
read with ``os.pread`` through the cache's table files (``cache.files``, at most
``max_open_files`` descriptors), checked (CRC32C) on every read from the file, and kept in the
cache (``cache.get``/``insert``/``pin``: :class:`bloomdb.lsm.cache.Cache`):

* data blocks: ``(number, 0, block)``, kind ``"data"``;
* the index block (the kernel's index array): ``(number, 1, 0)``, kind ``"index"`` -- checked
  at open, then read again whenever it was evicted;
* filters: ``(number, 2, partition or -1)``, kind ``"filter"``.

Filters and the probe directory (:mod:`..probe.directory`): a table whose filter is not pinned
hands the directory a :class:`CachedFilter` -- a stand-in with no probe descriptor, so the
directory never copies its bits and asks it in Python; it fetches the real filter from the
cache, reading the filter block again (charged to the cache) when it was evicted. An unreadable
filter answers "may contain" (the table is then read: never a false "missing"). A *pinned*
table (L0 with ``pin_top_level_filters``) keeps its filter and index pinned in the cache and
hands the directory the real filter, which the probe kernel checks itself (charged twice, which
is now conservative: the directory points at the filter in place instead of copying it).

Scans and compactions (:meth:`CachedTable.decode_arrays` over several blocks) read their blocks
with one ``pread`` and do not fill the cache (RocksDB's ``fill_cache=false``); one block (an
iterator's seek) goes through the cache.

Held outside the cache per table: the footer handles, the meta block (key range, range
tombstones, the prefix filter if any), a partition index, one byte per data block.
Cost per point read: two cache lookups (index, block) and, on a miss, one ``pread`` and one
CRC32C of the block.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ... import filters
from ...errors import CorruptionError
from . import _table_kernels as TK
from .block import TRAILER, unframe
from .builder import PARTITION_MAGIC
from .footer import FOOTER_SIZE, decode_footer, decode_meta
from .reader import Table, decode_groups, parse_index_block

#: Bytes charged per cache entry beyond its payload (the Python objects and the LRU's links).
ENTRY_OVERHEAD = 200
DATA, INDEX, FILTER = 0, 1, 2
_EMPTY = np.zeros(0, np.uint8)


def open_table(fs, path: str, number: int, cache=None, level: int = 0):
    """A reader of table ``path``: a :class:`CachedTable` when ``cache`` is the store's
    byte-bounded cache (pinned when ``level`` is 0 and the cache pins the top level), else a
    memory-mapped :class:`~.reader.Table` (``cache``: its small block cache or ``None``)."""
    if getattr(cache, "holds_tables", False):
        return CachedTable(path, number, cache, pin=cache.pin_top_level and level == 0)
    return Table(fs, path, number, cache)


class CachedFilter:
    """A table's filter (or one partition's) as the cache holds it: asked through the filter's
    public contract, read again when it was evicted. No probe descriptor: the probe directory
    asks it in Python instead of copying its bits."""

    __slots__ = ("_table", "_key", "_off", "_size")

    def __init__(self, table: "CachedTable", key, off: int, size: int):
        self._table = weakref.proxy(table)  # the table holds this stand-in: no reference cycle
        self._key = key
        self._off = off
        self._size = size

    def probe_descriptor(self):
        return None

    def might_contain(self, key) -> bool:
        f = self._table._load_filter(self._key, self._off, self._size)
        return True if f is None else bool(f.might_contain(key))

    def might_contain_many(self, keys) -> np.ndarray:
        f = self._table._load_filter(self._key, self._off, self._size)
        return np.ones(len(keys), np.bool_) if f is None else f.might_contain_many(keys)


def _dropped(cache, number: int, path: str, fs=None) -> None:
    """A table's reader is gone: its cache entries and its descriptor go (at the next call);
    ``fs``: its file is obsolete and is deleted now."""
    cache.drop_table(number)
    cache.files.forget(path)
    if fs is not None:
        fs.remove(path)


class CachedTable(Table):
    """A read-only table read with ``pread`` through ``cache`` (see the module docstring).
    Thread-safe like :class:`~.reader.Table`. Raises CorruptionError at open for a damaged
    footer, meta or index block."""

    def __init__(self, path: str, number: int, cache, pin: bool = False):
        self.path = path
        self.number = number
        self._cache = cache
        self._files = cache.files
        self.file_size = size = self._files.size(path)
        tail = self._files.pread(path, max(0, size - FOOTER_SIZE), FOOTER_SIZE)
        h = decode_footer(tail, path)
        self._hs = (h.filter_off, h.filter_size, h.meta_off, h.meta_size, h.index_off, h.index_size)
        self._finalizer = weakref.finalize(self, _dropped, cache, number, path)
        # pinned: its filter (charged twice: conservative since the probe directory stopped copying it) and its parsed index
        self.pinned = pin and cache.may_pin(number, 2 * (h.filter_size + h.index_size + 2 * ENTRY_OVERHEAD))
        self._meta = decode_meta(self._read_block(h.meta_off, h.meta_size, "meta"), path)
        self._facts = None  # Table's entries, deletions, range_dels: from the meta block
        self._arr = _EMPTY  # no mapped file: Table.get's kernel hands every block to block()
        self._checked = np.zeros(self.meta.num_blocks, np.uint8)  # never set: every read is checked
        self._filter = None
        self._filter_loaded = False
        self.filter_damaged = False
        self.partitions = None
        self._prefix = None
        self._lock = threading.Lock()
        self._index_array(False)  # checked at open, like Table

    def remove_when_dropped(self, fs) -> None:
        """The table left the store: delete its file (through ``fs``) once this reader is
        dropped -- an iterator or a snapshot may still read it, reopening the file."""
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _dropped, self._cache, self.number, self.path, fs)

    # -- reading through the cache ------------------------------------------------------------
    def _read_block(self, off: int, size: int, what: str) -> bytes:
        """Block ``[off, off + size)`` read from the file and checked: its bytes, decompressed."""
        buf = self._files.pread(self.path, off, size + TRAILER) if off >= 0 and size >= 0 else b""
        if len(buf) != size + TRAILER:
            raise CorruptionError(f"{what} block at {off} (+{size}) lies outside the file", self.path)
        try:
            _, data = unframe(buf, 0, size, self.path, what)
        except CorruptionError as e:
            raise CorruptionError(f"{what} block at offset {off} is damaged ({e})", self.path) from None
        return buf[:size] if data is None else data

    def _keep(self, key, value, nbytes: int, kind: str, pin: bool = False):
        put = self._cache.pin if pin else self._cache.insert
        return put(key, value, nbytes + ENTRY_OVERHEAD, kind)

    def _index_array(self, count: bool = True) -> np.ndarray:
        key = (self.number, INDEX, 0)
        idx = self._cache.get(key, "index", count)
        if idx is None:
            h = self._handles
            idx = parse_index_block(self._read_block(h.index_off, h.index_size, "index"), self.path, self.meta)
            idx = self._keep(key, idx, idx.nbytes, "index", self.pinned)
        return idx

    @property
    def _index(self) -> np.ndarray:  # what Table.get searches
        return self._index_array()

    def _entries(self) -> np.ndarray:
        idx = self._index_array(False)
        return idx[1 : 1 + 6 * int(idx[0])].reshape(-1, 6)

    @property
    def offsets(self) -> np.ndarray:
        return self._entries()[:, 4]

    @property
    def sizes(self) -> np.ndarray:
        return self._entries()[:, 5]

    @property
    def last_keys(self) -> list[bytes]:
        """Each data block's last key (made from the cached index on every call: not kept)."""
        e = self._entries()
        raw = self._index_array(False).view(np.uint8)
        return [raw[o : o + n].tobytes() for o, n in zip(e[:, 2].tolist(), e[:, 3].tolist())]

    def first_block_for(self, key: bytes) -> int:
        return int(TK.table_get(_EMPTY, self._index_array(False), self._checked, key, 0)[1])

    def num_blocks(self) -> int:
        return self.meta.num_blocks

    def block(self, i: int):
        """``(array, bytes, 0, size)`` of data block ``i``, from the cache or read and kept."""
        key = (self.number, DATA, i)
        hit = self._cache.get(key, "data")
        if hit is None:
            e = self._entries()[i]
            data = self._read_block(int(e[4]), int(e[5]), "data")
            hit = self._keep(key, (np.frombuffer(data, np.uint8), data), len(data), "data")
        return hit[0], hit[1], 0, len(hit[1])

    def _check_raw(self, first: int, last: int) -> bool:
        return False  # nothing is read in place: decode_arrays reads (and checks) the blocks

    def decode_arrays(self, first: int = 0, last: int | None = None):
        """Entries of blocks ``first..last`` (default: all) packed, as :meth:`Table.decode_arrays`.
        One block goes through the cache; more are read with one ``pread``, checked, and not
        kept (a scan or a compaction must not flush the cache)."""
        last = self.num_blocks() - 1 if last is None else last
        if first == last:
            return super().decode_arrays(first, last)
        e = self._entries()[first : last + 1]
        base = int(e[0, 4])
        n = int(e[-1, 4] + e[-1, 5]) + TRAILER - base
        buf = self._files.pread(self.path, base, n)
        arr = np.frombuffer(buf, np.uint8)
        offs, sizes = e[:, 4] - base, e[:, 5].copy()
        views = []
        for o, z in zip(offs.tolist(), sizes.tolist()):
            if o < 0 or o + z + TRAILER > len(buf):
                raise CorruptionError(f"data block at {o + base} (+{z}) lies outside the file", self.path)
            _, data = unframe(buf, o, z, self.path, "data")
            views.append(None if data is None else np.frombuffer(data, np.uint8))
        if all(v is None for v in views):
            return decode_groups([(arr, offs, sizes)], self.path)
        one = np.zeros(1, np.int64)
        groups = [(arr, offs[j : j + 1], sizes[j : j + 1]) if v is None else (v, one, np.array([v.shape[0]], np.int64))
                  for j, v in enumerate(views)]
        return decode_groups(groups, self.path)

    # -- filters ------------------------------------------------------------------------------
    @property
    def filter_loaded(self) -> bool:
        """Unpinned: always (the directory gets the stand-in, reads nothing); pinned: once read."""
        return self._filter_loaded or not self.pinned

    def _read_filter(self) -> None:
        """:meth:`filter`'s first call: the real filter (pinned), a :class:`CachedFilter` (not
        pinned: nothing read but the block's first 4 bytes), or the partitions' index."""
        key = (self.number, FILTER, -1)
        h = self._handles
        if self._files.pread(self.path, h.filter_off, 4) == PARTITION_MAGIC:  # filter blocks are stored raw
            self._parse_partitions(self._read_block(h.filter_off, h.filter_size, "filter"))
        elif self.pinned:
            self._filter = self._load_filter(key, h.filter_off, h.filter_size)
        else:
            self._filter = CachedFilter(self, key, h.filter_off, h.filter_size)

    def _load_filter(self, key, off: int, size: int):
        """The filter block at ``off`` from the cache, or read, kept and returned (``None``:
        damaged -- remembered, so it is not read again while cached)."""
        f = self._cache.get(key, "filter")
        if f is None:
            try:
                fb = self._read_block(off, size, "filter")
                f = filters.from_bytes(fb)
            except Exception:  # noqa: BLE001 - a damaged filter fails open
                self.filter_damaged = True
                f = False
            pin = self.pinned and key[2] == -1  # a whole-table filter: it and its directory copy
            f = self._keep(key, f, size * (2 if pin else 1), "filter", pin)
        return f if f is not False else None

    def loaded_partition(self, i: int):
        return self.partition_filter(i)

    def partition_filter(self, i: int) -> CachedFilter:
        """Partition ``i``'s filter as the cache holds it (never pinned: a pinned table pins its
        index and partition index only, like RocksDB's ``pin_top_level_index_and_filter``)."""
        _, offs, sizes = self.partitions
        return CachedFilter(self, (self.number, FILTER, i), offs[i], sizes[i])

    @property
    def filter_memory(self) -> int:
        return 0  # the cache holds (and counts) the filters

    @property
    def index_memory(self) -> int:
        return self._checked.nbytes  # the index itself is in the cache
