"""The probe directory of a version: every table's key range and filter in one int64 array, for
the probe kernel (:func:`._probe_kernels.probe`), with filters loaded lazily.

Layout (the named words of :mod:`.layout`): the header, one ``STRIDE``-word slot per table, the
partition tables of partitioned tables, then the key bounds' bytes.

The filter side of the store is the filters' public probe contract
(:mod:`bloomdb.filters.probe`): a filter's :meth:`~bloomdb.filters.base.Filter.probe_descriptor`
names its family tag and format version; :data:`FAMILY_CODES` maps that pair (never the
filter's class) to the code by which the kernel calls the family's own ``check_hash``, and the
descriptor's scalars go into a filter record of the directory with the ADDRESS of its array
(:data:`.layout.F_MAPPED`): the array is never copied -- a table's filter is read in place from
its mapped file (:meth:`Table.filter`), so loading one touches only its own pages (on this
class of VM each fresh 4 KiB page written costs ~3-4 us: copying a 20 KB filter into new memory
twice cost more than everything else of its first lookup). The directory holds every array it
points at. One copy is made: the filter blocks of tables this process wrote (flush and
compaction outputs, read from their own maps) are copied once, together, when a directory first
holds them (:func:`_copy_filters_together`: filters side by side make a missing-key get cheaper
than filters spread over as many maps). A pair the
kernel does not know (``scalable``, or a future format version) gets slot kind ``L.OTHER``:
Python asks that filter (:meth:`Filter.might_contain_many` of the keys: the family hashes them
its own way).

Lazy loading: building a directory reads no filter. A table whose filter is not loaded yet gets
slot kind ``L.LAZY``; the kernel hands such a slot to Python (``-slot - 2``), which reads the
filter (the table keeps it), writes the record and flips the slot to ``L.FILTER`` (record
first, kind last, so a concurrent kernel never sees a half-written filter). A table with
partitioned filters gets kind ``L.PARTITIONED`` and a partition table; each partition is read on
the first lookup that needs it and recorded in the same way. A filter of a family the kernel does not know
(and a table whose filter turned out partitioned) makes the directory rebuild once. A table's
filter says which family it is in its own self-describing bytes, so tables written under other
options are read correctly. A damaged filter fails open: kind ``L.NONE`` (no check counted).
Counters survive a rebuild (a kernel still running on the old array may lose a few increments:
statistics only).

Cost: building is O(tables); a table's first lookup reads its filter once (one CRC32C pass over
the block, its header parsed, nothing copied).
"""

from __future__ import annotations

import threading

import numpy as np

from ...checksum import HW_RANGES
from ...filters import probe as FP, scratch
from ..sstable.block import TRAILER
from . import _probe_kernels as PK, layout as L, seeks
from .fastcall import direct

#: ``(family tag, format version)`` of a probe descriptor -> ``(family code, array dtype)``: the
#: pairs whose own ``check_hash`` the probe kernel calls (:func:`._probe_kernels._check`), each on
#: the family's own hash of the key. A pair not listed (a new format version, ``scalable``) is
#: asked in Python through the filter's public contract.
FAMILY_CODES: dict[tuple[int, int], tuple[int, np.dtype]] = {
    FP.BLOCKED_V1: (L.F_BLOCKED, np.dtype(np.uint32)),
    FP.REGISTER_V1: (L.F_REGISTER, np.dtype(np.uint32)),
    FP.SBBF_V1: (L.F_SBBF, np.dtype(np.uint32)),
    FP.PAIRED_V1: (L.F_PAIRED, np.dtype(np.uint32)),
    FP.RIBBON_V1: (L.F_RIBBON, np.dtype(np.uint64)),
    FP.FUSE8_V1: (L.F_FUSE8, np.dtype(np.uint8)),
    FP.FUSE16_V1: (L.F_FUSE16, np.dtype(np.uint16)),
    FP.STANDARD_V1: (L.F_STANDARD, np.dtype(np.uint64)),
    FP.LEVELDB_V1: (L.F_LEVELDB, np.dtype(np.uint8)),
    FP.COUNTING_V1: (L.F_COUNTING, np.dtype(np.uint8)),
    FP.CUCKOO_V1: (L.F_CUCKOO, np.dtype(np.uint8)),
}

