"""Point reads below the memtables: ONE kernel call per key (or per batch) probes the filter of
every table that may hold the key and reads the data block of each table a filter lets through
(:mod:`._get_kernels`, LevelDB's ``Version::Get``); Python only slices the value out of the
table's mapped bytes, and finishes what the kernel hands over.

A *version* here is anything with ``slots`` (refs whose ``.table`` is an
:class:`~bloomdb.lsm.sstable.Table`), ``directory`` (:class:`.directory.Directory`), ``probe()``
and ``refresh_probe()`` (:class:`bloomdb.lsm.version.Version`): ``probe()`` is the per-version
state ``(directory array, table bytes per slot)``, built once per version. The kernel hands a
slot to Python when its filter is not in the directory yet (``ASK``: read on the table's first
lookup, :meth:`.directory.Directory.check_many`) or its block must be read in Python (``READ``:
the block's CRC32C not checked yet, a compressed block, damage -- :meth:`Table.get` raises
``CorruptionError``); then the kernel resumes from the next slot.

:class:`Reads` keeps the counters of the reads finished in Python; the kernel counts its own in
the directory (:data:`.layout.COUNTERS`) -- :meth:`DB.stats` adds them. Cost per key: one kernel
call (~0.4 us of dispatch, a hash, one filter check per candidate table, one data block per table
a filter lets through), plus a slice for a value.
"""

from __future__ import annotations

import numpy as np
from ..._fastargs import address, key_bytes

from ..sstable import DELETED, MISSING
from . import _get_kernels as G
from ._get_kernels import ASK, CHECK, READ, SEEK, VALUE
from ._batch_kernels import lookup_batch
from .fastcall import direct
from .layout import SEEK_DUE
from .seeks import take_due

_ANSWER = {G.MISSING: MISSING, G.DELETED: DELETED}


def newest(at: int, key: bytes):
    """:func:`._get_kernels.lookup_newest` (``at``: the address of a probe directory array the
    caller holds, the last word of :meth:`bloomdb.lsm.version.Version.probe`; ``key``:
    exactly ``bytes``) through its compiled entry for (:data:`bloomdb._fastargs.address`,
    :data:`bloomdb._fastargs.key_bytes`) (:func:`.fastcall.direct`): the first call compiles it
    and puts the entry in this name's place, so later calls skip the dispatcher. Answers the
    value (``bytes``), ``None`` (no value) or ``(status, slot, offset, length)`` to finish
    (:meth:`Reads.finish`): :class:`._get_kernels.Answer`. (:meth:`DB.get` calls the same lookup
    as a ``METH_O`` builtin, :mod:`.find`: no argument tuple per call.)"""
    global newest
    newest = direct(G.lookup_newest, (at, key), (address, key_bytes))
    return newest(at, key)


def _lengths(keys: list[bytes]):
    """The lengths of ``keys`` as an array for :func:`._batch_kernels.lookup_batch`: uint8 through
    one ``bytes(map(len, keys))`` (a C loop) when every key is under 256 bytes, else int64."""
    try:
        return np.frombuffer(bytes(map(len, keys)), np.uint8)
    except ValueError:  # a key of 256 bytes or more
        return np.fromiter(map(len, keys), np.int64, len(keys))


