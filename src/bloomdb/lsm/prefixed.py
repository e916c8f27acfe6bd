"""plyvel's ``PrefixedDB``: a view of the store limited to the keys under one prefix.

``db.prefixed_db(prefix)`` returns a :class:`PrefixedDB` whose ``get``/``put``/``delete``/
``write_batch``/``iterator``/``snapshot``/``prefixed_db`` read and write the store's keys
``prefix + key`` under the names ``key``, as plyvel's: iterators yield keys with the prefix
stripped; ``start``/``stop``/``seek`` targets and an iterator's ``prefix`` are given without it;
with no ``start`` (``stop``) an iterator starts (stops) at the prefix's edge. Nothing is stored
about a view: it is the store's keys, so a write through the view is a write to the store
(atomic, durable, visible to every view). bloomdb's own ``multi_get``, ``delete_range`` and
``in`` work on a view too.

Cost: one ``bytes`` concatenation per key passed in and one slice per key yielded, on top of
the store's own call.
"""

from __future__ import annotations

from .batch import BoundBatch, WriteBatch, key_bytes
from .iterator import prefix_end


class PrefixedDB:
    """The keys of ``db`` under ``prefix`` (see the module docstring). ``db`` and ``prefix`` are
    plyvel's attributes of the same names."""

    __slots__ = ("db", "prefix")

    def __init__(self, db, prefix):
        self.db = db
        self.prefix: bytes = key_bytes(prefix)

    def __repr__(self) -> str:
        return f"<bloomdb PrefixedDB {self.prefix!r} of {self.db.path!r}>"

    # -- single keys --------------------------------------------------------------------------
    def get(self, key, default=None):
        return self.db.get(self.prefix + key_bytes(key), default)

    def put(self, key, value, sync: bool = False) -> None:
        self.db.put(self.prefix + key_bytes(key), value, sync)

    def delete(self, key, sync: bool = False) -> None:
        self.db.delete(self.prefix + key_bytes(key), sync)

    def __contains__(self, key) -> bool:
        return self.prefix + key_bytes(key) in self.db

    def multi_get(self, keys, default=None, snapshot=None) -> list:
        """``db.multi_get`` of the prefixed keys (one key instead of an iterable raises, as there)."""
        if isinstance(keys, (str, bytes, bytearray, memoryview)):
            return self.db.multi_get(keys)  # raises the store's KeyTypeError
        p = self.prefix
        return self.db.multi_get([p + key_bytes(k) for k in keys], default, snapshot)

    def delete_range(self, start, end) -> None:
        """Delete every key of the view in ``[start, end)``."""
        self.db.delete_range(self.prefix + key_bytes(start), self.prefix + key_bytes(end))

    # -- batches, views, iterators ------------------------------------------------------------
    def write_batch(self, *, transaction: bool = False, sync: bool = False) -> "PrefixedBatch":
        """plyvel's ``write_batch``: a batch of this view's keys, written atomically to the store."""
        return PrefixedBatch(self.db, self.prefix, transaction, sync)

    def prefixed_db(self, prefix) -> "PrefixedDB":
        """The view of the keys under ``self.prefix + prefix``."""
        return PrefixedDB(self.db, self.prefix + key_bytes(prefix))

    def snapshot(self) -> "PrefixedSnapshot":
        """A snapshot of the store read through this view (plyvel's ``PrefixedDB.snapshot``)."""
        return PrefixedSnapshot(self, self.db.snapshot())

    def iterator(self, *, reverse: bool = False, start=None, stop=None, include_start: bool = True,
                 include_stop: bool = False, prefix=None, include_key: bool = True, include_value: bool = True,
                 snapshot=None) -> "PrefixedIterator":
        """``db.iterator`` over this view's keys (see the module docstring); keys are yielded
        without the view's prefix."""
        p = self.prefix
        if prefix is not None:
            lo, hi, inc_lo, inc_hi, pfx = None, None, True, False, p + key_bytes(prefix)
        else:
            pfx = None
            lo, inc_lo = (p, True) if start is None else (p + key_bytes(start), include_start)
            hi, inc_hi = (prefix_end(p), False) if stop is None else (p + key_bytes(stop), include_stop)
        it = self.db.iterator(lo, hi, inc_lo, inc_hi, pfx, reverse, include_key, include_value, snapshot)
        return PrefixedIterator(it, p, include_key, include_value)

    def __iter__(self):
        return self.iterator()


