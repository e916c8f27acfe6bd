"""The store's iterator: plyvel's ``Iterator`` (a cursor over one consistent view of the store).

:meth:`DB.iterator` makes an :class:`Iterator` over the keys in a range (``start``/``stop`` with
``include_start``/``include_stop``, or a ``prefix``), as of one sequence number (the caller's
snapshot, or the store's last sequence at creation: the memtables' entries in the range are
copied then and the version is held, so no snapshot needs to be registered). The
cursor sits *between* two entries: ``next()`` returns the entry after it and steps over it,
:meth:`prev` returns the entry before it and steps back over it (so ``next(); prev()`` returns
the same entry twice); with ``reverse=True`` the two swap, as in plyvel. ``seek(key)`` puts the
cursor before the first entry ``>= key`` (clamped to the range), ``seek_to_start()`` before the
first entry and ``seek_to_stop()`` after the last.

Where plyvel 1.5.1 (LevelDB) is inconsistent with its own range, the range wins (the
differential test against plyvel, ``tests/test_lsm_iterator.py``, checks every other step):
plyvel's reverse step from the end stops early when the entry to return is ``start`` itself
(``iterator(prefix=p, reverse=True)`` is empty when only ``p`` has the prefix), its ``prev()``
right after a ``seek`` below ``start`` returns a key before ``start``, its ``next()`` right
after such a seek returns ``start`` even with ``include_start=False``, and a ``seek`` beyond an
inclusive ``stop`` puts its cursor before ``stop`` (here: after it, as "the first key >= target
within the range" says).

The view: the memtables' entries in the range are copied (packed) under the store's lock when
the iterator is made; the tables are those of the version current then -- the iterator holds that
version, so tables a later compaction deletes stay readable (memory-mapped) until it is dropped.
The entries come from :func:`.scan.visible_rounds` one round at a time, into a *window* of
consecutive visible entries (at most about ``WINDOW`` beyond the round being read); a step
beyond the window's edge reads the next round in that direction (a new merge from the window's
edge key when the direction changes). Cost: a ``next()``/``prev()`` inside the window is a few
Python operations; a seek decodes one data block per source, the later rounds twice as many
blocks each up to :data:`.scan.CURSOR_CHUNK_BLOCKS` (a drain's, :meth:`DB.scan`'s, rounds
:data:`.scan.CHUNK_BLOCKS` from the start). Keys-only iteration (``include_value=False``)
makes no value object.
"""

from __future__ import annotations

import itertools

from ..errors import InvalidArgument, StoreClosed
from . import scan, seek

#: Entries kept behind the cursor when a new round is loaded (so a step back is free).
WINDOW = 1024


class IteratorClosed(StoreClosed):
    """The iterator (or its store) is closed (a :class:`StoreClosed`, so a ``RuntimeError`` as
    plyvel raises here too)."""


def successor(key: bytes) -> bytes:
    """The smallest key greater than ``key`` in bytewise order."""
    return key + b"\x00"


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (``None``: no such key,
    the prefix is empty or all ``0xff``) -- plyvel's ``bytes_increment``."""
    p = prefix.rstrip(b"\xff")
    if not p:
        return None
    return p[:-1] + bytes((p[-1] + 1,))


def half_open(start, stop, include_start: bool, include_stop: bool, prefix):
    """``(lo, hi)``: the range as ``lo <= key < hi`` (``None``: unbounded); keys already bytes."""
    if prefix is not None:
        if start is not None or stop is not None:
            raise InvalidArgument("'prefix' cannot be used together with 'start' or 'stop'")
        return prefix, prefix_end(prefix)
    lo = start if start is None or include_start else successor(start)
    hi = stop if stop is None or not include_stop else successor(stop)
    return lo, hi


