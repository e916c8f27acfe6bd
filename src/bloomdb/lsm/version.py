"""An immutable snapshot of which tables are live at which level, and the probe directory over them
(:mod:`.probe.directory`).

L0 tables may overlap and are kept newest first (by largest sequence); tables of L1+ do not
overlap and are kept in key order. A :class:`Version` is never changed; an edit
(:meth:`Version.apply`) makes a new one. Readers take the current version without a lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .probe.directory import Directory
from .probe.find import finder
from .probe.prefixes import PrefixFilters
from .options import MAX_LEVELS


@dataclass(frozen=True)
class TableRef:
    """A live table: its manifest facts and its open reader."""

    level: int
    info: object  # sstable.TableInfo
    table: object  # sstable.Table

    @property
    def number(self) -> int:
        return self.info.number


class Version:
    def __init__(self, levels: list[list[TableRef]], store_filter=None):
        #: the store's :class:`~.store_filter.StoreFilter` (None: none), asked once, when the
        #: directory is built, whether it covers this version's tables
        self.store_filter = store_filter
        lv = [list(x) for x in levels] + [[] for _ in range(MAX_LEVELS - len(levels))]
        lv[0].sort(key=lambda r: (r.info.max_seq, r.number), reverse=True)
        for i in range(1, MAX_LEVELS):
            lv[i].sort(key=lambda r: r.info.min_key)
        self.levels: tuple[tuple[TableRef, ...], ...] = tuple(tuple(x) for x in lv)
        self.slots: tuple[TableRef, ...] = tuple(r for level in self.levels for r in level)
        #: the range tombstones ``(start, end, seq)`` its tables carry (:mod:`.rangedel`)
        self.range_dels = tuple(t for r in self.slots for t in r.table.range_dels)
        self.range_dels_seq = max((t[2] for t in self.range_dels), default=0)  # the newest one's sequence
        self._probe = None  # (directory array, table bytes per slot, the array's address, find): probe()
        self.directory = None
        self._prefix_filters: dict = {}  # extractor name -> PrefixFilters (built on first use)
        self._lock = threading.Lock()

    def apply(self, deleted: set[int], added: list[TableRef]) -> "Version":
        levels = [[r for r in level if r.number not in deleted] for level in self.levels]
        for r in added:
            levels[r.level].append(r)
        return Version(levels, self.store_filter)

    def all_refs(self):
        return self.slots

    def memory(self) -> tuple[int, int]:
        """``(filter bytes, index bytes)`` held in memory by this version's tables: filters read
        so far (the probe directory points at them in place: no copy) and the store filter's
        (:mod:`.store_filter`), and the tables' indexes."""
        refs = self.slots
        sf = 0 if self.store_filter is None else self.store_filter.size_bytes()
        return sf + sum(r.table.filter_memory for r in refs), sum(r.table.index_memory for r in refs)

    def deepest_nonempty(self) -> int:
        for i in range(MAX_LEVELS - 1, -1, -1):
            if self.levels[i]:
                return i
        return 0

    # -- the probe directory ------------------------------------------------------------------
    def probe(self):
        """``(directory array, table bytes per slot, the array's address, find)``: what a point
        lookup needs (:func:`probe._get_kernels.lookup` takes the array, :func:`.probe.lookup.newest`
        its address -- valid while the caller holds this tuple, which holds the array; ``find(key)``
        is ``newest(address, key)`` as a builtin, :mod:`.probe.find`; a value is
        a slice of its slot's bytes); built on the version's first read (no filter is read then: each table's filter is
        read by its first lookup, see :mod:`.probe.directory`), then kept.
        ``self.directory`` answers what the kernel hands over. The array holds the addresses of
        the tables' mapped files and filters (:mod:`.probe.layout`): pass it to a kernel only
        while holding this version (a dropped version may unmap its tables)."""
        p = self._probe
        if p is not None:
            return p
        with self._lock:
            if self._probe is None:
                sf = self.store_filter
                self.directory = Directory(self.slots, self.levels, None if sf is None else sf.record_for(self))
                self._probe = _probe_of(self.directory.array, [r.table.value_bytes for r in self.slots])
            return self._probe

    def open_slot(self, s: int) -> bool:
        """Open slot ``s``'s table if it is a table not opened yet (:mod:`.sstable.lazy`) and point
        the directory at it (:meth:`wire`): True when the lookup kernel can read it now (a read
        handed to Python for want of an address resumes the kernel at the slot), else False.
        Raises CorruptionError naming the file when the table is damaged."""
        t = self.slots[s].table
        if not getattr(t, "lazy", False) or self.directory.wired(s):
            return False  # a table the kernel reads already hands a read over for another reason
        t.real()
        self.wire(s)
        return self.directory.wired(s)

    def wire(self, s: int) -> None:
        """Slot ``s``'s table was opened after this version's directory was built (a lazy table,
        :mod:`.sstable.lazy`, opened by a read): its bytes go into the probe tuple first, then the
        directory points the lookup kernel at its file (:meth:`.probe.directory.Directory.wire`)."""
        p = self._probe
        vb = self.slots[s].table.value_bytes
        if p is None or vb is None or p[1][s] is vb:
            return
        p[1][s] = vb
        self.directory.wire(s)

    def prefix_filters(self, name: str) -> PrefixFilters:
        """The tables' prefix filters for extractor ``name`` laid out for one kernel call
        (:mod:`.probe.prefixes`); built on the first prefix iterator, then kept."""
        pf = self._prefix_filters.get(name)
        if pf is None:
            with self._lock:
                pf = self._prefix_filters.get(name)
                if pf is None:
                    pf = self._prefix_filters[name] = PrefixFilters([r.table for r in self.slots], name)
        return pf

    def refresh_probe(self):
        """The probe tuple after the directory was laid out again (a lazy load may do that)."""
        d = self.directory.array
        if self._probe[0] is not d:
            self._probe = _probe_of(d, self._probe[1])
        return self._probe


def _probe_of(d, bufs) -> tuple:
    """:meth:`Version.probe`'s tuple for directory array ``d`` and the slots' table bytes."""
    at = d.ctypes.data
    return (d, bufs, at, finder(at))