_MASK64 = (1 << 64) - 1


def kernel_record(f):
    """``(family code, array, scalars)`` when the probe kernel can check filter ``f`` itself (its
    :meth:`~bloomdb.filters.base.Filter.probe_descriptor` is a pair of :data:`FAMILY_CODES`, with
    the array of the expected dtype), else ``None``: Python asks ``f``."""
    if f is None or f is False:
        return None
    d = f.probe_descriptor()
    if d is None or d.kind not in FAMILY_CODES:
        return None
    code, dtype = FAMILY_CODES[d.kind]
    arr, scalars = d.args[0], d.args[1:]
    if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != 1 or len(scalars) > L.NUM_SCALARS:
        return None
    return code, arr, [int(x) & _MASK64 for x in scalars]


def prefix_words(key: bytes) -> tuple[int, int]:
    """Bytes 0..8 and 8..16 of ``key`` as big-endian integers (zero-padded): the kernel compares
    these first."""
    b = key[:16].ljust(16, b"\0")
    return int.from_bytes(b[:8], "big"), int.from_bytes(b[8:], "big")


def _round8(nbytes: int) -> int:
    return (nbytes + 7) & ~7


def _put_record(d, r: int, rec, off: int) -> None:
    """Write filter record ``rec`` at word ``r`` with its array at byte ``off`` (array first, so
    a kernel that sees the record's kind flip reads a whole filter)."""
    code, arr, scalars = rec
    d.view(np.uint8)[off : off + arr.nbytes] = arr.view(np.uint8)
    u64 = d.view(np.uint64)
    d[r + L.R_OFF] = off
    d[r + L.R_LEN] = arr.shape[0]
    for i, x in enumerate(scalars):
        u64[r + L.R_P0 + i] = x
    d[r + L.R_FAM] = code


def _put_mapped(d, r: int, rec) -> None:
    """Write filter record ``rec`` at word ``r`` of ``d`` with its array referenced by address
    (:data:`.layout.F_MAPPED`: the filter's own array, not copied; the caller keeps the array
    alive while ``d`` may be probed): :func:`_words_of` ``rec``, the family word last, so a kernel
    that sees it reads a whole record."""
    words = _words_of(rec)
    d[r + 1 : r + L.RSTRIDE] = words[1:]  # the record's first word is its family (L.R_FAM == 0)
    d[r + L.R_FAM] = words[L.R_FAM]


#: the slot words of a table's read state, seek budget and filter-load words, in this order (see
#: :func:`_table_words`)
_READ_COLS = [L.S_TBUF, L.S_TLEN, L.S_TIDX, L.S_TIDXLEN, L.S_TCHK, L.S_SEEKS, L.S_TFW]


#: a table's probe words in ONE int64 array made on its first directory (:func:`_table_words`):
#: its slot's read-state words (``_READ_COLS``), then its seek budget (one word, :mod:`.seeks`),
#: then its filter-load words (:data:`.layout.TSTRIDE`) -- kept on the table as three views
#: (``probe_slot_words``, ``seek_budget``, ``probe_filter_words``): one allocation and one kernel
#: call per table instead of three arrays and a kernel returning a fourth (~4 us a table on a
#: reopened store's first directory)
_W_BUDGET = len(_READ_COLS)
_W_FILTER = _W_BUDGET + 1
_WORDS = _W_FILTER + L.TSTRIDE
#: held while a table's probe words are made (once per table, whichever thread builds a directory
#: first: two directories of one table must point at the same budget and filter-load words)
_MAKING = threading.Lock()


def _table_words(t, pin):
    """``(the words of _READ_COLS as an int64 array, its index array)`` for table ``t`` (``pin``:
    its :func:`_read_state`): addresses never change for a table, so they are worked out once and
    kept on it (each ``.ctypes.data`` costs ~1 us; a version's directory is rebuilt after every
    flush and compaction) -- as attributes holding arrays (:func:`_keep`), which the garbage
    collector does not track. The table's seek budget and filter-load words
    (:func:`_filter_words`) are made with them, in the same array."""
    key = None if pin is None else pin[1]  # the index array: made once per table, at its open
    row = getattr(t, "probe_slot_words", None)
    if row is None or getattr(t, "probe_slot_index", None) is not key:
        with _MAKING:
            row = getattr(t, "probe_slot_words", None)
            if row is None or getattr(t, "probe_slot_index", None) is not key:
                row = _make_words(t, pin, key)
    return row, key