class Reads:
    """Table reads of one store and the counters of the part done in Python."""

    __slots__ = ("lookups", "blocks_read", "true_positive", "checks", "useful", "positive", "on_seek")

    def __init__(self):
        #: called with the ``TableRef`` whose seek budget ran out (:mod:`.seeks`); None: ignored
        self.on_seek = None
        self.lookups = 0  # plain attributes, not counters: kept for reads finished in Python
        self.blocks_read = 0
        self.true_positive = 0
        self.checks = self.useful = self.positive = 0  # filter checks answered in Python

    def totals(self, counters) -> list[int]:
        """Checks, useful checks, positives, data blocks read, lookups, lookups answered by a
        table, store-filter checks and store-filter negatives (kernel only): the kernel's ``counters`` (the directory words :data:`.layout.COUNTERS`) plus
        the reads finished in Python."""
        mine = (self.checks, self.useful, self.positive, self.blocks_read, self.lookups, self.true_positive, 0, 0)
        return [int(c) + m for c, m in zip(counters.tolist(), mine)]

    def get(self, ver, key: bytes, snap: int):
        """``key``'s newest entry visible at ``snap`` in ``ver``'s tables: its value, DELETED or
        MISSING. One kernel call; Python only when the kernel hands a slot over."""
        p = ver._probe or ver.probe()
        st, s, a, n = self._lookup(ver, p, key, snap, 0)
        if st == VALUE:
            return p[1][s][a : a + n]
        if st < ASK:
            return _ANSWER[st]
        return self.finish(ver, key, snap, st, s, a)

    def _lookup(self, ver, p, key: bytes, snap: int, start: int):
        """:func:`._get_kernels.lookup`, its :data:`SEEK` flag acted on and cleared."""
        st, s, a, n = G.lookup(p[0], key, snap, start)
        if st & SEEK:
            self.seek_due(ver)
            st &= ~SEEK
        return st, s, a, n

    def seek_due(self, ver) -> None:
        """A lookup on ``ver`` used up a table's seek budget: hand the table to :attr:`on_seek`."""
        ref = take_due(ver)
        if ref is not None and self.on_seek is not None:
            self.on_seek(ref)

    def finish(self, ver, key: bytes, snap: int, st: int, s: int, a: int):
        """Finish in Python the slot ``s`` the kernel handed over with status ``st`` (``a``: the
        block to check for ``CHECK``), then resume the kernel from the next slot, until an
        answer: value, DELETED or MISSING. (:meth:`DB.get` calls the kernel itself and this
        only for ``st >= ASK``: no Python frame between a plain get and its kernel call.)
        A status with :data:`SEEK` is acted on first; then a value is looked up again (its
        length was not passed: once per exhausted table). A hand-over may come after the
        kernel set ``SEEK_DUE`` (the charge comes first): that is acted on too."""
        if st & SEEK:
            self.seek_due(ver)
            st &= ~SEEK
            if st == VALUE:
                return self.get(ver, key, snap)
            if st < ASK:
                return _ANSWER[st]
        elif ver.refresh_probe()[0][SEEK_DUE]:
            self.seek_due(ver)
        while True:
            nxt = s + 1
            if st == CHECK:
                ver.slots[s].table.check_block(a)  # from now on the kernel reads the block in place
            if st == ASK and ver.directory.load(s):
                nxt, r = s, MISSING  # the table's first lookup: its filter is in the directory now, the kernel checks it
                self.lookups -= nxt == 0  # the kernel counts a call from slot 0 as a new key
            elif st == READ and ver.open_slot(s):
                nxt, r = s, MISSING  # a table opened by this read (not opened at open): the kernel reads it now
                self.lookups -= nxt == 0
                self.checks -= 1  # its filter, checked again by the kernel, counts once
                self.positive -= 1
            elif st == ASK and not self._ask_many(ver, s, [key])[0]:
                r = MISSING
            else:
                r = self.read(ver, s, key, snap)
            if r is not MISSING:
                return r
            p = ver.refresh_probe()
            st, s, a, n = self._lookup(ver, p, key, snap, nxt)
            if st == VALUE:
                return p[1][s][a : a + n]
            if st < ASK:
                return _ANSWER[st]

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
        """Read table slot ``s`` for ``key`` in Python (one data block): value, DELETED or MISSING."""
        t = ver.slots[s].table
        r = t.get(key, snap)
        if getattr(t, "lazy", False):  # opened by this read: the kernel reads it itself from now on
            ver.wire(s)
        self.blocks_read += 1
        if r is not MISSING:
            self.true_positive += 1
        return r

    def get_many(self, ver, keys: list[bytes], snap: int, out: list, todo, joined: bytes | None = None) -> None:
        """Set ``out[todo[j]]`` to the value of ``keys[j]`` for every key found with a value
        (``joined``: ``b"".join(keys)`` if the caller made it already). The whole batch is one
        kernel call (filters and blocks); keys it hands over are finished per slot in Python
        (:meth:`_resolve`)."""
        m = len(keys)
        data = np.frombuffer(b"".join(keys) if joined is None else joined, np.uint8)
        res = np.empty((4, m), np.int64)
        p = ver._probe or ver.probe()
        if not lookup_batch(p[0], data, _lengths(keys), snap, res):
            return
        status, slots, voff, vlen = res
        hits = np.flatnonzero(status != G.MISSING)
        bufs = p[1]
        pending = {}
        for j, st, s, a, n in zip(hits.tolist(), status[hits].tolist(), slots[hits].tolist(),
                                  voff[hits].tolist(), vlen[hits].tolist()):
            if st == VALUE:
                out[todo[j]] = bufs[s][a : a + n]
            elif st >= ASK:
                pending[j] = (st, s, a)
        if pending:
            self._resolve(ver, pending, keys, snap, out, todo)

    def _resolve(self, ver, pending: dict, keys: list, snap: int, out: list, todo) -> None:
        """Finish the keys the kernel handed over (key index -> ``(status, slot, block)``) round
        by round: blocks to check are checked once each (lookups read them in place from then
        on), the ``ASK`` keys of a slot are checked with one batched filter call, the other keys
        read their slot in Python; then the kernel resumes from the next slot for every key not
        answered."""
        while pending:
            asks: dict[int, list[int]] = {}
            checked: set[tuple[int, int]] = set()
            for j, (st, s, a) in pending.items():
                if st == ASK:
                    asks.setdefault(s, []).append(j)
                elif st == CHECK and (s, a) not in checked:
                    checked.add((s, a))
                    ver.slots[s].table.check_block(a)
            passed = {}
            for s, js in asks.items():
                passed.update(zip(js, self._ask_many(ver, s, [keys[j] for j in js])))
            nxt = {}
            for j, (st, s, a) in pending.items():
                r = MISSING if st == ASK and not passed[j] else self.read(ver, s, keys[j], snap)
                if r is MISSING:
                    nxt[j] = s + 1
                elif r is not DELETED:
                    out[todo[j]] = r
            p = ver.refresh_probe()
            pending = {}
            for j, s in nxt.items():
                st, s, a, n = self._lookup(ver, p, keys[j], snap, s)
                if st == VALUE:
                    out[todo[j]] = p[1][s][a : a + n]
                elif st >= ASK:
                    pending[j] = (st, s, a)
