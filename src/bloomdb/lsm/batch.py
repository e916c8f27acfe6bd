"""What a write carries: keys and values checked once (:func:`key_bytes`, :func:`value_bytes`),
and :class:`WriteBatch`, the operations :meth:`DB.write <bloomdb.lsm.db.DB.write>` applies
atomically, with its WAL record (:func:`record`) and its memtable insert (:func:`apply`).

Cost of a batch of ``n`` puts (the common case): the record is laid out by one kernel call over
the packed keys and values (C-speed joins, no Python frame per operation) and the memtable keeps
the batch aside until something reads its dict (``MemTable.defer``: two ``list.extend``, no
tracked object per operation); batches holding deletions or
range deletions, or applied while a snapshot is live or to a memtable holding a range tombstone,
take the per-operation path (:func:`.wal.encode_batch`, ``MemTable.apply``).
"""

from __future__ import annotations

import struct
from operator import itemgetter
from typing import Any

import numpy as np

from ..checksum import crc32c
from ..errors import InvalidArgument, KeyTypeError
from . import rangedel, wal
from ._wal_kernels import put_batch_record
from .memtable import ENTRY_OVERHEAD



def key_bytes(key: Any) -> bytes:
    """``key`` as the store's bytes: bytes as is, ``str`` as UTF-8; anything else raises
    :class:`KeyTypeError`."""
    t = type(key)
    if t is bytes:
        return key
    if t is str:
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):  # bytes subclasses (np.bytes_) too
        return bytes(key)
    if isinstance(key, str):  # str subclasses (np.str_)
        return str.encode(key, "utf-8")
    raise KeyTypeError(f"store keys are bytes or str, not {t.__name__}")


def value_bytes(value: Any) -> bytes:
    """``value`` as bytes (bytes-like objects copied); anything else raises :class:`KeyTypeError`."""
    t = type(value)
    if t is bytes:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):  # bytes subclasses (np.bytes_) too
        return bytes(value)
    raise KeyTypeError(f"store values are bytes, not {t.__name__}")


class WriteBatch:
    """Puts, deletes, range deletes applied atomically by :meth:`DB.write` (all or none, even after a crash)."""

    __slots__ = ("ops", "_puts_only", "_cols")

    def __init__(self):
        self.ops: list[tuple[bytes, Any]] = []
        self._puts_only = True
        self._cols = None  # put_many's (keys, values) of all of ``ops``, reused by record() (see cached_columns)

    def put(self, key, value) -> "WriteBatch":
        if type(key) is not bytes:
            key = key_bytes(key)
        if type(value) is not bytes:
            value = value_bytes(value)
        self.ops.append((key, value))
        return self

    def put_many(self, pairs) -> "WriteBatch":
        """:meth:`put` every ``(key, value)`` of ``pairs``, in order (later pairs win, as with
        puts). Cost: for a list of ``(bytes, bytes)`` tuples, C-speed passes that check the
        types and lengths (``list.count``: no set insert per item), split the columns
        (:func:`columns`: no tracked object per pair) and one ``extend`` (~0.07 us per pair
        against ~0.2 for a ``put`` call); anything
        else goes pair by pair through :meth:`put`'s conversions. A bad pair raises
        :class:`KeyTypeError` with the batch unchanged."""
        ops = pairs if type(pairs) is list else list(pairs)
        n = len(ops)
        if not n:
            return self
        if list(map(type, ops)).count(tuple) == n and list(map(len, ops)).count(2) == n:
            keys, values = columns(ops)
            if list(map(type, keys)).count(bytes) == n and list(map(type, values)).count(bytes) == n:
                self._cols = None if self.ops else (keys, values)
                self.ops.extend(ops)
                return self
        new = []
        for pair in ops:
            try:
                key, value = pair
            except (TypeError, ValueError):
                raise KeyTypeError(f"put_many takes (key, value) pairs, not {pair!r:.60}") from None
            new.append((key_bytes(key), value_bytes(value)))
        self.ops.extend(new)
        return self

    def delete(self, key) -> "WriteBatch":
        self.ops.append((key_bytes(key), None))
        self._puts_only = False
        return self

    def delete_range(self, start, end) -> "WriteBatch":
        """Delete every key in ``[start, end)`` (a range tombstone, :mod:`.rangedel`)."""
        if rangedel.check_range(start := key_bytes(start), end := key_bytes(end)):
            self.ops.append((start, wal.RangeEnd(end)))
            self._puts_only = False
        return self

    def append(self, source: "WriteBatch") -> "WriteBatch":
        """Add the operations of batch ``source`` after this batch's, in order (plyvel's
        ``WriteBatch.append``); ``source`` is unchanged."""
        if not isinstance(source, WriteBatch):
            raise InvalidArgument(f"append() takes a WriteBatch, not {type(source).__name__}")
        self.ops.extend(source.ops)
        self._puts_only = self._puts_only and source._puts_only
        return self

    def approximate_size(self) -> int:
        """Bytes of the log record this batch writes (plyvel's ``approximate_size``: LevelDB's
        encoded batch). Cost: the record is encoded (O(bytes in the batch))."""
        return len(wal.encode_batch(0, self.ops))

    def clear(self) -> None:
        self.ops.clear()
        self._puts_only = True
        self._cols = None

    def __len__(self) -> int:
        return len(self.ops)


