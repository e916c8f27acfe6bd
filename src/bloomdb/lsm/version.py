"""An immutable snapshot of which tables are live at which level, and the probe directory over them.

L0 tables may overlap and are kept newest first (by largest sequence); tables of L1+ do not
overlap and are kept in key order. A :class:`Version` is never changed; an edit
(:meth:`Version.apply`) makes a new one. Readers take the current version without a lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from . import _lsm_kernels as K
from .options import MAX_LEVELS


@dataclass(frozen=True)
class TableRef:
    """A live table: its manifest facts and its open reader."""

    level: int
    info: object  # sstable.TableInfo
    table: object  # sstable.Table

    @property
    def number(self) -> int:
        return self.info.number


def _family_check(f):
    """``(key, hash) -> may contain`` for a filter of a family the probe kernel does not walk."""

    def check(key: bytes, h: int) -> bool:
        return bool(f.might_contain_hashes(np.array([h], np.uint64))[0])

    return check


class Version:
    def __init__(self, levels: list[list[TableRef]]):
        lv = [list(x) for x in levels] + [[] for _ in range(MAX_LEVELS - len(levels))]
        lv[0].sort(key=lambda r: (r.info.max_seq, r.number), reverse=True)
        for i in range(1, MAX_LEVELS):
            lv[i].sort(key=lambda r: r.info.min_key)
        self.levels: tuple[tuple[TableRef, ...], ...] = tuple(tuple(x) for x in lv)
        self.slots: tuple[TableRef, ...] = tuple(r for level in self.levels for r in level)
        self._probe = None
        self._lock = threading.Lock()

    def apply(self, deleted: set[int], added: list[TableRef]) -> "Version":
        levels = [[r for r in level if r.number not in deleted] for level in self.levels]
        for r in added:
            levels[r.level].append(r)
        return Version(levels)

    def all_refs(self):
        return self.slots

    def deepest_nonempty(self) -> int:
        for i in range(MAX_LEVELS - 1, -1, -1):
            if self.levels[i]:
                return i
        return 0

    # -- the probe directory ------------------------------------------------------------------
    def probe(self):
        """``(directory, None, other-filter checks per slot, None)`` for
        :func:`_lsm_kernels.probe`; built (and every table's filter loaded) on the version's
        first read, then kept."""
        p = self._probe
        if p is not None:
            return p
        with self._lock:
            if self._probe is None:
                self._probe = self._build_probe()
            return self._probe

    def _build_probe(self):
        from ..filters.blocked import BlockedBloom

        slots = self.slots
        meta = np.zeros(K.SLOTS + K.STRIDE * max(1, len(slots)), np.int64)
        meta[0] = len(self.levels[0])
        meta[1] = MAX_LEVELS - 1
        s = len(self.levels[0])
        for j in range(1, MAX_LEVELS):
            meta[2 + 2 * (j - 1)] = s
            meta[3 + 2 * (j - 1)] = len(self.levels[j])
            s += len(self.levels[j])
        chunks = []
        woff = 0
        others = []
        bounds = []
        boff = 0
        for i, r in enumerate(slots):
            base = K.SLOTS + K.STRIDE * i
            f = r.table.filter()
            kind = 0
            other = None
            if isinstance(f, BlockedBloom):
                w, lines, k = f.kernel_args
                kind = 1
                meta[base + 1] = woff
                meta[base + 2] = int(lines)
                meta[base + 3] = k
                chunks.append(w)
                woff += w.shape[0]
            elif f is not None:
                kind = 2
                other = _family_check(f)
            elif r.table.partitions is not None:
                kind = 2
                other = r.table.partition_may_contain
            others.append(other if kind == 2 else None)
            meta[base] = kind
            mn, mx = r.info.min_key, r.info.max_key
            meta[base + 4 : base + 8] = (boff, len(mn), boff + len(mn), len(mx))
            bounds += (mn, mx)
            boff += len(mn) + len(mx)
        # one int64 array: meta, then the filter words, then the key bounds (absolute offsets)
        bnd = b"".join(bounds)
        m = meta.shape[0]
        w64 = (woff + 1) // 2
        directory = np.zeros(m + w64 + (len(bnd) + 7) // 8 + 1, np.int64)
        directory[:m] = meta
        w32 = directory.view(np.uint32)
        base32 = 2 * m
        for i in range(len(slots)):
            b = K.SLOTS + K.STRIDE * i
            if directory[b] == 1:
                directory[b + 1] += base32
            directory[b + 4] += 8 * (m + w64)
            directory[b + 6] += 8 * (m + w64)
        if chunks:
            w32[base32 : base32 + woff] = np.concatenate(chunks)
        directory.view(np.uint8)[8 * (m + w64) : 8 * (m + w64) + len(bnd)] = np.frombuffer(bnd, np.uint8)
        directory[K.W32_BASE] = base32
        directory[K.BYTE_BASE] = 8 * (m + w64)
        return directory, None, tuple(others), None
