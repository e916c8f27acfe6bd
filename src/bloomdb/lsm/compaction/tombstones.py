"""Range tombstones in compactions (:mod:`bloomdb.lsm.rangedel` states the rule they follow).

A compaction drops every input entry a tombstone visible to every snapshot hides
(:class:`Fragments`), hands its inputs' tombstones to its first output table, and drops a
tombstone once nothing older can be under it (:func:`droppable`). A table must hold an entry:
an output that would hold only tombstones gets :func:`sentinel`.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right

import numpy as np

from ..sstable.builder import pack_bytes
from . import _merge_kernels as K


class Fragments:
    """Tombstones ``(start, end, seq)`` cut into non-overlapping fragments (RocksDB's
    ``FragmentedRangeTombstoneList``): sorted ``bounds`` and, per fragment ``[bounds[j],
    bounds[j + 1])``, ``seqs[j]`` the largest sequence of the tombstones covering it (0: none).
    Built once (a sweep: O(T log T)); then a key's covering sequence is one binary search."""

    __slots__ = ("bounds", "seqs", "_packed")

    def __init__(self, tombs):
        self.bounds = sorted({x for s, e, _ in tombs for x in (s, e)})
        self.seqs = []
        starts = sorted(tombs)
        heap: list = []
        i = 0
        for b in self.bounds[:-1]:
            while i < len(starts) and starts[i][0] <= b:
                heapq.heappush(heap, (-starts[i][2], starts[i][1]))
                i += 1
            while heap and heap[0][1] <= b:  # ended before this fragment
                heapq.heappop(heap)
            self.seqs.append(-heap[0][0] if heap else 0)
        self._packed = None

    def __bool__(self) -> bool:
        return any(self.seqs)

    def covering(self, key: bytes) -> int:
        """The largest sequence of a tombstone covering ``key`` (0: none)."""
        j = bisect_right(self.bounds, key) - 1
        return self.seqs[j] if 0 <= j < len(self.seqs) else 0

    def not_covered(self, kdata, koff, trailers, idx):
        """Mask over ``idx`` (entry indexes): True where no tombstone hides the entry."""
        if self._packed is None:
            bd, bo = pack_bytes(self.bounds)
            self._packed = (bd, bo, np.array(self.seqs, np.uint64))
        return K.not_covered(kdata, koff, trailers, idx, *self._packed)


def droppable(tomb, others, smallest_snapshot: int) -> bool:
    """Whether a compaction may drop ``tomb`` (one of its inputs' tombstones): it is visible to
    every snapshot (so the compaction dropped every input entry it hides) and no table outside
    the compaction (``others``: refs with ``info``, the manifest's facts) overlaps its range with an
    entry older than it (memtables only hold newer entries)."""
    s, e, q = tomb
    if q > smallest_snapshot:
        return False
    return not any(r.info.min_seq < q and r.info.min_key < e and r.info.max_key >= s for r in others)


def sentinel(tombs):
    """Packed arrays of one entry for a table that would hold only tombstones: a point deletion
    of the first tombstone's start key at its sequence (that tombstone hides the key at that
    sequence anyway, so the entry changes no answer)."""
    s, _, q = tombs[0]
    kd, ko = pack_bytes([s])
    return kd, ko, np.array([q << 8], np.uint64), np.zeros(0, np.uint8), np.zeros(2, np.int64)
