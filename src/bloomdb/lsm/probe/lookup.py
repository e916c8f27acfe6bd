"""Point reads below the memtables: the probe kernel names the tables that may hold a key, this
module reads them in order until one does (LevelDB's ``Version::Get`` over its ``table_cache``).

A *version* here is anything with ``slots`` (refs whose ``.table`` is an
:class:`~bloomdb.lsm.sstable.Table`), ``directory`` (:class:`.directory.Directory`), ``probe()``
and ``refresh_probe()`` (:class:`bloomdb.lsm.version.Version`). The kernel's answer for a key
is a slot to read, ``-1`` (no table may hold it) or ``-slot - 2``: Python decides for that slot
first (a filter to load on its first lookup, :meth:`.directory.Directory.check_many`).

:class:`Reads` keeps the read counters :meth:`DB.stats` reports (lookups that reached the tables,
data blocks read, lookups that found the key, filter checks made in Python). Cost per key: one kernel call, plus one data block
per table whose filter said "may contain".
"""

from __future__ import annotations

import numpy as np

from ..sstable import DELETED, MISSING
from ..sstable.builder import pack_bytes
from . import _probe_kernels as K


class Reads:
    """Table reads of one store and their counters."""

    __slots__ = ("lookups", "blocks_read", "true_positive", "checks", "useful", "positive")

    def __init__(self):
        self.lookups = 0  # keys looked up in the tables (the memtables did not answer)
        self.blocks_read = 0  # plain attributes, not counters: they are updated on every read
        self.true_positive = 0
        self.checks = self.useful = self.positive = 0  # filter checks answered in Python

    def get(self, ver, key: bytes, snap: int):
        """``key``'s newest entry visible at ``snap`` in ``ver``'s tables: its value, DELETED or
        MISSING. One kernel call, then one data block per table the filters let through."""
        self.lookups += 1
        p = ver._probe or ver.probe()
        s = K.probe(p[0], key, 0)
        if s == -1:
            return MISSING
        if s >= 0:  # the common case, one call shorter: the filter said "may contain"
            r = self.read(ver, s, key, snap)
            if r is not MISSING:
                return r
            s = K.probe(ver.refresh_probe()[0], key, s + 1)
        return self._follow(ver, s, key, snap)

    def _follow(self, ver, s: int, key: bytes, snap: int):
        """Follow the kernel's answer ``s`` through the tables until one holds ``key``."""
        while s != -1:
            if s < -1:
                s = -s - 2
                r = self.read(ver, s, key, snap) if self._ask_many(ver, s, [key])[0] else MISSING
            else:
                r = self.read(ver, s, key, snap)
            if r is not MISSING:
                return r
            s = K.probe(ver.refresh_probe()[0], key, s + 1)
        return MISSING

    def _ask_many(self, ver, s: int, keys: list[bytes]) -> list[bool]:
        """The filter checks of slot ``s`` the kernel left to Python, one batched call: counted
        like the kernel's; False means "not here"."""
        verdicts = ver.directory.check_many(s, keys)
        ver.refresh_probe()  # the check may have laid the directory out again
        no = verdicts.count(False)
        yes = verdicts.count(True)
        self.checks += no + yes
        self.useful += no
        self.positive += yes
        return [v is not False for v in verdicts]

    def read(self, ver, s: int, key: bytes, snap: int):
        """Read table slot ``s`` for ``key`` (one data block): value, DELETED or MISSING."""
        r = ver.slots[s].table.get(key, snap)
        self.blocks_read += 1
        if r is not MISSING:
            self.true_positive += 1
        return r

    def get_many(self, ver, keys: list[bytes], snap: int, out: list, todo) -> None:
        """Set ``out[todo[j]]`` to the value of ``keys[j]`` for every key found with a value.
        The filter checks of the whole batch are one kernel call (one hash per key)."""
        self.lookups += len(keys)
        data, offsets = pack_bytes(keys)
        slots = np.empty(len(keys), np.int64)
        p = ver._probe or ver.probe()
        K.probe_many(p[0], data, offsets, slots)
        hits = np.flatnonzero(slots != -1)
        if hits.size:
            sl = slots.tolist()
            self._resolve(ver, {j: sl[j] for j in hits.tolist()}, keys, snap, out, todo)

    def _resolve(self, ver, pending: dict, keys: list, snap: int, out: list, todo) -> None:
        """Follow the kernel's answers ``pending`` (key index -> slot, or ``-slot - 2``) for a
        batch, round by round: the keys handed to Python are checked with one batched filter call
        per slot, then every key that may be in its slot reads it; a key not found there is
        probed again from the next slot."""
        while pending:
            asks: dict[int, list[int]] = {}
            for j, s in pending.items():
                if s < -1:
                    asks.setdefault(-s - 2, []).append(j)
            passed = {}
            for slot, js in asks.items():
                passed.update(zip(js, self._ask_many(ver, slot, [keys[j] for j in js])))
            nxt = {}
            for j, s in pending.items():
                if s < -1:
                    s = -s - 2
                    if not passed[j]:
                        nxt[j] = s + 1
                        continue
                r = self.read(ver, s, keys[j], snap)
                if r is MISSING:
                    nxt[j] = s + 1
                elif r is not DELETED:
                    out[todo[j]] = r
            d = ver.refresh_probe()[0]
            pending = {j: s for j, s in ((j, K.probe(d, keys[j], s)) for j, s in nxt.items()) if s != -1}