class View:
    """What an iterator reads: the packed memtable entries of its range, a version and a
    sequence number (and the store's range tombstones, when it has any). ``prefix``: ``(extractor
    name, prefix, counters, lo, hi)`` -- of the tables whose key range meets ``[lo, hi)``, those
    whose prefix filter rules the prefix out are not read (``counters["prefix_checks"]`` /
    ``["prefix_skips"]`` count the checks)."""

    __slots__ = ("mem", "version", "snap", "hide", "prefix", "counted", "_tables")

    def __init__(self, mem_runs: list, version, snap: int, hide=None, prefix=None):
        self.mem = [p for p in mem_runs if p is not None]  # :meth:`.memtable.MemTable.range_packed`'s chunks
        self.version = version
        self.snap = snap
        self.hide = hide
        self.prefix = prefix
        self.counted = False  # the prefix filter checks are counted once per view
        self._tables = None

    @property
    def tables(self) -> list[list]:
        """Per level, the tables this view reads (a prefix view: those whose key range meets the
        prefix's and whose prefix filter does not rule it out); found on first use -- a cursor's
        one-call first round (:mod:`.cursor`) picks its tables itself."""
        if self._tables is None:
            version, prefix = self.version, self.prefix
            if prefix is not None:
                name, p, counters, a, b = prefix
                tables = seek.overlapping(version, a, b)
                n = sum(map(len, tables))
                keep = iter(version.prefix_filters(name).may_match([t for level in tables for t in level], p))
                tables = [[t for t in level if next(keep)] for level in tables]
                if not self.counted:
                    self.counted = True
                    counters["prefix_checks"] += n
                    counters["prefix_skips"] += n - sum(map(len, tables))
            else:
                tables = [[r.table for r in level] for level in version.levels]
            self._tables = tables
        return self._tables

    def sources(self, a, b, reverse: bool, first_blocks: int | None):
        """Merge inputs (newest first) for keys in ``[a, b)``, read in ``reverse`` or key order."""
        inputs = [iter((p,)) for p in self.mem]
        for li, level in enumerate(self.tables):
            tabs = [t for t in level if not ((b is not None and t.min_key >= b) or (a is not None and t.max_key < a))]
            if not tabs:
                continue
            if li == 0:  # L0 tables overlap: one merge input each
                inputs.extend(scan.table_chunks([t], a, b, reverse, first_blocks) for t in tabs)
            else:  # a level's tables are disjoint and in key order: one input
                inputs.append(scan.table_chunks(tabs, a, b, reverse, first_blocks))
        return inputs

    def rounds(self, a, b, reverse: bool, values: bool, first_blocks: int | None = 1):
        """:func:`.scan.visible_rounds` over ``[a, b)``; a cursor's forward run (``first_blocks``
        1) starts with the short first round of :mod:`.seek`."""
        if a is not None and b is not None and a >= b:
            return iter(())
        if reverse or first_blocks != 1:
            return scan.visible_rounds(self.sources(a, b, reverse, first_blocks), a, b, reverse, self.snap, values,
                                       self.hide)
        return seek.rounds(self, a, b, values, lambda x: scan.visible_rounds(
            self.sources(x, b, False, 1), x, b, False, self.snap, values, self.hide))