class BoundBatch(WriteBatch):
    """A :class:`WriteBatch` bound to a store: plyvel's ``db.write_batch()`` (made by
    :meth:`DB.write_batch <bloomdb.lsm.writer.WritePath.write_batch>`). :meth:`write` applies it
    atomically and keeps its operations; a ``with`` block writes it at its end and clears it --
    unless ``transaction`` and the block raised (then nothing is written)."""

    __slots__ = ("_db", "_transaction", "_sync")

    def __init__(self, db, transaction: bool = False, sync: bool = False):
        super().__init__()
        self._db, self._transaction, self._sync = db, transaction, sync

    def write(self) -> None:
        self._db.write(self, self._sync)

    def __enter__(self) -> "BoundBatch":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None or not self._transaction:
                self.write()
        finally:
            self.clear()


_U32 = struct.Struct("<I")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)


def columns(ops) -> tuple[list, list]:
    """The first and the second items of ``ops`` (a list of pairs) as two lists: two C-speed
    ``map`` passes (~13 ns per pair each) that allocate two lists and nothing per pair.

    Not ``zip(*ops)``: that builds one tuple iterator per pair, a *tracked* object, so a
    1000-pair batch allocated 1000 of them at once (twice per write: ``put_many`` and
    :func:`record`); the collector's young-generation passes set off by them promoted whole
    sets to the oldest generation, and enough of those (~87K per million keys) set off FULL
    collections, 0.1-0.2 s each in a process holding large lists (docs/benchmarks.md, "LSM fills
    and the collector")."""
    return list(map(_FIRST, ops)), list(map(_SECOND, ops))


def _offsets(items, total: int, n: int) -> np.ndarray:
    """The ``n + 1`` offsets of ``items`` (bytes, ``total`` bytes joined) in their join. Items of
    one length (db-bench's keys and values, most fixed-size records) take one ``set`` pass and
    an ``arange`` (~20 us per 1000) instead of a lengths array and its cumulative sum (~30)."""
    if len(set(map(len, items))) == 1:
        return np.arange(n + 1, dtype=np.int64) * (total // n)
    off = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, items), np.int64, n), out=off[1:])
    return off


def cached_columns(batch: WriteBatch) -> tuple[list, list]:
    """:func:`columns` of ``batch.ops``: the lists ``put_many`` split when it filled the empty
    batch, while no operation was added since (every other change of ``ops`` -- ``put``,
    ``delete``, ``append``, another ``put_many`` -- makes it longer than them; ``clear`` drops
    them), else a new split (~26 us per 1000 pairs saved per batch written)."""
    cols = batch._cols
    if cols is not None and len(cols[0]) == len(batch.ops):
        return cols
    return columns(batch.ops)


def record(batch: WriteBatch, first: int):
    """The WAL record of ``batch``'s operations at sequences ``first, first + 1, ...`` (bytes-like)
    and, for a batch of puts only, its keys and values (for :func:`apply`; else ``None``)."""
    ops = batch.ops
    if not batch._puts_only or len(ops) < 8:
        return wal.encode_batch(first, ops), None
    keys, values = cached_columns(batch)
    kd = b"".join(keys)
    vd = b"".join(values)
    n = len(ops)
    ko = _offsets(keys, len(kd), n)
    vo = _offsets(values, len(vd), n)
    rec = put_batch_record(np.frombuffer(kd, np.uint8), ko, np.frombuffer(vd, np.uint8), vo, first)
    _U32.pack_into(rec, 0, crc32c(memoryview(rec)[4:]))
    return rec, (keys, values, len(kd) + len(vd))


def apply(mem, first: int, ops, puts, keep_old: bool) -> None:
    """Insert a batch's operations into memtable ``mem`` at sequences ``first, ...``; ``puts`` is
    :func:`record`'s second answer (the fast path: no snapshot keeps old versions)."""
    if puts is None or keep_old or mem.rdels:  # (a range tombstone: every write's sequence recorded)
        mem.apply(first, ops, keep_old)
        return
    keys, values, size = puts
    mem.defer(keys, values)  # into ``latest`` when something reads it; no sequence recorded: :mod:`.memtable`
    mem.bytes += size + ENTRY_OVERHEAD * len(keys)
