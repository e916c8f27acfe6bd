"""A table not opened yet: its file is opened on the first read that needs more than its filter
(LevelDB's table cache opens a table on its first read, not when the store opens).

A :class:`LazyTable` stands for a table whose filter block has a copy in the store's filter file
(:mod:`bloomdb.lsm.filter_file`), checked against the table file's identity (inode, size,
modification time) when the store opened. It answers what the store asks of every table at open
and what a lookup's filter check needs -- number, path, size, entries, deletions, whether it holds
range tombstones, the filter block (a copy: ``filter_buffer``, ``filter_block``) -- without
touching the table file: the probe kernel reads that copy (CRC32C checked) on the table's first
lookup, so a key the filter rejects never opens the table. Anything else (a data block, the
index, the meta block, a scan, a compaction) opens the table (:meth:`real`: the memory-mapped
:class:`~.reader.Table`, with its checks: a damaged footer, meta or index block raises
:class:`~bloomdb.errors.CorruptionError` naming the file then) and is answered by it; attributes
this class does not define are the opened table's (``__getattr__``).

The probe layer keeps its words on this object (the attributes named in ``__init__``), as on a
``Table``. After the table is opened, a directory built before reads it through Python until it
is pointed at the opened file (:meth:`bloomdb.lsm.version.Version.wire`).

Cost: nothing at open beyond this object; opening on first need is a ``Table`` open (one map and
one kernel call).
"""

from __future__ import annotations

import threading

from ...errors import CorruptionError
from .reader import Table

#: held while a lazy table opens its file (once per table): one lock for every table
_OPENING = threading.Lock()


class LazyTable:
    """Table ``number`` at ``path`` (``file_size`` bytes), opened on first need (see the module).
    ``facts``: ``(entries, deletions, has range tombstones, inode, mtime in ns)`` (the file's
    identity as checked at open); ``fbuf``: the array holding a copy
    of its filter block at ``[foff, foff + fsize)`` followed by the block's trailer."""

    lazy = True
    partitions = None  #: only whole-table filters are copied to the filter file
    filter_copy_due = False  #: its filter is read from the filter file (see ``Table.filter_copy_due``)

    def __init__(self, fs, path: str, number: int, cache, file_size: int, facts, fbuf, foff: int, fsize: int):
        self.path = path
        self.number = number
        self.file_size = file_size
        self._fs = fs
        self._cache = cache
        self._real = None
        self._facts = facts
        self.filter_buffer = fbuf
        self._fblock = (foff, fsize)
        # the probe layer's words (see Table.__init__), named here in Table's order
        self.seek_budget = self.probe_slot_words = self.probe_slot_index = None
        self.probe_record_words = self.probe_record_array = None
        self.probe_filter_words = None

    def real(self) -> Table:
        """The opened table (opened now on the first call). Raises CorruptionError naming the file
        (damaged footer, meta or index block, a size other than the manifest's) or OSError."""
        t = self._real
        if t is None:
            with _OPENING:
                t = self._real
                if t is None:
                    t = Table(self._fs, self.path, self.number, self._cache)
                    if t.file_size != self.file_size:
                        raise CorruptionError(f"size {t.file_size} differs from the manifest's {self.file_size}",
                                              self.path)
                    self._real = t
        return t

    @property
    def opened(self) -> bool:
        return self._real is not None

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_real", "_fs", "_cache", "_facts", "_fblock"):
            raise AttributeError(name)
        return getattr(self.real(), name)

    # -- what the store asks without opening the file ------------------------------------------
    @property
    def entries(self) -> int:
        return self._facts[0]

    @property
    def deletions(self) -> int:
        return self._facts[1]

    @property
    def range_dels(self) -> tuple:
        return self.real().range_dels if self._facts[2] else ()

    @property
    def filter_bytes(self) -> int:
        return self._fblock[1]

    @property
    def filter_block(self) -> tuple[int, int]:
        """``(offset, size)`` of the filter block's copy in :attr:`filter_buffer`."""
        return self._fblock

    @property
    def filter_loaded(self) -> bool:
        fw = self.probe_filter_words
        t = self._real
        return (fw is not None and fw[0] != 0) or (t is not None and t.filter_loaded)

    @property
    def filter_memory(self) -> int:
        fw = self.probe_filter_words
        if fw is not None and fw[0] != 0:
            return int(fw[-1])
        t = self._real
        return 0 if t is None else t.filter_memory

    @property
    def index_memory(self) -> int:
        t = self._real
        return 0 if t is None else t.index_memory

    @property
    def filter_damaged(self) -> bool:
        t = self._real
        return False if t is None else t.filter_damaged

    def lookup_arrays(self):
        """The opened table's (:meth:`Table.lookup_arrays`); ``None`` before it is opened (the
        lookup kernel then hands a read of it to Python, which opens it)."""
        t = self._real
        return None if t is None else t.lookup_arrays()

    @property
    def value_bytes(self):
        t = self._real
        return None if t is None else t.value_bytes

    def filter(self):
        """The filter read from the table file (Python's read: the kernel could not read the copy)."""
        return self.real().filter()

    def get(self, key: bytes, snap: int):
        return self.real().get(key, snap)
