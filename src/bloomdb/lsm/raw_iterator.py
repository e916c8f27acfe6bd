"""plyvel's ``RawIterator`` (LevelDB's ``Iterator``): a cursor *on* an entry, or invalid.

:meth:`DB.raw_iterator` returns a :class:`RawIterator` over the whole store as of one sequence
number (a snapshot's, or the store's at creation), as plyvel's ``db.raw_iterator()``: it is
invalid until a seek; ``seek_to_first()``, ``seek_to_last()`` and ``seek(target)`` (the first
key ``>= target``) put it on an entry (or leave it invalid when there is none); ``next()`` and
``prev()`` move it one entry (invalid past either end) and return ``None``; ``key()``,
``value()`` and ``item()`` read the entry. Stepping or reading an invalid iterator raises
:class:`~bloomdb.errors.IteratorInvalidError`; any call after ``close()`` (or the store's close)
raises :class:`~bloomdb.errors.StoreClosed` (a ``RuntimeError``, as plyvel's).

It is a thin layer over :class:`.iterator.Iterator`, whose cursor sits *between* entries: here
that cursor is kept right after the current entry, so ``next()`` is one step of it and
``prev()`` three (back over the current entry, back over the one before, forward over it again),
each a few Python operations inside the iterator's window. Not for concurrent use by several
threads.
"""

from __future__ import annotations

from ..errors import IteratorInvalidError
from .iterator import Iterator, IteratorClosed


class RawIterator:
    """See the module docstring."""

    __slots__ = ("_it", "_cur")

    def __init__(self, it: Iterator):
        self._it = it  # a forward (key, value) iterator over the whole store
        self._cur = None  # the entry the cursor is on, or None: invalid

    # -- moving -------------------------------------------------------------------------------
    def _forward(self):
        """The entry after the underlying cursor, stepping over it, or None at the end."""
        try:
            return next(self._it)
        except StopIteration:
            return None

    def _backward(self):
        """The entry before the underlying cursor, stepping back over it, or None at the start."""
        try:
            return self._it.prev()
        except StopIteration:
            return None

    def seek_to_first(self) -> None:
        """On the first entry (invalid when the store is empty)."""
        self._it.seek_to_start()
        self._cur = self._forward()

    def seek_to_last(self) -> None:
        """On the last entry (invalid when the store is empty)."""
        self._it.seek_to_stop()
        self._cur = e = self._backward()
        if e is not None:
            self._forward()  # the cursor after the current entry again

    def seek(self, target) -> None:
        """On the first entry whose key is ``>= target`` (invalid when there is none)."""
        self._it.seek(target)
        self._cur = self._forward()

    def next(self) -> None:
        """On the next entry (invalid past the last)."""
        self._valid_or_raise()
        self._cur = self._forward()

    def prev(self) -> None:
        """On the previous entry (invalid before the first)."""
        self._valid_or_raise()
        self._backward()  # back over the current entry
        self._cur = e = self._backward()
        if e is not None:
            self._forward()

    # -- reading ------------------------------------------------------------------------------
    def valid(self) -> bool:
        """Whether the iterator is on an entry."""
        self._open_or_raise()
        return self._cur is not None

    def _open_or_raise(self) -> None:
        if self._it.closed:
            raise IteratorClosed("the raw iterator (or its store) is closed")

    def _valid_or_raise(self):
        self._open_or_raise()
        cur = self._cur
        if cur is None:
            raise IteratorInvalidError("the raw iterator is not on an entry (seek first, or it stepped off an end)")
        return cur

    def key(self) -> bytes:
        return self._valid_or_raise()[0]

    def value(self) -> bytes:
        return self._valid_or_raise()[1]

    def item(self) -> tuple[bytes, bytes]:
        return self._valid_or_raise()

    # -- closing ------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the view (idempotent); later calls raise :class:`~bloomdb.errors.StoreClosed`."""
        self._it.close()
        self._cur = None

    def __enter__(self) -> "RawIterator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
