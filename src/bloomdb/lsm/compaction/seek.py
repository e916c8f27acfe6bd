"""The seek-triggered compaction's task (LevelDB's ``file_to_compact_``): a table whose seek
budget ran out (:mod:`bloomdb.lsm.probe.seeks`) is merged into the next level. LevelDB picks it
only when no level needs a size compaction (``VersionSet::PickCompaction``), and for an L0 table
takes every L0 table it overlaps; the store's L0 tasks take every L0 table (:mod:`.policy`).
A pure function of the version's shape, like :func:`.policy.pick`.
"""

from __future__ import annotations

from .policy import Task, TableShape, task_for


def task(levels: list[list[TableShape]], level: int, number: int) -> Task | None:
    """The task for table ``number`` of ``level``, or None when it is gone (compacted meanwhile)
    or there is no level below it."""
    if level + 1 >= len(levels) or not any(t.number == number for t in levels[level]):
        return None
    inputs = list(levels[0]) if level == 0 else [t for t in levels[level] if t.number == number]
    return task_for(levels, level, inputs)