def _make_words(t, pin, key):
    """Make and keep table ``t``'s probe words (under ``_MAKING``); returns its read-state row.
    A table seen before (its index array changed: the cached route read it again) keeps its seek
    budget and filter-load words (their addresses are in directories still probed)."""
    kernel = pin is not None and pin[0].dtype == np.uint8 and pin[1].dtype == np.int64 and pin[2].dtype == np.uint8
    budget = getattr(t, "seek_budget", None)
    fw = getattr(t, "probe_filter_words", None)
    if budget is None and fw is None:
        w = np.zeros(_WORDS, np.int64)
        row, budget = w[:_W_BUDGET], w[_W_BUDGET:_W_FILTER]
        budget[0] = seeks.allowed_seeks(int(t.file_size))
        fw = w[_W_FILTER:] if _filter_words_due(t, pin) else None
        if fw is not None:
            _filter_source(t, fw)
        try:
            t.seek_budget = budget
            t.probe_filter_words = fw
        except AttributeError:  # a table that keeps nothing: its reads are never charged, Python reads its filter
            budget = fw = None
    else:
        row = np.zeros(_W_BUDGET, np.int64)
        if budget is None:
            budget = seeks.budget(t)
        fw = _filter_words(t, pin)
    if kernel:
        _table_words_kernel(pin[0], pin[1], pin[2], _NO_WORDS if budget is None else budget,
                            _NO_WORDS if fw is None else fw, row)
    else:
        if pin is not None:
            row[:5] = pin[0].ctypes.data, pin[0].shape[0], pin[1].ctypes.data, pin[1].shape[0], pin[2].ctypes.data
        if budget is not None:
            row[5] = budget.ctypes.data
        if fw is not None:
            row[6] = fw.ctypes.data
    _keep(t, probe_slot_words=row, probe_slot_index=key)
    return row


_NO_WORDS = np.zeros(0, np.int64)


def _make_unopened_words(tables) -> None:
    """The probe words of the tables of ``tables`` not opened yet and without words (tables with
    no read state whose filter block has a copy in the store's filter file: ``filter_buffer``,
    :mod:`bloomdb.lsm.sstable.lazy`), made together: one array for all of them, their addresses
    and fields written by column, each table keeping its three views (:func:`_make_words` per
    table: ~10 us a table on a reopened 5M-key store's first directory, ~300 tables)."""
    todo = [t for t in tables if getattr(t, "filter_buffer", None) is not None and t.probe_slot_words is None
            and t.seek_budget is None and t.probe_filter_words is None and t.lookup_arrays() is None]
    if not todo:
        return
    with _MAKING:
        todo = [t for t in todo if t.probe_slot_words is None and t.seek_budget is None and t.probe_filter_words is None]
        k = len(todo)
        if not k:
            return
        w = np.zeros((k, _WORDS), np.int64)
        rows = w.ctypes.data + 8 * _WORDS * np.arange(k, dtype=np.int64)
        w[:, _W_BUDGET] = [seeks.allowed_seeks(int(t.file_size)) for t in todo]
        w[:, 5] = rows + 8 * _W_BUDGET  # S_SEEKS (the order of _READ_COLS); S_TBUF..S_TCHK stay 0: Python opens the table
        kernel = HW_RANGES
        if kernel:
            w[:, 6] = rows + 8 * _W_FILTER  # S_TFW
            fb = [t.filter_block for t in todo]
            w[:, _W_FILTER + L.T_FOFF] = [b[0] for b in fb]
            w[:, _W_FILTER + L.T_FSIZE] = [b[1] for b in fb]
            addr = {}
            for i, t in enumerate(todo):
                buf = t.filter_buffer
                a = addr.get(id(buf))
                if a is None:
                    a = addr[id(buf)] = (buf.ctypes.data, buf.shape[0])
                w[i, _W_FILTER + L.T_FBUF], w[i, _W_FILTER + L.T_FBUFLEN] = a
        for i, t in enumerate(todo):
            t.seek_budget = w[i, _W_BUDGET:_W_FILTER]
            t.probe_filter_words = w[i, _W_FILTER:] if kernel else None
            t.probe_slot_words = w[i, :_W_BUDGET]


