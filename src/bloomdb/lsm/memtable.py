"""The memtable: recent writes in memory, sorted for scans, hashed for point reads.

``latest`` maps a key to its newest value (``None`` = tombstone) so a point read is one dict
lookup, and a put one dict insert (a batch's puts wait in ``pending_keys``/``pending_values``
until something reads the dict: :meth:`MemTable.defer`, :meth:`MemTable.fold`): no container per key (a ``(seq, value)`` tuple per put was a
*tracked* object, ~1.2 garbage-collector passes per 1000 puts plus the promotions that set off
full passes, docs/benchmarks.md "LSM fills and the collector"). Sequences are kept only where a
reader can tell them apart (:meth:`MemTable.seq_of`): ``seqs`` holds the sequence of every
write made through :meth:`MemTable.add` / :meth:`MemTable.apply` (the general path: deletions,
writes while a snapshot is live or after the memtable took a range tombstone, recovery's replay);
the fast paths (``DB.put``, :func:`.batch.apply`) record none, and a key they wrote reports
``base``, or the sequence of an older recorded write of the key. Such a *reported* sequence is a
lower bound of the true one, above every sequence of older memtables and tables, and it orders
the same way against everything a reader compares it with, because the store takes a fast path
only while no snapshot is live and the memtable holds no range tombstone
(:meth:`~.writer.WritePath._regate`):

* a live snapshot ``S`` below the true sequence ``t`` was live when the write was made, so the
  write was recorded (reported == true); else ``S >= t >=`` reported: visible either way;
* a range tombstone of this memtable older than the write was in the memtable when the write
  was made, so the write was recorded; else the tombstone is newer than ``t`` and than the
  reported sequence;
* versions of one key in ``history`` were pushed by recorded writes, so they increase.

A flush reads the true sequences from the memtable's log (:mod:`.logrun`); when it packs the dict
instead (:meth:`MemTable.table_arrays`) a table may hold a reported sequence, which is as good
for every later comparison by the same argument (a snapshot taken later is above both).

``keys`` (a ``sortedcontainers.SortedList``) keeps the distinct keys in bytewise order for
scans -- writers only add to ``latest`` (O(1)); a dict keeps its keys in insertion order and a key
is never removed from ``latest``, so the keys added since the last scan are the dict's keys past
``len(keys)``, merged into ``keys`` in one ``SortedList.update`` by the next scan; a flush does
not use it (it sorts the packed keys in a numba kernel, :meth:`MemTable.table_arrays`);
``history`` keeps superseded versions ``(seq, value)``, but only while a snapshot is live (nobody
else can see them); ``rdels`` holds the range tombstones ``(start, end, seq)`` written to it
(:mod:`.rangedel`). Writers hold the store's lock; readers do not lock: a dict read is atomic
under the GIL, and scans copy their range under the store's lock.
"""

from __future__ import annotations

from itertools import islice, repeat
from operator import is_not

import numpy as np
from sortedcontainers import SortedList

from .sstable import _table_kernels as TK
from .sstable._block_kernels import gather
from .sstable.builder import pack_bytes

ENTRY_OVERHEAD = 48
ABSENT = object()  #: ``latest.get(key, ABSENT)``: the memtable holds no version of the key (``None`` is a tombstone)


def _IS_VALUE(v) -> int:
    return v is not None


