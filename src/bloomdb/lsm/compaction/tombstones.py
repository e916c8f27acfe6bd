"""Range tombstones in compactions (:mod:`bloomdb.lsm.rangedel` states the rule they follow).

A compaction drops every input entry a tombstone visible to every snapshot hides
(:func:`not_covered`), hands its inputs' tombstones to its first output table, and drops a
tombstone once nothing older can be under it (:func:`droppable`). A table must hold an entry:
an output that would hold only tombstones gets :func:`sentinel`.
"""

from __future__ import annotations

import numpy as np

from ..sstable.builder import pack_bytes
from . import _merge_kernels as K


def packed(tombs):
    """``(tdata, toff, tseq)`` of :func:`._merge_kernels.not_covered` for ``(start, end, seq)`` tuples."""
    tdata, toff = pack_bytes([x for s, e, _ in tombs for x in (s, e)])
    return tdata, toff, np.array([q for _, _, q in tombs], np.uint64)


def not_covered(kdata, koff, trailers, idx, tombs):
    """Mask over ``idx`` (entry indexes): True where no tombstone of ``tombs`` hides the entry."""
    if not tombs or idx.shape[0] == 0:
        return np.ones(idx.shape[0], np.bool_)
    return K.not_covered(kdata, koff, trailers, idx, *packed(tombs))


def droppable(tomb, others, smallest_snapshot: int) -> bool:
    """Whether a compaction may drop ``tomb`` (one of its inputs' tombstones): it is visible to
    every snapshot (so the compaction dropped every input entry it hides) and no table outside
    the compaction (``others``: refs with ``info`` and ``table``) overlaps its range with an
    entry older than it (memtables only hold newer entries)."""
    s, e, q = tomb
    if q > smallest_snapshot:
        return False
    return not any(r.info.min_seq < q and r.table.min_key < e and r.table.max_key >= s for r in others)


def sentinel(tombs):
    """Packed arrays of one entry for a table that would hold only tombstones: a point deletion
    of the first tombstone's start key at its sequence (that tombstone hides the key at that
    sequence anyway, so the entry changes no answer)."""
    s, _, q = tombs[0]
    kd, ko = pack_bytes([s])
    return kd, ko, np.array([q << 8], np.uint64), np.zeros(0, np.uint8), np.zeros(2, np.int64)