def _filter_words_due(t, pin) -> bool:
    """Whether the probe kernel can read table ``t``'s filter itself (mapped bytes or a copy of
    its filter block in the store's filter file, a filter block, no partitions read already, the
    CRC instruction): else Python reads it."""
    return ((pin is not None or getattr(t, "filter_buffer", None) is not None) and HW_RANGES and bool(t.filter_bytes)
            and getattr(t, "partitions", None) is None)


def _filter_source(t, fw) -> None:
    """Where filter-load words ``fw`` find table ``t``'s filter block: its offset and size, and
    the buffer holding it when that is not the table's mapped file (``T_FBUF``): a table not
    opened yet reads the block's copy in the store's filter file (:mod:`bloomdb.lsm.filter_file`),
    an opened table its copy made with the other tables of its first directory
    (:func:`_copy_filters_together`), if any."""
    off, size = t.filter_block
    fb = getattr(t, "filter_buffer", None)
    if fb is None:
        fb = getattr(t, "probe_filter_copy", None)
        if fb is not None:
            off = 0
    fw[L.T_FOFF], fw[L.T_FSIZE] = off, size
    if fb is not None:
        fw[L.T_FBUF], fw[L.T_FBUFLEN] = fb.ctypes.data, fb.shape[0]


#: a filter block's copy starts on a cache line (:func:`_copy_filters_together`)
_LINE = 64


def _copy_filters_together(tables) -> None:
    """Copy the filter blocks (with their trailers: what the probe kernel checks and reads,
    :func:`._probe_kernels._load_lazy`) of the tables among ``tables`` written by this process
    (``filter_copy_due``: flush and compaction outputs) whose filter-load words are not made yet
    into ONE buffer, each table keeping its copy (``probe_filter_copy``,
    a view: the buffer lives as long as any of its tables) for its whole life; their filter-load
    words then point at the copies (:func:`_filter_source`). A buffer of 4 MiB or more is an
    anonymous map advised onto transparent huge pages (:func:`bloomdb.filters.scratch.zeros`;
    4 KiB pages where the system has none).

    Why: read in place, a table's filter sits at the end of its own mapped file, so a store's
    filters lie in as many maps, MiBs apart; ~440 tables at 5M keys (~7 MB of filters, ~2
    random lines a missing key): a missing-key get costs ~50-80 ns more than with the same
    filters side by side (the filter file's layout after a reopen; docs/benchmarks.md, "Missing
    gets at 5M": the page walks of the lines' TLB misses). Copies made one table at a time in
    the heap did not recover it.

    Cost: one copy of each block (~1.25 bytes a key at 10 bits a key), once per table, when a
    directory first holds it (the first read after a flush or compaction: its new tables; after
    a fill, every table: ~5 ms at 5M keys); the tables' maps' filter pages are not read by
    lookups then. Tables opened from files already there read their filters in place as before:
    a reopened store reads the filter file's copies (side by side already), and a store opened
    without it (read-only, or none written) would pay that copy on its first read. Memory: a
    buffer is freed when the last of its tables is; until then it holds the filters of tables
    compacted away too (at most the filters of one directory's new tables)."""
    todo = [t for t in tables if t.filter_copy_due and getattr(t, "probe_filter_words", None) is None
            and getattr(t, "probe_filter_copy", None) is None]
    if not todo:
        return
    with _MAKING:
        todo = [(t, pin) for t in todo if getattr(t, "probe_filter_words", None) is None
                and getattr(t, "probe_filter_copy", None) is None
                for pin in (_read_state(t),) if _filter_words_due(t, pin)]
        spans = []
        total = 0
        for t, pin in todo:
            off, size = t.filter_block
            n = size + TRAILER
            if off < 0 or off + n > pin[0].shape[0]:
                continue  # the kernel reads the map and rejects the block: Python decides
            spans.append((t, pin[0], off, n, total))
            total += (n + _LINE - 1) & ~(_LINE - 1)
        if not spans:
            return
        buf = _filter_memory(total + _LINE)
        base = (-buf.ctypes.data) % _LINE
        for t, src, off, n, at in spans:
            copy = buf[base + at : base + at + n]
            copy[:] = src[off : off + n]
            t.probe_filter_copy = copy


