"""The probe directory of a version: every table's key range and filter in one int64 array, for
the probe kernel (:func:`._probe_kernels.probe`), with filters loaded lazily.

Layout (the named words of :mod:`.layout`): the header, one
``STRIDE``-word slot per table, the partition tables of partitioned tables, the filters' 32-bit
words, then the key bounds' bytes.

Lazy loading: building a directory reads no filter. A table whose filter is not loaded yet gets
slot kind ``L.LAZY`` with room reserved for its words (the filter block's size); the kernel
hands such a slot to Python (``-slot - 2``), which reads the filter (the table keeps it), copies
the words of a filter the kernel can check (:func:`kernel_words`) into the reserved room and flips
the slot to ``L.BLOCKED`` (words first, kind last, so a concurrent kernel never sees a
half-written filter). A table with
partitioned filters gets kind ``L.PARTITIONED`` and a partition table; each partition is read on
the first lookup that needs it and copied in the same way. Filters of other families (and a
table whose filter turned out partitioned) make the directory rebuild once; their checks stay in
Python, where the filter answers through its public contract (:meth:`Filter.might_contain_many`
of the keys: the family hashes the keys its own way -- XXH3, XXH64, LevelDB's hash -- so the store never
assumes one hash or one layout). A table's filter says which family it is in its own
self-describing bytes, so tables written under other options are read correctly. A damaged
filter fails open: kind ``L.NONE`` (no check counted). Counters survive a
rebuild (a kernel still running on the old array may lose a few increments: statistics only).

Cost: building is O(tables + loaded filter words); a table's first lookup reads its filter once.
"""

from __future__ import annotations

import threading

import numpy as np

from ...filters.probe import BLOCKED_V1
from . import layout as L

#: The (family tag, format version) whose own probe kernel (``_blocked_kernels.check_bits``) the
#: probe kernel calls (:func:`._probe_kernels._probe`), keyed by the store's batch hash (XXH3-64 of
#: the key bytes, computed once per key by the kernel). Every other pair is asked in Python
#: through its public contract.
KERNEL_FAMILY = BLOCKED_V1


def kernel_words(f):
    """``(words32, num_lines, k)`` when the probe kernel can check filter ``f`` itself (its
    :meth:`~bloomdb.filters.base.Filter.probe_descriptor` is of :data:`KERNEL_FAMILY`), else
    ``None``: Python asks ``f``."""
    if f is None or f is False:
        return None
    d = f.probe_descriptor()
    if d is None or d.kind != KERNEL_FAMILY:
        return None
    return d.args


def prefix_words(key: bytes) -> tuple[int, int]:
    """Bytes 0..8 and 8..16 of ``key`` as big-endian integers (zero-padded): the kernel compares
    these first."""
    b = key[:16].ljust(16, b"\0")
    return int.from_bytes(b[:8], "big"), int.from_bytes(b[8:], "big")


def _reserve(nbytes: int) -> int:
    """32-bit words reserved for a filter whose serialized form is ``nbytes`` long."""
    return (nbytes + 3) // 4 + 1


def _filter_says(f, keys: list[bytes]) -> list[bool]:
    """Filter ``f``'s answers for ``keys`` through the family's public contract (it hashes the
    keys its own way): ``might_contain`` for one key (cheaper than a batch of one),
    ``might_contain_many`` for more. Cost: one kernel call."""
    if len(keys) == 1:
        return [bool(f.might_contain(keys[0]))]
    return f.might_contain_many(keys).tolist()


