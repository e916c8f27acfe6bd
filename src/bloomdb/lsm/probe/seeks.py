"""Seek budgets: LevelDB's seek-triggered compaction, counted by the lookup kernel.

LevelDB (``Version::Get`` / ``UpdateStats``): a point read that has to look into more than one
table charges the first table it looked into -- a filter check counts, the table was opened and
asked -- and a table charged ``allowed_seeks = max(100, file size / 16 KiB)`` times is compacted
into the next level (LevelDB's reasoning: one wasted seek costs about as much as compacting
16 KiB). That is what drains the L0 tables a fill leaves behind (up to ``level0_trigger - 1``
of them, each a filter check for every missing key) once reads keep meeting them; a store that
is only written or only read from one level never pays it.

Here the budget is an ``int64[1]`` array kept with the table (it survives versions, like
LevelDB's ``FileMetaData``): made by the table's first probe directory with its other probe words
(:func:`.directory._table_words`), or by :func:`budget`; each directory slot holds its address
(``layout.S_SEEKS``). The probe kernel (:func:`._probe_kernels._probe`) charges the first
candidate table of a lookup when the same lookup reaches a second one, and when a budget reaches
zero (and every 64 charges below zero: LevelDB re-reports a spent table on every charge while
its one ``file_to_compact_`` slot is taken) it writes that slot into the directory's
``SEEK_DUE`` word; the lookup kernel then
flags its status (``_get_kernels.SEEK``) and Python (:func:`take_due`) hands the table to the
store's compaction thread. Charges from threads may race (a lost decrement only delays the
compaction). ``multi_get``'s batch kernel does not charge (LevelDB has no batch read).

Cost: one decrement per lookup that meets two or more tables; one Python step per exhausted table.
"""

from __future__ import annotations

import threading

import numpy as np

from . import layout as L

MIN_SEEKS = 100  #: LevelDB's floor of ``allowed_seeks``
BYTES_PER_SEEK = 16384  #: LevelDB: one seek costs about as much as compacting 16 KiB
_MAKING = threading.Lock()  #: held while a table's budget is made (once per table)


def allowed_seeks(file_size: int) -> int:
    """LevelDB's ``allowed_seeks`` of a table of ``file_size`` bytes."""
    return max(MIN_SEEKS, file_size // BYTES_PER_SEEK)


def budget(t):
    """Table ``t``'s seek budget (created on first use, then kept on the table as an attribute --
    not through ``vars(t)``, which would make the garbage collector track a dict per table), or
    ``None`` when the table object takes no attributes."""
    b = getattr(t, "seek_budget", None)
    if b is None:
        with _MAKING:  # one budget per table, whichever thread builds a directory first
            b = getattr(t, "seek_budget", None)
            if b is None:
                b = np.array([allowed_seeks(int(t.file_size))], np.int64)
                try:
                    t.seek_budget = b
                except AttributeError:
                    return None
    return b


def take_due(ver):
    """The table (a ``TableRef`` of ``ver``) whose budget a lookup on ``ver`` used up, or
    ``None``; clears the directory's ``SEEK_DUE`` word."""
    d = ver.refresh_probe()[0]
    s = int(d[L.SEEK_DUE]) - 1
    d[L.SEEK_DUE] = 0
    return ver.slots[s] if 0 <= s < len(ver.slots) else None