def _filter_memory(nbytes: int):
    """A zeroed uint8 buffer of ``nbytes`` for filter copies: on transparent huge pages from
    4 MiB (:func:`bloomdb.filters.scratch.zeros`), plain memory below or where there are none."""
    return scratch.zeros(nbytes, np.uint8)


def _filter_words(t, pin):
    """Table ``t``'s filter-load words (:data:`.layout.TSTRIDE` int64, kept on the table as
    ``probe_filter_words``), through which the probe kernel reads its filter on its first lookup
    (:func:`._probe_kernels._load_lazy`); None when the kernel cannot (:func:`_filter_words_due`):
    Python reads it then. (A table's first directory makes them with its other words:
    :func:`_make_words`.)"""
    fw = getattr(t, "probe_filter_words", None)
    if fw is not None:
        return fw
    if not _filter_words_due(t, pin):
        return None
    fw = np.zeros(L.TSTRIDE, np.int64)
    _filter_source(t, fw)
    _keep(t, probe_filter_words=fw)
    return fw if getattr(t, "probe_filter_words", None) is fw else None


def kernel_read(t):
    """Table ``t``'s filter-load words when the probe kernel has read its filter (the record in
    words ``0 .. RSTRIDE``, the payload bytes at ``T_BYTES``), else None."""
    fw = getattr(t, "probe_filter_words", None)
    return fw if fw is not None and fw[L.R_FAM] != 0 else None


def _table_words_kernel(buf, index, checked, budget, fwords, row):
    """:func:`._probe_kernels.table_words` through its compiled entry (:func:`.fastcall.direct`:
    the argument types never change -- contiguous uint8, int64, uint8, int64, int64, int64
    arrays, checked by the caller), put in this name's place by the first call."""
    global _table_words_kernel
    _table_words_kernel = direct(PK.table_words, (buf, index, checked, budget, fwords, row))
    return _table_words_kernel(buf, index, checked, budget, fwords, row)


def _keep(t, **attrs) -> None:
    """Set ``attrs`` on table ``t`` if it takes attributes (else nothing is kept). Never through
    ``vars(t)``: asking for an instance's ``__dict__`` makes CPython build a dict object the
    garbage collector tracks, one per table, and long-lived tracked objects are what set off
    its full passes (~0.5 s each in a process holding large lists)."""
    try:
        for k, v in attrs.items():
            setattr(t, k, v)
    except AttributeError:
        pass


def _words_of(rec) -> list[int]:
    """The :data:`.layout.RSTRIDE` directory words (int64) of filter record ``rec = (family
    code, array, scalars)``: the family word with :data:`.layout.F_MAPPED`, the array's address
    and length, the scalars (uint64 values stored as their int64 bit pattern)."""
    code, arr, scalars = rec
    words = [0] * L.RSTRIDE
    words[L.R_FAM] = code + L.F_MAPPED
    words[L.R_OFF] = arr.ctypes.data
    words[L.R_LEN] = arr.shape[0]
    for i, x in enumerate(scalars):
        words[L.R_P0 + i] = x - (1 << 64) if x >= 1 << 63 else x
    return words


def record_words(rec):
    """``(`` :func:`_words_of` ``rec`` as an int64 array, its array ``)``: a filter record for a
    directory's header (the store filter, :meth:`Directory.set_store_filter`)."""
    return np.array(_words_of(rec), np.int64), rec[1]


def _record_words(t, rec):
    """``(`` :func:`_words_of` ``rec`` as an int64 array, its array ``)``, kept on table ``t``
    with the filter array they were made from (a table's filter never changes; see :func:`_keep`)."""
    words = getattr(t, "probe_record_words", None)
    if words is None or getattr(t, "probe_record_array", None) is not rec[1]:
        words = np.array(_words_of(rec), np.int64)
        _keep(t, probe_record_words=words, probe_record_array=rec[1])
    return words, rec[1]


def _prefix_words_many(keys: list[bytes]) -> np.ndarray:
    """:func:`prefix_words` of each of ``keys`` as a ``(len(keys), 2)`` uint64 array."""
    b = b"".join([k[:16].ljust(16, b"\0") for k in keys])
    return np.frombuffer(b, ">u8").reshape(-1, 2).astype(np.uint64)


