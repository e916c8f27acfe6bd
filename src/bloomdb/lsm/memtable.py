"""The memtable: recent writes in memory, sorted for scans, hashed for point reads.

``latest`` maps a key to its newest ``(seq, value)`` (``value is None`` = tombstone) so a point
read is one dict lookup; ``keys`` (a ``sortedcontainers.SortedList``) keeps the distinct keys in
bytewise order for scans -- writers only add to ``latest`` (O(1)); a dict keeps its keys in
insertion order and a key is never removed from ``latest``, so the keys added since the last scan
are the dict's keys past ``len(keys)``, merged into ``keys`` in one ``SortedList.update`` by the
next scan; a flush does not use it (it sorts
the packed keys in a numba kernel, :meth:`MemTable.table_arrays`); ``history`` keeps superseded
versions, but only while a snapshot is live (nobody else can see them); ``rdels`` holds the
range tombstones ``(start, end, seq)`` written to it (:mod:`.rangedel`). Writers hold the store's lock; readers do not lock:
a dict read is atomic under the GIL, and scans copy their range under the store's lock.
"""

from __future__ import annotations

from itertools import islice
from operator import itemgetter

import numpy as np
from sortedcontainers import SortedList

from .sstable import _table_kernels as TK
from .sstable._block_kernels import gather
from .sstable.builder import pack_bytes

ENTRY_OVERHEAD = 48
_SEQ = itemgetter(0)
_VALUE = itemgetter(1)


def _IS_VALUE(v) -> int:
    return v is not None


class MemTable:
    __slots__ = ("latest", "history", "keys", "bytes", "log_number", "rdels")

    def __init__(self, log_number: int = 0):
        self.latest: dict[bytes, tuple[int, bytes | None]] = {}
        self.history: dict[bytes, list[tuple[int, bytes | None]]] = {}
        self.keys = SortedList()  # the first len(keys) keys of ``latest``, sorted (see the module's docstring)
        self.bytes = 0
        self.log_number = log_number
        self.rdels: list[tuple[bytes, bytes, int]] = []

    def add(self, seq: int, key: bytes, value: bytes | None, keep_old: bool) -> None:
        """Insert a version. ``keep_old``: a snapshot is live, keep the version this one hides.
        (``DB.put`` and :func:`.batch.apply` inline this without ``keep_old``; a test pins them
        to it: same ``latest``, ``bytes`` and key order.)"""
        latest = self.latest
        if keep_old:
            old = latest.get(key)
            if old is not None:
                self.history.setdefault(key, []).append(old)
        latest[key] = (seq, value)
        self.bytes += len(key) + (len(value) if value is not None else 0) + ENTRY_OVERHEAD

    def apply(self, first: int, ops, keep_old: bool) -> None:
        """Insert a batch's operations at sequences ``first, first + 1, ...`` (``(key, value)``,
        ``(key, None)`` deletions, ``(start, RangeEnd(end))`` range tombstones)."""
        add = self.add
        for i, (k, v) in enumerate(ops):
            if v is None or type(v) is bytes:
                add(first + i, k, v, keep_old)
            else:
                self.add_range(first + i, k, v.end)

    def add_range(self, seq: int, start: bytes, end: bytes) -> None:
        """Add the range tombstone ``[start, end)`` at ``seq`` (a new list: readers holding the
        old one keep a consistent view)."""
        self.rdels = self.rdels + [(start, end, seq)]
        self.bytes += len(start) + len(end) + ENTRY_OVERHEAD

    def get(self, key: bytes, snap: int | None):
        """``(seq, value)`` of the newest version visible at ``snap`` (``None``: newest), or None."""
        e = self.latest.get(key)
        if e is None or snap is None or e[0] <= snap:
            return e
        for old in reversed(self.history.get(key, ())):
            if old[0] <= snap:
                return old
        return None

    def _merge_pending(self) -> None:
        """Sort the keys added since the last call into ``keys`` (callers hold the store's lock)."""
        n = len(self.keys)
        if n < len(self.latest):
            self.keys.update(islice(self.latest, n, None))

    def range_items(self, start: bytes | None, end: bytes | None, snap: int) -> list[tuple[bytes, int, bytes | None]]:
        """``(key, seq, value)`` of the newest version ``<= snap`` per key in ``[start, end)``, in order.
        Callers hold the store's lock (no concurrent writer)."""
        self._merge_pending()
        it = self.keys.irange(start, end, inclusive=(True, False)) if (start is not None or end is not None) else iter(self.keys)
        out = []
        for k in it:
            e = self.get(k, snap)
            if e is not None:
                out.append((k, e[0], e[1]))
        return out

    def sorted_entries(self):
        """Every version in table order: ``(key, seq, value)``, keys ascending, seq descending.
        Only for a memtable no longer written to (or under the store's lock). The keys are sorted
        here, not merged into ``keys``: a flush calls this without the store's lock, while an
        iterator's creation may merge ``keys`` of the same immutable memtable under it."""
        latest = self.latest
        history = self.history
        for k in sorted(latest):
            s, v = latest[k]
            yield k, s, v
            h = history.get(k)
            if h:
                for s, v in reversed(h):
                    yield k, s, v

    def table_arrays(self, indexed: bool = False):
        """Every version in table order (keys ascending, sequence descending) as packed arrays
        ``(kdata, koff, trailers, vdata, voff)`` (trailer ``seq << 8 | type``, deletions with an
        empty value). Only for a memtable no longer written to (or under the store's lock).
        ``indexed``: the values are not sorted; a sixth array ``vidx`` says where entry ``i``'s
        value is (item ``vidx[i]`` of ``vdata``/``voff``: the table builder's input, one copy less).

        Cost without history (the common case): a few C-speed passes over the dict to pack the
        keys and values, then one numba call that sorts the keys, gathers them and lays out the
        trailers (this runs in the background thread, beside the writer: each time a kernel
        releases the GIL, taking it back waits up to the interpreter's switch interval behind a
        busy writer, so the work is done in as few calls as possible).
        """
        if self.history:
            keys, trs, vals = [], [], []
            for k, s, v in self.sorted_entries():
                keys.append(k)
                trs.append((s << 8) | (v is not None))
                vals.append(b"" if v is None else v)
            kd, ko = pack_bytes(keys)
            vd, vo = pack_bytes(vals)
            return kd, ko, np.array(trs, np.uint64), vd, vo
        n = len(self.latest)
        if n == 0:  # only range tombstones: an empty run (the table gets a stand-in entry)
            return pack_bytes([]) + (np.zeros(0, np.uint64),) + pack_bytes([])
        keys = list(self.latest)
        ents = list(self.latest.values())
        seqs = np.fromiter(map(_SEQ, ents), np.uint64, n)
        vals = list(map(_VALUE, ents))
        if None in vals:  # deletions: type 0, empty value
            live = np.fromiter(map(_IS_VALUE, vals), np.uint8, n)
            vals = [b"" if v is None else v for v in vals]
        else:
            live = np.ones(n, np.uint8)
        kd = np.frombuffer(b"".join(keys), np.uint8)
        vd = np.frombuffer(b"".join(vals), np.uint8)
        kd, ko, trs, order, vo = TK.sort_run(kd, np.fromiter(map(len, keys), np.int64, n), seqs, live,
                                             np.fromiter(map(len, vals), np.int64, n))  # one kernel call
        if indexed:
            return kd, ko, trs, vd, vo, order
        vd, vo = gather(vd, vo, order)
        return kd, ko, trs, vd, vo

    def __len__(self) -> int:
        """Distinct keys plus range tombstones (0: nothing to flush)."""
        return len(self.latest) + len(self.rdels)