class PrefixedIterator:
    """A store iterator over a view's keys, yielding them without the view's prefix (plyvel's
    iterator of a ``PrefixedDB``): ``next``, ``prev``, ``seek`` (a target without the prefix),
    ``seek_to_start``, ``seek_to_stop``, ``close``, ``with``."""

    __slots__ = ("_it", "_p", "_n", "_strip")

    def __init__(self, it, prefix: bytes, include_key: bool, include_value: bool):
        self._it = it
        self._p = prefix
        self._n = len(prefix)
        # what to do with an item: strip the key of a pair, strip a key, or nothing (values, None)
        self._strip = (2 if include_value else 1) if include_key and prefix else 0

    def _out(self, item):
        s = self._strip
        if s == 2:
            return item[0][self._n :], item[1]
        if s == 1:
            return item[self._n :]
        return item

    def __iter__(self) -> "PrefixedIterator":
        return self

    def __next__(self):
        return self._out(next(self._it))

    next = __next__

    def prev(self):
        return self._out(self._it.prev())

    def seek(self, target) -> None:
        """Before the first entry whose key (without the prefix) is ``>= target``."""
        self._it.seek(self._p + key_bytes(target))

    def seek_to_start(self) -> None:
        self._it.seek_to_start()

    def seek_to_stop(self) -> None:
        self._it.seek_to_stop()

    @property
    def closed(self) -> bool:
        return self._it.closed

    def close(self) -> None:
        self._it.close()

    def __enter__(self) -> "PrefixedIterator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class PrefixedBatch(BoundBatch):
    """plyvel's write batch of a ``PrefixedDB``: a :class:`~.batch.BoundBatch` whose keys get the
    view's prefix (the batch is written to the store, atomically, as any batch)."""

    __slots__ = ("_prefix",)

    def __init__(self, db, prefix: bytes, transaction: bool = False, sync: bool = False):
        super().__init__(db, transaction, sync)
        self._prefix = prefix

    def put(self, key, value) -> "PrefixedBatch":
        return super().put(self._prefix + key_bytes(key), value)

    def put_many(self, pairs) -> "PrefixedBatch":
        checked = WriteBatch().put_many(pairs).ops  # WriteBatch's own checks and conversions
        p = self._prefix
        return super().put_many([(p + key, value) for key, value in checked])

    def delete(self, key) -> "PrefixedBatch":
        return super().delete(self._prefix + key_bytes(key))

    def delete_range(self, start, end) -> "PrefixedBatch":
        return super().delete_range(self._prefix + key_bytes(start), self._prefix + key_bytes(end))


class PrefixedSnapshot:
    """A store snapshot read through a view (plyvel's snapshot of a ``PrefixedDB``): ``get`` and
    ``iterator`` take and yield the view's keys; ``raw_iterator`` is over the whole store, as
    plyvel's; ``close``/``release``/``with`` release it."""

    __slots__ = ("_view", "snapshot")

    def __init__(self, view: PrefixedDB, snapshot):
        self._view = view
        self.snapshot = snapshot

    def get(self, key, default=None):
        return self.snapshot.get(self._view.prefix + key_bytes(key), default)

    def iterator(self, **kwargs) -> PrefixedIterator:
        return self._view.iterator(snapshot=self.snapshot, **kwargs)

    def raw_iterator(self):
        return self.snapshot.raw_iterator()

    def close(self) -> None:
        self.snapshot.close()

    release = close

    def __enter__(self) -> "PrefixedSnapshot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