class Iterator:
    """A cursor over the store (plyvel's ``Iterator``); see the module docstring. Iterating
    yields ``(key, value)``, ``key`` (``include_value=False``), ``value`` (``include_key=False``)
    or ``None`` (neither). Close it (or use ``with``) to release its view (and the tables it
    holds) at once;
    garbage collection releases it too. Not for concurrent use by several threads."""

    def __init__(self, view: View, lo, hi, reverse: bool, include_key: bool, include_value: bool):
        self._view = view
        self._lo = lo
        self._hi = hi
        self._reverse = reverse
        self._ik = include_key
        self._iv = include_value
        self._closed = False
        if reverse:
            self.seek_to_stop()
        else:
            self.seek_to_start()

    # -- positioning --------------------------------------------------------------------------
    def _reset(self, at, fwd_done: bool, bwd_done: bool) -> None:
        """Empty window with the cursor at key ``at`` (the next forward entry is the first
        ``>= at``, the next backward one the last ``< at``)."""
        self._check()
        self._keys: list = []
        self._items: list = []
        self._pos = 0
        self._fwd = self._bwd = None
        self._fwd_from = at
        self._bwd_to = at
        self._fwd_done = fwd_done
        self._bwd_done = bwd_done

    def seek_to_start(self) -> None:
        """Cursor before the first entry of the range."""
        self._reset(self._lo, False, True)
        self._bwd_to = self._lo

    def seek_to_stop(self) -> None:
        """Cursor after the last entry of the range."""
        self._reset(self._hi, True, False)

    def seek(self, target) -> None:
        """Cursor before the first entry ``>= target`` (clamped to the range)."""
        from .db import _key

        t = _key(target)
        lo, hi = self._lo, self._hi
        if lo is not None and t <= lo:
            self.seek_to_start()
        elif hi is not None and t >= hi:
            self.seek_to_stop()
        else:
            self._reset(t, False, False)

    # -- stepping -----------------------------------------------------------------------------
    def __iter__(self) -> "Iterator":
        return self

    def __next__(self):
        if not self._reverse:  # inside the window: no further frame (a prefix seek's ten nexts)
            i = self._pos
            items = self._items
            if i < len(items):
                self._pos = i + 1
                return items[i]
            return self._step()
        return self._step_back()

    next = __next__

    def prev(self):
        """The entry before the cursor (after it with ``reverse=True``), stepping over it;
        ``StopIteration`` at the range's edge (the cursor stays)."""
        return self._step() if self._reverse else self._step_back()

    def _step(self):
        i = self._pos
        if i >= len(self._items):
            if not self._load_forward():
                raise StopIteration
            i = self._pos
        self._pos = i + 1
        return self._items[i]

    def _step_back(self):
        i = self._pos
        if i == 0:
            if not self._load_backward():
                raise StopIteration
            i = self._pos
        self._pos = i - 1
        return self._items[i - 1]

    def _round(self, forward: bool):
        """The next non-empty ``(keys, values)`` round beyond the window in that direction, or None."""
        self._check()
        if forward:
            if self._fwd_done:
                return None
            if self._fwd is None:
                self._fwd = self._view.rounds(self._fwd_from, self._hi, False, self._iv)
            r = next(self._fwd, None)
            if r is None:
                self._fwd_done = True
            return r
        if self._bwd_done:
            return None
        if self._bwd is None:
            self._bwd = self._view.rounds(self._lo, self._bwd_to, True, self._iv)
        r = next(self._bwd, None)
        if r is None:
            self._bwd_done = True
        return r

    def _items_of(self, keys, vals) -> list:
        if self._ik and self._iv:
            return list(zip(keys, vals))
        if self._ik:
            return list(keys)
        if self._iv:
            return list(vals)
        return [None] * len(keys)

    def _load_forward(self) -> bool:
        r = self._round(True)
        if r is None:
            return False
        keys, vals = r
        drop = max(0, len(self._keys) - WINDOW)
        if drop:  # the backward merge no longer starts at the window's first key
            self._bwd, self._bwd_done = None, False
        self._keys = self._keys[drop:] + list(keys)
        self._items = self._items[drop:] + self._items_of(keys, vals)
        self._pos -= drop
        self._bwd_to = self._keys[0]
        self._fwd_from = successor(self._keys[-1])
        return True

    def _load_backward(self) -> bool:
        r = self._round(False)
        if r is None:
            return False
        keys, vals = r  # descending
        keep = min(len(self._keys), WINDOW)
        if keep < len(self._keys):  # the forward merge no longer starts after the window's last key
            self._fwd, self._fwd_done = None, False
        new_keys = list(reversed(keys))
        new_items = self._items_of(new_keys, None if vals is None else list(reversed(vals)))
        self._keys = new_keys + self._keys[:keep]
        self._items = new_items + self._items[:keep]
        self._pos += len(new_keys)
        self._fwd_from = successor(self._keys[-1])
        self._bwd_to = self._keys[0]
        return True

    # -- bulk ---------------------------------------------------------------------------------
    def drain(self):
        """Every entry from the cursor on in iteration order, through C ``zip``/``chain`` (no
        Python frame per entry: :meth:`DB.scan`'s path); closes the iterator at the end."""
        return itertools.chain.from_iterable(self._drain_rounds())

    def _drain_rounds(self):
        try:
            rev = self._reverse
            items = self._items
            yield reversed(items[: self._pos]) if rev else items[self._pos :]
            if rev:
                a, b, done = self._lo, self._bwd_to, self._bwd_done
            else:
                a, b, done = self._fwd_from, self._hi, self._fwd_done
            if done:
                return
            self._check()
            for keys, vals in self._view.rounds(a, b, rev, self._iv, None):
                yield self._bulk(keys, vals)
        finally:
            self.close()

    def _bulk(self, keys, vals):
        if self._ik and self._iv:
            return zip(keys, vals)
        if self._ik:
            return keys
        if self._iv:
            return vals
        return itertools.repeat(None, len(keys))

    # -- closing ------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """Whether the iterator (or its store) is closed."""
        return self._closed

    def _check(self) -> None:
        if self._closed:
            raise IteratorClosed("the iterator (or its store) is closed")

    def close(self) -> None:
        """Release the view. Idempotent (and safe from another thread, e.g. the store's
        ``close``: it only drops references); later steps raise :class:`IteratorClosed`."""
        self._closed = True
        self._view = None
        self._fwd = self._bwd = None
        self._items = self._keys = []
        self._pos = 0

    def __enter__(self) -> "Iterator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