class Directory:
    """The probe directory of one version's ``slots`` (TableRefs, in probe order)."""

    def __init__(self, slots, levels):
        self.slots = slots
        self.levels = levels
        self._lock = threading.Lock()
        self.array = self._build(None)

    # -- building -----------------------------------------------------------------------------
    def _build(self, counters):
        slots = self.slots
        nslots = max(1, len(slots))
        plans = []  # per slot: see _plan
        nparts = 0
        nwords = 0
        for r in slots:
            plan = self._plan(r.table)
            plans.append(plan)
            if plan[0] == L.PARTITIONED:
                nparts += len(plan[5])
                nwords += sum(w.shape[0] if w is not None else res for w, res, _, _ in plan[5])
            else:
                nwords += plan[1].shape[0] if plan[1] is not None else plan[2]
        bounds = []  # per slot: min key, max key, then its partitions' last keys
        for r, plan in zip(slots, plans):
            bounds += (r.info.min_key, r.info.max_key)
            if plan[0] == L.PARTITIONED:
                bounds += r.table.partitions[0]
        bnd = b"".join(bounds)
        m = L.SLOTS + L.STRIDE * nslots + L.PSTRIDE * nparts
        w64 = (nwords + 1) // 2
        d = np.zeros(m + w64 + (len(bnd) + 7) // 8 + 1, np.int64)
        u64 = d.view(np.uint64)
        w32 = d.view(np.uint32)
        base32 = 2 * m
        byte_base = 8 * (m + w64)
        d.view(np.uint8)[byte_base : byte_base + len(bnd)] = np.frombuffer(bnd, np.uint8)
        d[L.N_L0] = len(self.levels[0])
        d[L.NUM_LEVELS] = len(self.levels) - 1
        s = len(self.levels[0])
        for j in range(1, len(self.levels)):
            d[L.LEVEL_FIRST + 2 * (j - 1)] = s
            d[L.LEVEL_COUNT + 2 * (j - 1)] = len(self.levels[j])
            s += len(self.levels[j])
        d[L.W32_BASE] = base32
        d[L.BYTE_BASE] = byte_base
        if counters is not None:
            d[L.C_CHECKS : L.C_POSITIVE + 1] = counters
        woff = base32
        boff = byte_base
        pt = L.SLOTS + L.STRIDE * nslots
        for i, r in enumerate(slots):
            b = L.SLOTS + L.STRIDE * i
            kind, words, reserve, lines, k, parts = plans[i]
            mn, mx = r.info.min_key, r.info.max_key
            u64[b + L.S_MIN_W : b + L.S_MIN_W + 2] = prefix_words(mn)
            d[b + L.S_MIN_OFF], d[b + L.S_MIN_LEN] = boff, len(mn)
            u64[b + L.S_MAX_W : b + L.S_MAX_W + 2] = prefix_words(mx)
            d[b + L.S_MAX_OFF], d[b + L.S_MAX_LEN] = boff + len(mn), len(mx)
            boff += len(mn) + len(mx)
            if kind == L.PARTITIONED:
                d[b + L.S_WOFF] = pt
                d[b + L.S_LINES] = len(parts)
                for (w, res, plines_or_state, pk), last in zip(parts, r.table.partitions[0]):
                    u64[pt + L.P_LAST_W : pt + L.P_LAST_W + 2] = prefix_words(last)
                    d[pt + L.P_LAST_OFF] = boff
                    d[pt + L.P_LAST_LEN] = len(last)
                    boff += len(last)
                    d[pt + L.P_WOFF] = woff
                    if w is not None:
                        w32[woff : woff + w.shape[0]] = w
                        d[pt + L.P_LINES] = plines_or_state
                        d[pt + L.P_K] = pk
                        d[pt + L.P_STATE] = L.P_LOADED
                        woff += w.shape[0]
                    else:
                        d[pt + L.P_STATE] = plines_or_state  # L.P_LAZY, L.P_OTHER or L.P_DAMAGED
                        d[pt + L.P_LINES] = res
                        woff += res
                    pt += L.PSTRIDE
            elif kind == L.BLOCKED:
                w32[woff : woff + words.shape[0]] = words
                d[b + L.S_WOFF] = woff
                d[b + L.S_LINES] = lines
                d[b + L.S_K] = k
                woff += words.shape[0]
            elif kind == L.LAZY:
                d[b + L.S_WOFF] = woff
                d[b + L.S_LINES] = reserve
                woff += reserve
            d[b + L.S_KIND] = kind
        return d

    def _plan(self, t):
        """How the slot of table ``t`` is laid out: ``(kind, words, reserve, lines, k, partitions)``
        with, for a partitioned table, per partition ``(words, reserve, lines, k)`` when loaded
        and ``(None, reserve, state, 0)`` when not (``L.P_LAZY``, ``L.P_OTHER``, ``L.P_DAMAGED``)."""
        if t.filter_bytes == 0:
            return L.NONE, None, 0, 0, 0, None
        if not t.filter_loaded:
            return L.LAZY, None, _reserve(t.filter_bytes), 0, 0, None
        f = t.filter()
        if t.partitions is not None:
            parts = []
            for i, size in enumerate(t.partitions[2]):
                pf = t.loaded_partition(i)
                kw = kernel_words(pf)
                if kw is not None:
                    w, lines, k = kw
                    parts.append((w, 0, int(lines), k))
                else:
                    state = L.P_LAZY if pf is None else L.P_OTHER
                    if pf is False:
                        state = L.P_DAMAGED
                    parts.append((None, _reserve(size), state, 0))
            return L.PARTITIONED, None, 0, 0, 0, parts
        kw = kernel_words(f)
        if kw is not None:
            w, lines, k = kw
            return L.BLOCKED, w, 0, int(lines), k, None
        if f is None:  # damaged: fail open
            return L.NONE, None, 0, 0, 0, None
        return L.OTHER, None, 0, 0, 0, None

    # -- the Python side of a probe -----------------------------------------------------------
    def check(self, s: int, key: bytes):
        """Slot ``s`` handed over by the kernel: ``True`` may contain, ``False`` not here (both
        count as a filter check), ``None`` no usable filter (not counted). Loads what is missing."""
        return self.check_many(s, [key])[0]

    def check_many(self, s: int, keys: list[bytes]) -> list:
        """:meth:`check` of each of ``keys`` for slot ``s``, with one batched
        ``might_contain_many`` call per filter (the table's, or each partition's that holds some
        of the keys) instead of one call per key."""
        t = self.slots[s].table
        b = L.SLOTS + L.STRIDE * s
        if self.array[b + L.S_KIND] == L.LAZY:
            with self._lock:
                if self.array[b + L.S_KIND] == L.LAZY:
                    self._load_table(s, t, b)
        if t.partitions is None:
            f = t.filter()
            return [None] * len(keys) if f is None else _filter_says(f, keys)
        out: list = [False] * len(keys)  # a key beyond the table's last key: not here
        groups: dict[int, list[int]] = {}
        for j, key in enumerate(keys):
            i = t.partition_for(key)
            if i is not None:
                groups.setdefault(i, []).append(j)
        for i, js in groups.items():
            f = self._partition(s, t, i)
            said = [None] * len(js) if f is None else _filter_says(f, [keys[j] for j in js])
            for j, v in zip(js, said):
                out[j] = v
        return out

    def _load_table(self, s, t, b) -> None:
        d = self.array
        f = t.filter()  # reads the filter block once (the table keeps it)
        kw = kernel_words(f)
        if kw is not None:
            w, lines, k = kw
            if w.shape[0] <= d[b + L.S_LINES]:
                w32 = d.view(np.uint32)
                off = d[b + L.S_WOFF]
                w32[off : off + w.shape[0]] = w
                d[b + L.S_LINES] = int(lines)
                d[b + L.S_K] = k
                d[b + L.S_KIND] = L.BLOCKED  # last: the kernel reads the kind first
                return
        if f is None and t.partitions is None:
            d[b + L.S_KIND] = L.NONE
            return
        # another family, or partitioned: lay the directory out again, once
        self.array = self._build(d[L.C_CHECKS : L.C_POSITIVE + 1].copy())

    def _partition(self, s, t, i: int):
        """Partition ``i`` of slot ``s``'s table, read on first use (``None``: damaged); a
        partition the kernel can check is copied into the directory for the next lookups."""
        f = t.partition_filter(i)
        d = self.array
        b = L.SLOTS + L.STRIDE * s
        if d[b + L.S_KIND] == L.PARTITIONED:
            e = d[b + L.S_WOFF] + L.PSTRIDE * i
            with self._lock:
                if d[e + L.P_STATE] == L.P_LAZY:
                    kw = kernel_words(f)
                    if kw is not None:
                        w, lines, k = kw
                        if w.shape[0] <= d[e + L.P_LINES]:
                            w32 = d.view(np.uint32)
                            w32[d[e + L.P_WOFF] : d[e + L.P_WOFF] + w.shape[0]] = w
                            d[e + L.P_LINES] = int(lines)
                            d[e + L.P_K] = k
                            d[e + L.P_STATE] = L.P_LOADED  # last
                    else:
                        d[e + L.P_STATE] = L.P_DAMAGED if f is None else L.P_OTHER
        return f
