"""Range tombstones: what :meth:`DB.delete_range` writes and every read honours.

A range tombstone ``(start, end, seq)`` hides every entry of a key in ``[start, end)`` whose
sequence is ``< seq`` from readers at a sequence ``>= seq`` (older snapshots still see those
entries). The rule depends on sequence numbers only, never on where an entry or the tombstone
lives, so a tombstone can sit anywhere: in the memtable that took it (``MemTable.rdels``), then
in the meta block of the table that memtable was flushed to (``Meta.range_dels``, docs/formats.md),
then in a compaction's first output table, until a compaction finds nothing older it could cover
(:mod:`.compaction.tombstones`, which also drops the entries a tombstone visible to every
snapshot hides).

Writes: a tombstone is one operation of a WAL record (type 2, :mod:`.wal`) with its own
sequence number, alone (:meth:`DB.delete_range`) or inside a :class:`~.batch.WriteBatch`
(all-or-nothing with the batch's other operations, after a crash too).

Reads: :class:`Tombstones` is the set one reader sees (memtables' and version's, at its
sequence). ``get``/``multi_get`` keep their filter path for every key no tombstone covers; a
covered key is read through the scan path, which knows each entry's sequence
(:func:`read_covered`). Iterators drop hidden entries per round (:meth:`Tombstones.hide`).
Cost: with no tombstone, one attribute check per read; with ``T`` tombstones a point read checks
``T`` ranges in Python and a scan round ``T`` comparisons per entry in a kernel (tombstones are
expected to be few: each is one write; a compaction drops them once they cover nothing).
"""

from __future__ import annotations

from ..errors import InvalidArgument
from .compaction.tombstones import Fragments
from .iterator import View, successor
from .wal import RangeEnd

MAX_SEQ = (1 << 56) - 1  #: the sequence a read "as of now" sees up to (:data:`.db.MAX_SEQ`)

__all__ = ["RangeEnd", "Tombstones", "check_range", "covered", "of_state", "view", "read_covered"]


def check_range(start: bytes, end: bytes) -> bool:
    """Whether ``[start, end)`` holds a key; ``end < start`` is an error (RocksDB's rule; an
    empty range ``start == end`` deletes nothing)."""
    if end < start:
        raise InvalidArgument(f"delete_range: end {end!r} sorts before start {start!r}")
    return start < end


class Tombstones:
    """The tombstones one reader sees: those of ``lists`` with a sequence ``<= snap``, as
    :class:`~.compaction.tombstones.Fragments` (a key's check is one binary search)."""

    __slots__ = ("frags",)

    def __init__(self, lists, snap: int):
        self.frags = Fragments([t for items in lists for t in items if t[2] <= snap])

    def __bool__(self) -> bool:
        return bool(self.frags)

    def covers(self, key: bytes) -> bool:
        """Whether some tombstone's range holds ``key``."""
        return self.frags.covering(key) > 0

    def hide(self, kd, ko, tr, sel):
        """The entries of ``sel`` (indexes into packed ``kd/ko/tr``) that no tombstone hides."""
        return sel[self.frags.not_covered(kd, ko, tr, sel)]


#: Recent :func:`of_state` answers, keyed by the ids of the objects they were built from (the
#: entry holds those objects, so an id is not reused while cached): a reader does not fragment
#: the same tombstones again.
_CACHE: dict = {}
_CACHE_SIZE = 16


def of_state(mem, imm, version, snap: int) -> Tombstones | None:
    """The tombstones a reader at ``snap`` of the store state ``(mem, imm, version)`` sees, or
    ``None`` when there are none (the common case: then reads take their usual path). Cost:
    O(T log T) the first time for a set of ``T`` tombstones, then a dict lookup."""
    if not (mem.rdels or version.range_dels or (imm is not None and imm.rdels)):
        return None
    lists = (mem.rdels, () if imm is None else imm.rdels, version.range_dels)
    if snap >= max(version.range_dels_seq, lists[0][-1][2] if lists[0] else 0, lists[1][-1][2] if lists[1] else 0):
        snap = MAX_SEQ  # sees every tombstone: the same answer as "now" (one cache entry for all such readers)
    key = (id(lists[0]), id(lists[1]), id(lists[2]), snap)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is lists[0] and hit[1] is lists[1] and hit[2] is lists[2]:
        return hit[3]
    t = Tombstones(lists, snap)
    t = t if t else None
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)), None)
    _CACHE[key] = (*lists, t)
    return t


def view(state, lo, hi, snap: int, prefix=None) -> View:
    """What an iterator over ``[lo, hi)`` of ``state`` (``(mem, imm, version)``) at ``snap``
    reads, tombstones included (``prefix``: see :class:`~.iterator.View`). The caller holds the
    store's lock (the memtables' sorted keys are read)."""
    mem, imm, ver = state
    items = [mem.range_packed(lo, hi, snap)] + ([imm.range_packed(lo, hi, snap)] if imm is not None else [])
    rd = of_state(mem, imm, ver, snap)
    return View(items, ver, snap, None if rd is None else rd.hide, prefix)


def covered(db, state, snapshot, keys) -> dict | None:
    """``{index: value or None}`` for the ``keys`` a tombstone of ``db``'s ``state`` (``(mem,
    imm, version)``) covers at ``snapshot`` (None: now), each read through the scan path
    (:func:`read_covered`); None when no key is covered (at once when there is no tombstone)."""
    mem, imm, ver = state
    if not (mem.rdels or ver.range_dels or (imm is not None and imm.rdels)):
        return None
    snap = MAX_SEQ if snapshot is None else snapshot.seq
    rd = of_state(*state, snap)
    hit = [i for i, k in enumerate(keys) if rd is not None and rd.covers(k)]
    out = {}
    for i in hit:
        with db._lock:  # the memtables' sorted keys are read under the store's lock
            v = view(state, keys[i], successor(keys[i]), snap)
        out[i] = read_covered(v, keys[i])
    return out or None


def read_covered(view, key: bytes):
    """``key``'s value in ``view`` (an :class:`~.iterator.View` with tombstones) through the scan
    path, or ``None`` (absent, deleted or hidden). Cost: one data block per table whose key
    range holds ``key`` (no filter is asked)."""
    for keys, vals in view.rounds(key, successor(key), False, True):
        if keys:
            return vals[0]
    return None