def _read_state(t):
    """``(file bytes, index array, checked flags)`` of table ``t`` for the lookup kernel
    (:meth:`Table.lookup_arrays`), or ``None``: every read of ``t`` goes through Python."""
    return t.lookup_arrays()


def _filter_says(f, keys: list[bytes]) -> list[bool]:
    """Filter ``f``'s answers for ``keys`` through the family's public contract (it hashes the
    keys its own way): ``might_contain`` for one key (cheaper than a batch of one),
    ``might_contain_many`` for more. Cost: one kernel call."""
    if len(keys) == 1:
        return [bool(f.might_contain(keys[0]))]
    return f.might_contain_many(keys).tolist()


class Directory:
    """The probe directory of one version's ``slots`` (TableRefs, in probe order)."""

    def __init__(self, slots, levels, store_filter=None):
        self.slots = slots
        self.levels = levels
        #: ``(record words, array)`` of the store filter covering every table of ``slots``
        #: (:mod:`bloomdb.lsm.store_filter`), or None: written into the header's ``SF`` record
        self._sf = store_filter
        self._lock = threading.Lock()
        #: the arrays the lookup kernel reads each table through (their addresses are in the
        #: slot's S_T* words) are the table's own for its whole life (:meth:`Table.lookup_arrays`),
        #: and ``slots`` holds the tables: so the mapped files stay open while this directory
        #: can be probed (a map lives as long as any array made on it). No tuple per slot is
        #: kept (one tracked object per table and directory, see :func:`_keep`).
        #: the filters' arrays the records point at (each its filter's own, in place): held here so
        #: they outlive every directory array a kernel may still probe
        self._held: list = []
        self.array = self._build(None)

    # -- building -----------------------------------------------------------------------------
    def _build(self, counters):
        slots = self.slots
        nslots = max(1, len(slots))
        plans = [self._plan(r.table) for r in slots]  # per slot: see _plan
        nparts = sum(len(p[2]) for p in plans if p[0] == L.PARTITIONED)
        bounds = []  # per slot: min key, max key, then its partitions' last keys
        firsts = []  # per slot: where its min key is in ``bounds``
        for r, plan in zip(slots, plans):
            firsts.append(len(bounds))
            bounds += (r.info.min_key, r.info.max_key)
            if plan[0] == L.PARTITIONED:
                bounds += r.table.partitions[0]
        bnd = b"".join(bounds)
        m = L.SLOTS + L.STRIDE * nslots + L.PSTRIDE * nparts
        d = np.zeros(m + (len(bnd) + 7) // 8 + 1, np.int64)
        byte_base = 8 * m
        d.view(np.uint8)[byte_base : byte_base + len(bnd)] = np.frombuffer(bnd, np.uint8)
        d[L.WORDS] = d.shape[0]
        d[L.N_L0] = len(self.levels[0])
        d[L.NUM_LEVELS] = len(self.levels) - 1
        s = len(self.levels[0])
        for j in range(1, len(self.levels)):
            d[L.LEVEL_FIRST + 2 * (j - 1)] = s
            d[L.LEVEL_COUNT + 2 * (j - 1)] = len(self.levels[j])
            s += len(self.levels[j])
        d[L.ARRAY_BASE] = d[L.BYTE_BASE] = byte_base  # no filter array is copied in (F_MAPPED records)
        if counters is not None:
            d[L.COUNTERS] = counters
        if self._sf is not None:  # a new array: published with it
            d[L.SF : L.SF + L.RSTRIDE] = self._sf[0]
            self._held.append(self._sf[1])
        if slots:
            self._fill_slots(d, plans, bounds, firsts, byte_base)
        return d

    def _fill_slots(self, d, plans, bounds, firsts, byte_base) -> None:
        """Every slot's words as numpy column writes (one per field, not one Python step per
        slot and field: ~10 us a slot before), the per-table words cached on the table
        (:func:`_table_words`); then the filter records and partition tables."""
        slots = self.slots
        n = len(slots)
        S = d[L.SLOTS : L.SLOTS + L.STRIDE * n].reshape(n, L.STRIDE)
        U = S.view(np.uint64)
        lens = np.fromiter(map(len, bounds), np.int64, len(bounds))
        starts = np.full(len(bounds), byte_base, np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        starts[1:] += byte_base
        at = np.array(firsts, np.int64)
        U[:, L.S_MIN_W : L.S_MIN_W + 2] = _prefix_words_many([r.info.min_key for r in slots])
        U[:, L.S_MAX_W : L.S_MAX_W + 2] = _prefix_words_many([r.info.max_key for r in slots])
        S[:, L.S_MIN_OFF], S[:, L.S_MIN_LEN] = starts[at], lens[at]
        S[:, L.S_MAX_OFF], S[:, L.S_MAX_LEN] = starts[at + 1], lens[at + 1]
        _make_unopened_words([r.table for r in slots])
        _copy_filters_together([r.table for r in slots])
        words = [_table_words(r.table, _read_state(r.table)) for r in slots]
        S[:, _READ_COLS] = [w[0] for w in words]
        filt = [i for i, p in enumerate(plans) if p[0] == L.FILTER]
        if filt:  # a filter the kernel read: the table's own words (its map holds the array)
            recs = [(p, None) if isinstance(p, np.ndarray) else _record_words(slots[i].table, p)
                    for i, p in ((i, plans[i][1]) for i in filt)]
            S[filt, L.S_REC : L.S_REC + L.RSTRIDE] = [w[: L.RSTRIDE] for w, _ in recs]
            self._held.extend(a for _, a in recs if a is not None)
        pt = L.SLOTS + L.STRIDE * n
        u64 = d.view(np.uint64)
        for i, (kind, rec, parts) in enumerate(plans):
            if kind != L.PARTITIONED:
                continue
            b = L.SLOTS + L.STRIDE * i
            d[b + L.S_REC + L.R_OFF] = pt
            d[b + L.S_REC + L.R_LEN] = len(parts)
            for j, ((prec, state), last) in enumerate(zip(parts, slots[i].table.partitions[0])):
                u64[pt + L.P_LAST_W : pt + L.P_LAST_W + 2] = prefix_words(last)
                d[pt + L.P_LAST_OFF] = starts[firsts[i] + 2 + j]
                d[pt + L.P_LAST_LEN] = len(last)
                if prec is not None:
                    self._put(d, pt + L.P_REC, prec)
                d[pt + L.P_STATE] = state
                pt += L.PSTRIDE
        S[:, L.S_KIND] = [p[0] for p in plans]

    def set_store_filter(self, words, arr) -> None:
        """Point the header's ``SF`` record at a store filter that covers every table of this
        directory (``words``: its :func:`_words_of` record as int64, ``arr`` its array, held from
        now on): the record's words first, its family word last, so a concurrent lookup reads a
        whole record or none (a lookup that read none checks the tables' filters as before)."""
        with self._lock:
            self._held.append(arr)
            self._sf = (words, arr)
            d = self.array
            d[L.SF + 1 : L.SF + L.RSTRIDE] = words[1:]
            d[L.SF + L.R_FAM] = words[L.R_FAM]

    def wired(self, s: int) -> bool:
        """Whether the lookup kernel reads slot ``s``'s table file itself (its address is in the
        slot); False for a table not opened yet or read through Python. One array read."""
        return self.array[L.SLOTS + L.STRIDE * s + L.S_TBUF] != 0

    def wire(self, s: int) -> None:
        """Point slot ``s`` at its table's opened file: a table opened after this directory was
        built (a lazy table, :mod:`..sstable.lazy`, whose slot sends every read to Python until
        then). Its read-state words are written before the file's address (``S_TBUF``, the word
        the lookup kernel tests first), so a concurrent lookup reads all of them or none. Nothing
        to do when the slot reads its table already or the table is not open."""
        t = self.slots[s].table
        pin = _read_state(t)
        b = L.SLOTS + L.STRIDE * s
        if pin is None or self.wired(s):
            return
        budget, fw = t.seek_budget, t.probe_filter_words
        if budget is not None and pin[0].dtype == np.uint8 and pin[1].dtype == np.int64 and pin[2].dtype == np.uint8:
            row = np.empty(_W_BUDGET, np.int64)  # its words at once (what _make_words does for a table seen before)
            _table_words_kernel(pin[0], pin[1], pin[2], budget, _NO_WORDS if fw is None else fw, row)
            t.probe_slot_words, t.probe_slot_index = row, pin[1]  # the next directories take them as they are
        else:
            row, _ = _table_words(t, pin)
        with self._lock:
            d = self.array
            if d[b + L.S_TBUF] == 0:
                d[b + L.S_TLEN : b + L.S_TFW + 1] = row[1:]
                d[b + L.S_TBUF] = row[0]

    def _put(self, d, r: int, rec) -> None:
        """Write filter record ``rec`` at word ``r`` of ``d`` with its array referenced in place
        (:data:`.layout.F_MAPPED`: nothing copied); the array is held while this directory lives."""
        self._held.append(rec[1])
        _put_mapped(d, r, rec)

    def _plan(self, t):
        """How the slot of table ``t`` is laid out: ``(kind, record, partitions)`` with, for a
        partitioned table, per partition ``(record, state)``: ``(record, L.P_LOADED)`` when the
        kernel checks it, else ``(None, state)`` (``L.P_LAZY``, ``L.P_OTHER``, ``L.P_DAMAGED``)."""
        if t.filter_bytes == 0:
            return L.NONE, None, None
        fw = kernel_read(t)
        if fw is not None:  # read by the probe kernel: its record, in place in the table's map
            return L.FILTER, fw, None
        if not t.filter_loaded:
            return L.LAZY, None, None
        f = t.filter()
        if t.partitions is not None:
            parts = []
            for i in range(len(t.partitions[2])):
                pf = t.loaded_partition(i)
                rec = kernel_record(pf)
                if rec is not None:
                    parts.append((rec, L.P_LOADED))
                else:
                    state = L.P_LAZY if pf is None else L.P_OTHER
                    if pf is False:
                        state = L.P_DAMAGED
                    parts.append((None, state))
            return L.PARTITIONED, None, parts
        rec = kernel_record(f)
        if rec is not None:
            return L.FILTER, rec, None
        if f is None:  # damaged: fail open
            return L.NONE, None, None
        return L.OTHER, None, None

    # -- the Python side of a probe -----------------------------------------------------------
    def check(self, s: int, key: bytes):
        """Slot ``s`` handed over by the kernel: ``True`` may contain, ``False`` not here (both
        count as a filter check), ``None`` no usable filter (not counted). Loads what is missing."""
        return self.check_many(s, [key])[0]

    def load(self, s: int) -> bool:
        """Read slot ``s``'s filter into the directory if it is not there yet (``L.LAZY``): True
        when the kernel now checks the slot itself (the filter is copied in, or there is none
        usable), so a lookup resumes the kernel at ``s`` instead of asking the filter in Python;
        False when Python must answer (:meth:`check_many`: a family the kernel does not run, a
        partitioned table)."""
        b = L.SLOTS + L.STRIDE * s
        if self.array[b + L.S_KIND] == L.LAZY:
            with self._lock:
                if self.array[b + L.S_KIND] == L.LAZY:
                    self._load_table(s, self.slots[s].table, b)
        return int(self.array[b + L.S_KIND]) in (L.FILTER, L.NONE)

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
        rec = kernel_record(f)
        if rec is not None:
            self._put(d, b + L.S_REC, rec)
            d[b + L.S_KIND] = L.FILTER  # last: the kernel reads the kind first
            return
        if f is None and t.partitions is None:
            d[b + L.S_KIND] = L.NONE
            return
        # another family, or partitioned: lay the directory out again, once
        self.array = self._build(d[L.COUNTERS].copy())

    def _partition(self, s, t, i: int):
        """Partition ``i`` of slot ``s``'s table, read on first use (``None``: damaged); a
        partition the kernel can check is recorded in the directory (in place) for the next lookups."""
        f = t.partition_filter(i)
        d = self.array
        b = L.SLOTS + L.STRIDE * s
        if d[b + L.S_KIND] == L.PARTITIONED:
            e = d[b + L.S_REC + L.R_OFF] + L.PSTRIDE * i
            with self._lock:
                if d[e + L.P_STATE] == L.P_LAZY:
                    rec = kernel_record(f)
                    if rec is not None:
                        self._put(d, e + L.P_REC, rec)
                        d[e + L.P_STATE] = L.P_LOADED  # last
                    else:
                        d[e + L.P_STATE] = L.P_DAMAGED if f is None else L.P_OTHER
        return f
