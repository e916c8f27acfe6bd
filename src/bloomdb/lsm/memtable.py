"""The memtable: recent writes in memory, sorted for scans, hashed for point reads.

``latest`` maps a key to its newest ``(seq, value)`` (``value is None`` = tombstone) so a point
read is one dict lookup; ``keys`` (a ``sortedcontainers.SortedList``) keeps the distinct keys in
bytewise order for scans and flushes -- new keys are appended to ``pending`` by writers (O(1))
and merged into ``keys`` in one ``SortedList.update`` by the next scan or flush; ``history`` keeps superseded versions, but only while a
snapshot is live (nobody else can see them). Writers hold the store's lock; readers do not lock:
a dict read is atomic under the GIL, and scans copy their range under the store's lock.
"""

from __future__ import annotations

from sortedcontainers import SortedList

_ENTRY_OVERHEAD = 48


class MemTable:
    __slots__ = ("latest", "history", "keys", "pending", "bytes", "log_number")

    def __init__(self, log_number: int = 0):
        self.latest: dict[bytes, tuple[int, bytes | None]] = {}
        self.history: dict[bytes, list[tuple[int, bytes | None]]] = {}
        self.keys = SortedList()
        self.pending: list[bytes] = []
        self.bytes = 0
        self.log_number = log_number

    def add(self, seq: int, key: bytes, value: bytes | None, keep_old: bool) -> None:
        """Insert a version. ``keep_old``: a snapshot is live, keep the version this one hides."""
        latest = self.latest
        old = latest.get(key)
        if old is None:
            self.pending.append(key)
        elif keep_old:
            self.history.setdefault(key, []).append(old)
        latest[key] = (seq, value)
        self.bytes += len(key) + (len(value) if value is not None else 0) + _ENTRY_OVERHEAD

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
        if self.pending:
            self.keys.update(self.pending)
            self.pending = []

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
        Only for a memtable no longer written to (or under the store's lock)."""
        self._merge_pending()
        latest = self.latest
        history = self.history
        for k in self.keys:
            s, v = latest[k]
            yield k, s, v
            h = history.get(k)
            if h:
                for s, v in reversed(h):
                    yield k, s, v

    def table_entries(self):
        """``(keys, trailers, values)`` lists of :meth:`sorted_entries` in table form (trailer
        ``seq << 8 | type``, deletions with value ``b""``). Without history (the common case)
        this is a few C-speed passes instead of a Python loop per entry."""
        self._merge_pending()
        if self.history:
            keys, trs, vals = [], [], []
            for k, s, v in self.sorted_entries():
                keys.append(k)
                trs.append((s << 8) | (v is not None))
                vals.append(b"" if v is None else v)
            return keys, trs, vals
        keys = list(self.keys)
        ents = list(map(self.latest.__getitem__, keys))
        trs = [(s << 8) | (v is not None) for s, v in ents]
        vals = [b"" if v is None else v for _, v in ents]
        return keys, trs, vals

    def __len__(self) -> int:
        return len(self.latest)