class MemTable:
    __slots__ = ("latest", "seqs", "base", "history", "keys", "bytes", "log_number", "rdels", "pending_keys",
                 "pending_values")

    def __init__(self, log_number: int = 0, base: int = 0):
        """``base``: the first sequence this memtable may hold (the store's last sequence + 1
        when it is made), reported for a key no recorded write gave a sequence (see the
        module's docstring); 0 for a memtable filled through :meth:`add` only."""
        self.latest: dict[bytes, bytes | None] = {}
        self.seqs: dict[bytes, int] = {}
        self.base = base
        self.history: dict[bytes, list[tuple[int, bytes | None]]] = {}
        self.keys = SortedList()  # the first len(keys) keys of ``latest``, sorted (see the module's docstring)
        self.bytes = 0
        self.log_number = log_number
        self.rdels: list[tuple[bytes, bytes, int]] = []
        self.pending_keys: list[bytes] = []  # batch puts not yet in ``latest`` (:meth:`defer`), oldest first
        self.pending_values: list[bytes] = []

    def defer(self, keys: list, values: list) -> None:
        """The puts ``keys[i] -> values[i]`` (a batch, in order), written to the log already, kept
        aside instead of inserted into ``latest``: :meth:`fold` inserts them when something reads
        the dict (a flush reads the log, not the dict, so a fill that reads nothing never pays the
        dict inserts: ~120-190 ns a key of random keys into a memtable-sized dict, the writer's
        biggest cost per batch). Callers hold the store's lock and took the fast path (no
        snapshot, no range tombstone here); while anything is pending, the store's single-put fast
        path is closed (``WritePath._regate``) so no later put lands in ``latest`` before them.
        Cost: two ``list.extend`` (~3 us per 1000 puts), no object per put."""
        self.pending_keys.extend(keys)
        self.pending_values.extend(values)

    def fold(self) -> None:
        """Insert the pending batch puts into ``latest`` in their order (one ``dict.update``, atomic
        under the GIL), then forget them -- in that order, so a reader that finds nothing pending
        finds them all in ``latest``. Callers hold the store's lock, or the memtable is no longer
        written to (its pending list only shrinks: two folds insert the same pairs)."""
        pk = self.pending_keys
        if pk:
            self.latest.update(zip(pk, self.pending_values))
            self.pending_keys = []
            self.pending_values = []

    def seq_of(self, key: bytes) -> int:
        """The reported sequence of ``key``'s newest version (the key is in ``latest``)."""
        return self.seqs.get(key, self.base)

    def add(self, seq: int, key: bytes, value: bytes | None, keep_old: bool) -> None:
        """Insert a version, its sequence recorded. ``keep_old``: a snapshot is live, keep the
        version this one hides. (``DB.put`` and :func:`.batch.apply` inline the insert without
        ``keep_old`` and without the sequence; a test pins them to it: same ``latest``,
        ``bytes``, key order, and reported sequences never above these.)"""
        if self.pending_keys:  # older batch puts first (:meth:`defer`)
            self.fold()
        latest = self.latest
        if keep_old:
            old = latest.get(key, ABSENT)
            if old is not ABSENT:
                self.history.setdefault(key, []).append((self.seqs.get(key, self.base), old))
        # the sequence before the value: a snapshot reader (no lock) that sees the new sequence
        # with the old value finds the old version in ``history``; the other way round it would
        # take the new value for a version it may see
        self.seqs[key] = seq
        latest[key] = value
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
        self.fold()
        self.rdels = self.rdels + [(start, end, seq)]
        self.bytes += len(start) + len(end) + ENTRY_OVERHEAD

    def get(self, key: bytes, snap: int | None):
        """``(seq, value)`` of the newest version visible at ``snap`` (``None``: newest), or None
        (``seq``: the reported one, see the module's docstring)."""
        v = self.latest.get(key, ABSENT)
        if v is ABSENT:
            return None
        s = self.seqs.get(key, self.base)
        if snap is None or s <= snap:
            return s, v
        for old in reversed(self.history.get(key, ())):
            if old[0] <= snap:
                return old
        return None

    def value(self, key: bytes, snap: int):
        """The value of ``key``'s newest version visible at ``snap``: bytes, ``None`` (deleted)
        or :data:`ABSENT` (no version here). As :meth:`get`, without building the pair."""
        v = self.latest.get(key, ABSENT)  # the value before its sequence (the order get reads them in)
        if v is ABSENT or self.seqs.get(key, self.base) <= snap:
            return v
        for old in reversed(self.history.get(key, ())):
            if old[0] <= snap:
                return old[1]
        return ABSENT

    def _merge_pending(self) -> None:
        """Sort the keys added since the last call into ``keys`` (callers hold the store's lock)."""
        self.fold()
        n = len(self.keys)
        if n < len(self.latest):
            self.keys.update(islice(self.latest, n, None))

    def range_packed(self, start: bytes | None, end: bytes | None, snap: int):
        """The newest version ``<= snap`` of each key in ``[start, end)``, in key order, packed as a
        table chunk ``(kdata, koff, trailers, vdata, voff)`` (trailer ``seq << 8 | type``, type 0 a
        deletion with an empty value; ``kdata``/``vdata`` writable copies), or None when no key of
        the range is here. Callers hold the store's lock (no concurrent writer).

        Cost: C-speed passes over the range's keys (the sorted keys listed, values and sequences
        looked up by ``map``, two joins); no Python object is made per entry, so a scan of a large
        memtable sets off no garbage-collector pass (a ``(key, seq, value)`` tuple per entry did:
        ~40 young collections for 25K entries, promoted tuples that triggered a full pass whose
        cost grows with the whole process's heap). Keys whose reported sequence is above ``snap``
        (a snapshot older than their write) take :meth:`get` one by one."""
        self.fold()
        latest = self.latest
        if not latest:  # empty (after a flush, a reopen): every iterator's creation asks
            return None
        self._merge_pending()
        ks = self.keys
        keys = list(ks.irange(start, end, inclusive=(True, False))) if (start is not None or end is not None) else list(ks)
        n = len(keys)
        if n == 0:
            return None
        vals = list(map(latest.get, keys))
        if self.seqs:  # reported sequences (the module's docstring): recorded, else ``base``
            seqs = np.fromiter(map(self.seqs.get, keys, repeat(self.base, n)), np.uint64, n)
        else:
            seqs = np.full(n, self.base, np.uint64)
        if snap < self.base or (self.seqs and int(seqs.max()) > snap):  # versions a snapshot cannot see
            keep = []
            for i in np.flatnonzero(seqs > np.uint64(snap)).tolist():
                e = self.get(keys[i], snap)
                if e is None:
                    keep.append(i)
                else:
                    seqs[i], vals[i] = e
            if keep:
                mask = np.ones(n, np.bool_)
                mask[keep] = False
                keys = [k for k, m in zip(keys, mask.tolist()) if m]
                vals = [v for v, m in zip(vals, mask.tolist()) if m]
                seqs = seqs[mask]
                n = len(keys)
                if n == 0:
                    return None
        live = np.fromiter(map(is_not, vals, repeat(None, n)), np.bool_, n)
        if not live.all():  # deletions: type 0, empty value
            vals = [b"" if v is None else v for v in vals]
        trs = (seqs << np.uint64(8)) | live.astype(np.uint64)
        kd, ko = pack_bytes(keys)
        vd, vo = pack_bytes(vals)
        return kd.copy(), ko, trs, vd.copy(), vo

    def sorted_entries(self):
        """Every version in table order: ``(key, seq, value)``, keys ascending, seq descending.
        Only for a memtable no longer written to (or under the store's lock). The keys are sorted
        here, not merged into ``keys``: a flush calls this without the store's lock, while an
        iterator's creation may merge ``keys`` of the same immutable memtable under it."""
        self.fold()
        latest = self.latest
        history = self.history
        seq = self.seq_of
        for k in sorted(latest):
            yield k, seq(k), latest[k]
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
        self.fold()
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
        vals = list(self.latest.values())
        if self.seqs:  # reported sequences (the module's docstring): recorded, else ``base``
            seqs = np.fromiter(map(self.seqs.get, keys, repeat(self.base, n)), np.uint64, n)
        else:
            seqs = np.full(n, self.base, np.uint64)
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
        """Distinct keys plus range tombstones (0: nothing to flush); pending batch puts
        (:meth:`defer`) count one each until folded (a key written twice, twice)."""
        return len(self.latest) + len(self.pending_keys) + len(self.rdels)
