"""Which compaction to run next: a pure function of the version's shape (no files, no clock).

* L0 -> L1 once L0 holds ``level0_trigger`` tables: all L0 tables (they may overlap, so taking
  them all keeps newest-wins simple) plus every L1 table overlapping their key range.
* Ln -> Ln+1 (n >= 1) when ``bytes(Ln) / max_bytes(n) >= 1``, the level with the highest score
  first, where ``max_bytes(1) = level1_bytes`` and ``max_bytes(n+1) = level_ratio * max_bytes(n)``:
  one table of Ln -- the one with the fewest overlapping bytes in Ln+1 per byte of its own
  (:func:`least_overlapping`, RocksDB's default ``kMinOverlappingRatio``; ties: the first after
  the level's compact pointer, LevelDB's round robin through the key space) -- plus the
  overlapping tables of Ln+1. Inputs that overlap neither each other nor
  anything below make a *trivial move* (the files change level, no I/O).
* ``bottom``: no level below the output overlaps the inputs' key range, so deletions (older than
  every snapshot) may be dropped: nothing older can be hidden by them.
* Deletion-triggered (RocksDB's idea, kept simple), only when no level scores ``>= 1``: a table
  whose point deletions are at least half its entries, or that carries range tombstones, and
  whose every entry is visible to every snapshot (``max_seq <= smallest_snapshot``), is merged
  with the next level's tables overlapping its keys or its range tombstones' extent (tables'
  key ranges stay their keys' everywhere else: a level's tables never overlap by keys, so
  the outputs cannot overlap a table left out), never moved trivially: the tombstones and what they
  hide go (at the bottom), or move one level closer to it. Otherwise a level that is not full
  keeps its tombstones, and the space they and the data under them hold, for ever. Each such
  compaction moves the tombstones a level down, so they are gone after at most ``levels - 1``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import NamedTuple


class TableShape(NamedTuple):
    """What the policy sees of a table (a tuple of plain values: the store caches one per table,
    and the collector stops tracking such tuples)."""

    number: int
    size: int
    min_key: bytes
    max_key: bytes
    entries: int = 0
    deletions: int = 0  # point deletions among the entries
    range_dels: int = 0  # range tombstones the table carries
    max_seq: int = 0
    rd_lo: bytes | None = None  # the range tombstones' extent (None: none), beyond the keys maybe
    rd_hi: bytes | None = None

    def tombstone_heavy(self, smallest_snapshot: int) -> bool:
        """A deletion-triggered compaction's candidate (see the module's docstring)."""
        heavy = self.range_dels > 0 or (self.deletions > 0 and 2 * self.deletions >= self.entries)
        return heavy and self.max_seq <= smallest_snapshot


@dataclass(frozen=True)
class Task:
    level: int  # input level; output goes to level + 1
    inputs: tuple[int, ...]  # table numbers at ``level``
    next_inputs: tuple[int, ...]  # overlapping table numbers at ``level + 1``
    trivial_move: bool
    bottom: bool
    smallest: bytes
    largest: bytes

    @property
    def all_inputs(self) -> tuple[int, ...]:
        return self.inputs + self.next_inputs


def _overlapping(level: list[TableShape], lo: bytes, hi: bytes) -> list[TableShape]:
    return [t for t in level if not (t.max_key < lo or t.min_key > hi)]


def _disjoint(tables: list[TableShape]) -> bool:
    ts = sorted(tables, key=lambda t: t.min_key)
    return all(a.max_key < b.min_key for a, b in zip(ts, ts[1:]))


def max_bytes(level: int, level1_bytes: int, ratio: float) -> float:
    return level1_bytes * ratio ** (level - 1)


def scores(levels: list[list[TableShape]], level0_trigger: int, level1_bytes: int, ratio: float) -> list[float]:
    """Compaction score per level (>= 1 means the level needs compaction); the last level scores 0."""
    out = [len(levels[0]) / level0_trigger]
    for n in range(1, len(levels) - 1):
        out.append(sum(t.size for t in levels[n]) / max_bytes(n, level1_bytes, ratio))
    out.append(0.0)
    return out


def _tombstone_heavy(levels: list[list[TableShape]], smallest_snapshot: int):
    """``(level, table)`` of the shallowest deletion-triggered candidate, or None (the last
    level has no level below to compact into)."""
    for n in range(len(levels) - 1):
        for t in levels[n]:
            if t.tombstone_heavy(smallest_snapshot):
                return n, t
    return None


def pick(levels: list[list[TableShape]], compact_pointers: dict[int, bytes], level0_trigger: int,
         level1_bytes: int, ratio: float, smallest_snapshot: int | None = None) -> Task | None:
    """The next compaction for a version of shape ``levels`` (L0 newest first), or None.
    ``smallest_snapshot`` (the oldest sequence a reader may still read at): with it, a
    deletion-triggered compaction when nothing scores ``>= 1``."""
    sc = scores(levels, level0_trigger, level1_bytes, ratio)
    best = max(range(len(sc)), key=lambda i: (sc[i], -i))
    forced = False
    if sc[best] < 1.0:
        hit = None if smallest_snapshot is None else _tombstone_heavy(levels, smallest_snapshot)
        if hit is None:
            return None
        best, forced = hit[0], True
        inputs = list(levels[0]) if best == 0 else [hit[1]]
    elif best == 0:
        inputs = list(levels[0])
    else:
        inputs = [least_overlapping(levels[best], levels[best + 1], compact_pointers.get(best))]
    return task_for(levels, best, inputs, forced)


def least_overlapping(level: list[TableShape], below: list[TableShape], ptr: bytes | None) -> TableShape:
    """The table of ``level`` (n >= 1) to compact into ``below``: the one whose overlapping bytes in
    ``below`` are the smallest multiple of its own size (RocksDB's ``kMinOverlappingRatio``, its
    default: each compaction moves the most bytes down per byte it rewrites, so random writes
    rewrite less; a table overlapping nothing below is a trivial move). Ties go to the first
    table after the round-robin pointer ``ptr`` (LevelDB's choice, wrapping around). Cost:
    O((tables of both levels) * log) per call: both levels sorted by key, the overlaps found by
    bisection over the key bounds and summed from a prefix sum of the sizes."""
    cands = sorted(level, key=lambda t: t.min_key)
    if ptr is not None:
        k = bisect.bisect_right([t.min_key for t in cands], ptr)
        cands = cands[k:] + cands[:k]
    nxt = sorted(below, key=lambda t: t.min_key)
    mins = [t.min_key for t in nxt]
    maxs = [t.max_key for t in nxt]
    acc = [0]
    for t in nxt:
        acc.append(acc[-1] + t.size)
    best, best_ratio = cands[0], None
    for t in cands:
        a = bisect.bisect_left(maxs, t.min_key)  # first table below ending at or after t's start
        b = bisect.bisect_right(mins, t.max_key)  # past the last one starting at or before t's end
        ratio = (acc[b] - acc[a]) / max(1, t.size) if b > a else 0.0
        if best_ratio is None or ratio < best_ratio:
            best, best_ratio = t, ratio
    return best


def task_for(levels: list[list[TableShape]], best: int, inputs: list[TableShape], forced: bool = False) -> Task:
    """The task merging ``inputs`` (tables of level ``best``) with the overlapping tables of the
    next level; ``forced``: a deletion-triggered task (see :func:`pick`)."""
    lo = min(t.min_key for t in inputs)
    hi = max(t.max_key for t in inputs)
    if forced:  # every table the range tombstones may cover below joins (their keys' ranges are what counts there)
        lo = min([lo] + [t.rd_lo for t in inputs if t.rd_lo is not None])
        hi = max([hi] + [t.rd_hi for t in inputs if t.rd_hi is not None])
    below = _overlapping(levels[best + 1], lo, hi)
    if below:
        lo = min(lo, min(t.min_key for t in below))
        hi = max(hi, max(t.max_key for t in below))
    bottom = all(not _overlapping(levels[n], lo, hi) for n in range(best + 2, len(levels)))
    # nothing to merge: the inputs overlap neither each other nor the next level (sequential
    # inserts), so their files just change level
    trivial = not below and _disjoint(inputs) and not forced  # forced: the point is to rewrite
    return Task(best, tuple(t.number for t in inputs), tuple(t.number for t in below), trivial, bottom, lo, hi)


MAX_FLUSH_LEVEL = 2  # LevelDB's kMaxMemCompactLevel


def flush_level(levels: list[list[TableShape]], lo: bytes, hi: bytes, grandparent_bytes: int,
                max_level: int = MAX_FLUSH_LEVEL) -> int:
    """The level a flushed memtable's table (keys ``lo..hi``) goes to: LevelDB's
    ``PickLevelForMemTableOutput``. L0 when its range overlaps an L0 table; else pushed down
    while it overlaps no table of the next level and the tables it overlaps two levels down hold
    at most ``grandparent_bytes`` (a later compaction of it would rewrite them), at most to
    ``max_level``. Sequential keys overlap nothing, so each flush lands in L2 at once instead of
    being moved L0 -> L1 -> L2 by two trivial moves (each a manifest write and a version).

    The caller must keep the answer true until the table is installed: no compaction may run
    meanwhile (an L0 -> L1 compaction's output may span a gap between its inputs, where the new
    table's range lies). Cost: O(tables in levels 0..max_level + 2)."""
    if _overlapping(levels[0], lo, hi):
        return 0
    level = 0
    while level < max_level and level + 1 < len(levels):
        if _overlapping(levels[level + 1], lo, hi):
            break
        if level + 2 < len(levels) and sum(t.size for t in _overlapping(levels[level + 2], lo, hi)) > grandparent_bytes:
            break
        level += 1
    return level
