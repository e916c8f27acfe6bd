"""The store's facade: :class:`DB` (open, put, get, delete, write, multi_get, scan, snapshot, ...).

Concurrency: one lock serialises writers and state changes; readers never lock. All the state a
reader needs is one tuple ``(memtable, immutable memtable, version)`` swapped atomically, in an
order that never hides data (the flushed table is installed in the same swap that drops the
immutable memtable). Flushes and compactions run in two background threads, a flush never
queued behind a compaction (or inline in the writer with ``Options(background_compaction=False)``).

Durability: a write is appended to the WAL (one record per batch) before it is applied; with
``sync=True`` the WAL is fsynced before the call returns. Any I/O failure while writing the WAL,
a table or the manifest puts the store in an error state: later writes raise the error (reads
keep working) -- after a failed fsync the file's state is unknown, so nothing may be built on it.

Layers (LevelDB's ``db_impl`` split the same way): :class:`DB` is the front that routes calls and
owns the write path (WAL, memtables); opening and recovery are :mod:`.recovery`'s, the store's
history -- manifest, file numbers, current version -- :class:`~.version_set.VersionSet`'s,
flush/compaction scheduling and the thread :class:`~.background.Background`'s, and reads below
the memtables the probe layer's (:class:`.probe.lookup.Reads`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import Counter
from itertools import repeat

import numpy as np

from ..errors import BloomDBError, InvalidArgument, KeyTypeError, StoreClosed
from . import checkpoint, logrun, opening, properties, quickget, rangedel, store_filter, wal
from .background import Background, TaskContext
from .batch import key_bytes as _key
from .compaction import executor
from .dictlike import DictForms
from .iterator import Iterator, IteratorClosed, half_open
from .prefixed import PrefixedDB
from .raw_iterator import RawIterator
from .keylist import key_list, memtables_disjoint
from .fs import RealFS
from .memtable import ABSENT as _ABSENT_HERE, MemTable
from .options import MAX_LEVELS, Options
from .probe import layout
from .probe.lookup import Reads
from .sstable import DELETED, MISSING
from .cache import cache_stats, make_cache
from .version import TableRef, Version
from .version_set import VersionSet
from .writer import WritePath

from .rangedel import MAX_SEQ  # noqa: E402  (re-exported)


class Snapshot:
    """A consistent read view (``seq``): pass it to ``get``/``multi_get``/``iterator``/``scan``.
    Release with :meth:`close` or :meth:`release` (plyvel's names; or a ``with`` block; garbage
    collection releases it too). A released snapshot no longer holds the versions it saw, so
    every read through it raises :class:`StoreClosed` (a ``RuntimeError``, as plyvel's) instead
    of answering from newer data."""

    def __init__(self, db: "DB", seq: int):
        self.seq = seq
        self._db = db
        self._finalizer = weakref.finalize(self, db._release_snapshot, seq)

    def close(self) -> None:
        self._finalizer()

    release = close

    def seq_for(self, db: "DB") -> int:
        """This snapshot's sequence number for a read of ``db``: raises :class:`StoreClosed` once
        released, :class:`InvalidArgument` for a snapshot of another store."""
        if not self._finalizer.alive:
            raise StoreClosed("the snapshot was released: its versions may be gone")
        if db is not self._db:
            raise InvalidArgument(f"a snapshot of {self._db.path!r} passed to a read of {db.path!r}")
        return self.seq

    def get(self, key, default=None):
        """``db.get(key, default)`` as of this snapshot (plyvel's ``Snapshot.get``)."""
        return self._db.get(key, default, snapshot=self)

    def iterator(self, **kwargs) -> Iterator:
        """``db.iterator(..., snapshot=self)`` (plyvel's ``Snapshot.iterator``)."""
        return self._db.iterator(snapshot=self, **kwargs)

    def raw_iterator(self) -> RawIterator:
        """``db.raw_iterator(snapshot=self)`` (plyvel's ``Snapshot.raw_iterator``)."""
        return self._db.raw_iterator(snapshot=self)

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DB(WritePath, DictForms):
    """An LSM key-value store in a folder. Keys and values are bytes (str keys become UTF-8);
    keys are ordered bytewise. Open with :meth:`DB.open` (or ``DB(path, options)``); use as a
    context manager. plyvel's methods and rocksdict's mapping forms (``db[key]``, ``keys()``,
    ...: :mod:`.dictlike`) work too."""

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, options: Options | None = None, read_only: bool = False, **fields) -> "DB":
        """Open (or create) the store at ``path``: recovers the WAL, cleans files a crash left.

        A store is created only in a new or empty folder (its identity file ``BLOOMDB`` is
        written first, :mod:`.identity`); a folder holding anything else -- a LevelDB or RocksDB
        store, any file -- is refused, untouched. The store deletes only files its manifest
        history proves it wrote (see :meth:`_recover`).

        Raises :class:`CorruptionError` naming the damaged file, :class:`InvalidArgument` for
        bad options, a folder that is not a store and not empty, or a missing/existing store
        against ``create_if_missing``/``error_if_exists``. A refused open creates nothing.

        ``read_only=True``: no lock, nothing written, the store as of the open, beside a writer
        (:mod:`.readonly`); writes raise :class:`StoreReadOnly`.

        ``**fields``: :class:`Options` fields given by name, over ``options`` (plyvel's form:
        ``DB.open(path, create_if_missing=False, block_size=8192)``); an unknown name raises
        :class:`InvalidArgument` listing the fields.
        """
        return cls(path, options, read_only, **fields)

    def __init__(self, path: str | os.PathLike, options: Options | None = None, read_only: bool = False, **fields):
        """``DB(path, options, read_only, **fields)`` is :meth:`open` (rocksdict's ``Rdict(path)``,
        plyvel's ``DB(path, create_if_missing=True)`` forms)."""
        if not isinstance(read_only, bool):
            raise InvalidArgument(f"read_only must be True or False, got {read_only!r}")
        if options is not None and not isinstance(options, Options):
            raise InvalidArgument(f"options must be a bloomdb.lsm.Options, got {type(options).__name__}")
        path = os.fspath(path)
        options = (options or Options()).with_fields(fields).validated()
        self.path = path
        self.read_only = read_only
        self.options = options
        self._fs = options.fs or RealFS()
        self._gate = quickget.install(self, DB.get)  # db.get: a builtin over the gate, where it can be made
        self._lock = threading.RLock()
        self._snapshots: Counter = Counter()
        self._keep_old = False  # a snapshot is live: memtables keep the versions they replace
        self._bg_error: BaseException | None = None
        self._switch_due = None  # a reopen's big memtable, switched out by the flush thread (:func:`.recovery._resume`)
        self._closed = False
        self._closing = False
        self._cache = make_cache(options, read_only)  # the read route: memory-mapped, or the bounded cache (:mod:`.cache`)
        self._stats = Counter()
        self._reads = Reads()
        self._probe_base = np.zeros(layout.N_COUNTERS, np.int64)
        self._iterators: weakref.WeakSet = weakref.WeakSet()
        self._vs = VersionSet(self._fs, path, self._cache, options.filter_file, options.store_filter, read_only)
        self._bg = Background(self, options.background_compaction and not read_only)
        self._cond = self._bg.cond  # its notifies start the background threads when they have not started
        opening.open_store(self, read_only)  # recovery, or a read-only load; errors name the path
        self._regate()  # the recovered memtable may hold range tombstones
        if not read_only:
            self._reads.on_seek = self._bg.seek_exhausted  # LevelDB's seek compaction (probe/seeks.py)
        self._bg.start()  # read-only: only a store-filter build, when no saved file covers the tables

    def _release_lock(self) -> None:
        self._lockfile.release()

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    @property
    def _version(self) -> Version:
        """The current version (owned by the version set)."""
        return self._vs.current

    def _new_file_number(self) -> int:
        """A new file number reserved by a durable manifest (:meth:`VersionSet.new_file_number`);
        a failed manifest write stops writes (:meth:`_fail`) and raises. Waits while an edit's
        manifest is being written if the number needs a manifest write of its own."""
        with self._lock:
            while self._vs.writing and self._vs.needs_reservation():
                self._cond.wait()
            try:
                return self._vs.new_file_number(self._seq)
            except BaseException as e:
                self._fail(e)
                raise opening.as_store_error(self.path, e, opening=False)

    def _write_table(self, mem: MemTable, level: int, place=None) -> TableRef:
        """Write ``mem`` as a new table for ``level`` (a flush, or recovery's replayed logs);
        ``place(arrays)``, if given, chooses the level once the entries are sorted."""
        arrays = logrun.table_arrays(mem, self._fs, self._file(f"{mem.log_number:06d}.log")) or mem.table_arrays(indexed=True)
        if place is not None:
            level = place(arrays)
        last = all(not self._version.levels[i] for i in range(level + 1, MAX_LEVELS))
        number = self._new_file_number()
        info, table = executor.write_table(TaskContext(self, 0), number, arrays, level, last, mem.rdels)
        self._stats["bytes_flushed"] += info.file_size
        return TableRef(level, info, table)

    # -- closing ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the background thread (after its current step) and close the files. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closing = True
            self._cond.notify_all()
        self._bg.stop()
        for it in list(self._iterators):
            it.close()
        with self._lock:
            self._closed = True
            self._state = opening.Closed(self.path)  # every later read raises StoreClosed
            try:
                if not self.read_only and self._bg_error is None:
                    self._vs.save_filters()  # the next open reads no table file for a key its filter rejects
                if self._log is not None:  # None: read-only
                    self._log.close()
            finally:
                self._vs.release()  # the tables' mapped files close now, not at the next gc
                self._release_lock()

    def __enter__(self) -> "DB":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            if not self._closed:
                self.close()

    # -- writing (put, delete, write, write_batch: :class:`.writer.WritePath`) ----------------
    def _make_room(self) -> None:
        """Called with the lock held: switch to a fresh memtable when full -- past
        :meth:`_room`'s limit while the previous one is being flushed, then waiting for that
        flush (and for L0 to drain below ``level0_stop``)."""
        o = self.options
        while True:
            self._check_writable()
            if self._mem.bytes < o.memtable_bytes:
                return
            if self._imm is not None or len(self._version.levels[0]) >= o.level0_stop:
                if self._bg.thread is None:
                    self._flush_imm()
                    self._compact_inline()
                elif self._mem.bytes < self._room():
                    return  # the flush runs: write on into this memtable
                else:
                    self._cond.wait()
                continue
            if self._vs.writing and self._vs.needs_reservation():  # the switch's log number waits for it
                self._cond.wait()
                continue
            self._switch_memtable()
            if self._bg.thread is None:
                self._flush_imm()
                self._compact_inline()
            return

    def _compact_inline(self) -> None:
        """The compactions the policy asks for now, in the writer (``background_compaction=False``):
        a failed one stopped the store (:meth:`_fail`) and raises as our error, like a failed flush."""
        try:
            self._bg.compact_inline()
        except BaseException as e:
            raise opening.as_store_error(self.path, e, opening=False)

    def _switch_memtable(self) -> None:
        n = self._new_file_number()
        log = wal.LogWriter(self._fs, self._file(f"{n:06d}.log"), n, self.options.wal_buffer_bytes)
        old = self._log
        self._log = log
        self._stats["wal_bytes"] += old.bytes
        try:
            old.close()
        except BaseException as e:
            self._fail(e)
            raise opening.as_store_error(self.path, e, opening=False)
        self._imm = self._mem
        self._mem = MemTable(n, self._seq + 1)
        self._state = (self._mem, self._imm, self._version)
        self._regate()  # the new memtable holds no range tombstone; gets see the immutable one
        self._cond.notify_all()

    # -- installing what background work made ------------------------------------------------
    def _flush_imm(self) -> None:
        """Write the immutable memtable as a table and install it: in L0, or deeper when its keys
        overlap nothing there (:meth:`.background.Background.flush_level`; the compaction lock is
        then held until the install, so no compaction can make the choice wrong meanwhile)."""
        imm = self._imm
        if imm is None:
            return
        held = []  # the compaction lock, when flush_level took it
        try:
            ref = self._write_table(imm, 0, lambda arrays: self._bg.flush_level(imm, arrays, held))
            self._install(set(), [ref], drop_imm=True)
        except BaseException as e:
            self._fail(e)
            raise opening.as_store_error(self.path, e, opening=False)
        finally:
            if held:
                self._bg.compaction_lock.release()

    def _fail(self, e: BaseException) -> None:
        """Stop accepting writes after an I/O failure in a flush or compaction."""
        with self._lock:
            if self._bg_error is None:
                self._bg_error = e
            self._cond.notify_all()

    def _install(self, deleted: set[int], added: list[TableRef], drop_imm: bool = False) -> None:
        """Make the edit durable (manifest), then visible (one state swap); then delete old files.
        The manifest is written outside the store's lock (writers go on meanwhile; one edit at a
        time, :meth:`VersionSet.prepare`); what it records was taken under the lock."""
        vs = self._vs
        with self._lock:
            while vs.writing:
                self._cond.wait()
            if self._bg_error is not None:  # the other thread failed meanwhile: nothing is built on it
                raise BloomDBError(f"{self.path}: the store stopped after an I/O error: {self._bg_error!r}")
            # logs older than the oldest unflushed memtable's are obsolete (not the current
            # memtable's: a compaction may finish while an immutable memtable awaits its flush)
            live_log = self._mem.log_number if (drop_imm or self._imm is None) else self._imm.log_number
            edit = vs.prepare(deleted, added, live_log, self._seq)
        try:
            vs.write_edit(edit)
        except BaseException:
            with self._lock:
                vs.abort(edit)
                self._cond.notify_all()
            raise
        with self._lock:
            old = vs.commit(edit)
            new = vs.current
            if old._probe is not None:
                self._probe_base += old.refresh_probe()[0][layout.COUNTERS]
            imm = self._imm
            if drop_imm:
                self._imm = None
            self._state = (self._mem, self._imm, new)
            if drop_imm and imm is not None:
                self._fs.remove(self._file(f"{imm.log_number:06d}.log"))
            self._regate()  # the memtable's limit follows the immutable one and L0 (:meth:`_room`)
            self._cond.notify_all()
        vs.remove_tables(deleted, old, new)

    def _release_snapshot(self, seq: int) -> None:
        with self._lock:
            self._snapshots[seq] -= 1
            if self._snapshots[seq] <= 0:
                del self._snapshots[seq]
            self._keep_old = bool(self._snapshots)

    # -- reading ------------------------------------------------------------------------------
    def get(self, key, default=None, snapshot: Snapshot | None = None):
        """The value of ``key`` (or ``default``), as of ``snapshot`` if given.

        Cost: one dict lookup per memtable, then ONE kernel call that hashes the key once and
        probes the filter of every table that may hold it (L0 newest first, then one table per
        level by key range); only a table whose filter says "may contain" is read (one data
        block, found through the in-memory index). A plain get in the common state tests one gate,
        ``_quick`` (``WritePath._regate``); a store's own ``db.get`` is that path in C (:mod:`.quickget`).
        """
        q = self._quick  # (memtable's dict, version) when a plain get needs nothing else (WritePath._regate)
        if q is not None and snapshot is None and type(key) is bytes:
            latest, ver = q  # the value (None: a tombstone); an empty memtable (a reopened store's) is not asked
            if latest and (v := latest.get(key, _ABSENT_HERE)) is not _ABSENT_HERE:
                return default if v is None else v
        else:
            if type(key) is not bytes:
                key = _key(key)
            if snapshot is not None:
                snap = snapshot.seq_for(self)  # released, or another store's: raises
            mem, imm, ver = state = self._state
            if mem.pending_keys or (imm is not None and imm.pending_keys):  # batch puts not yet in the dicts
                self._fold(mem, imm)
            if mem.rdels or ver.range_dels or (imm is not None and imm.rdels):
                if c := rangedel.covered(self, state, snapshot, (key,)):
                    return default if c[0] is None else c[0]
            if snapshot is not None:
                v = mem.value(key, snap)
                if v is _ABSENT_HERE and imm is not None:
                    v = imm.value(key, snap)
                if v is not _ABSENT_HERE:
                    return default if v is None else v
                r = self._reads.get(ver, key, snap)
                return default if r is MISSING or r is DELETED else r
            v = mem.latest.get(key, _ABSENT_HERE)
            if v is _ABSENT_HERE and imm is not None:
                v = imm.latest.get(key, _ABSENT_HERE)
            if v is not _ABSENT_HERE:
                return default if v is None else v
        # the common read: one kernel call, no Python frame in between
        p = ver._probe or ver.probe()  # (array, table bytes, its address, find): held for the call
        r = p[3](key)  # probe.find: the value, None (missing or deleted) or a slot handed over
        if r is None:
            return default
        if type(r) is bytes:
            return r
        return quickget.finish(self, ver, key, r, default)

    def multi_get(self, keys, default=None, snapshot: Snapshot | None = None) -> list:
        """Values of ``keys`` in order (``default`` where absent). The filter checks of the whole
        batch are done by one kernel call (one hash per key, the filter loads of many keys
        overlapped: :mod:`.probe._batch_kernels`); the packing of the keys and the memtable
        check are C-speed passes (``bytes.join``, ``isdisjoint``; a per-key ``map`` only when a
        memtable holds one of the keys). One key (``str``, ``bytes``) instead of an iterable of
        keys raises :class:`KeyTypeError`."""
        if isinstance(keys, (str, bytes, bytearray, memoryview)):
            raise KeyTypeError(f"multi_get takes an iterable of keys, not one {type(keys).__name__} key")
        keys, joined = key_list(keys)
        n = len(keys)
        mem, imm, ver = state = self._state
        snap = MAX_SEQ if snapshot is None else snapshot.seq_for(self)
        if mem.pending_keys or (imm is not None and imm.pending_keys):  # batch puts not yet in the dicts
            self._fold(mem, imm)
        if memtables_disjoint(mem, imm, keys):  # the common case of a big batch: one C pass, no list
            out = [default] * n
            if n:
                self._reads.get_many(ver, keys, snap, out, range(n), joined)
        else:
            if snapshot is None:  # values (None: a tombstone), or _ABSENT_HERE
                found = list(map(mem.latest.get, keys, repeat(_ABSENT_HERE, n)))
                if imm is not None:
                    get = imm.latest.get
                    found = [v if v is not _ABSENT_HERE else get(k, v) for k, v in zip(keys, found)]
            else:
                found = [mem.value(k, snap) for k in keys]
                if imm is not None:
                    found = [v if v is not _ABSENT_HERE else imm.value(k, snap) for k, v in zip(keys, found)]
            out = [default if v is None or v is _ABSENT_HERE else v for v in found]
            todo = [i for i, v in enumerate(found) if v is _ABSENT_HERE]
            if todo:
                self._reads.get_many(ver, [keys[i] for i in todo], snap, out, todo)
        for i, v in (rangedel.covered(self, state, snapshot, keys) or {}).items():  # range-deleted keys
            out[i] = default if v is None else v
        return out

    def __contains__(self, key) -> bool:
        return self.get(key, _ABSENT_HERE) is not _ABSENT_HERE

    def snapshot(self) -> Snapshot:
        """A consistent view as of now; versions it can see are kept until it is released."""
        with self._lock:
            if self._closed:
                raise StoreClosed(f"{self.path}: the store is closed")
            seq = self._seq
            self._snapshots[seq] += 1
            self._keep_old = True
            return Snapshot(self, seq)

    def iterator(self, start=None, stop=None, include_start: bool = True, include_stop: bool = False,
                 prefix=None, reverse: bool = False, include_key: bool = True, include_value: bool = True,
                 snapshot: Snapshot | None = None) -> Iterator:
        """A cursor over the keys in the range (plyvel's signature and semantics, see
        :mod:`.iterator`), as of ``snapshot`` or of now. Cost: the memtables' entries in the
        range are copied under the lock and the version is held (so "now" needs no snapshot);
        tables are read a block at a time as the cursor moves."""
        lo, hi = half_open(None if start is None else _key(start), None if stop is None else _key(stop),
                           include_start, include_stop, None if prefix is None else _key(prefix))
        with self._lock:
            if self._closed:
                raise IteratorClosed(f"{self.path}: the store is closed")
            snap = self._seq if snapshot is None else snapshot.seq_for(self)
            px = self.options.prefix_extractor
            q = None if prefix is None or px is None else px.for_prefix(lo)
            view = rangedel.view(self._state, lo, hi, snap, None if q is None else (px.name, q, self._stats, lo, hi))
        it = Iterator(view, lo, hi, reverse, include_key, include_value)
        self._iterators.add(it)
        return it

    def raw_iterator(self, snapshot: Snapshot | None = None) -> RawIterator:
        """plyvel's ``db.raw_iterator()``: a cursor on one entry at a time over the whole store
        (as of ``snapshot`` or of now), invalid until a seek (:mod:`.raw_iterator`)."""
        return RawIterator(self.iterator(snapshot=snapshot))

    def prefixed_db(self, prefix) -> PrefixedDB:
        """plyvel's ``db.prefixed_db(prefix)``: a view of the keys under ``prefix``, named without
        it (:mod:`.prefixed`)."""
        return PrefixedDB(self, prefix)

    def scan(self, start=None, end=None, reverse: bool = False, snapshot: Snapshot | None = None) -> Iterator:
        """``(key, value)`` pairs with ``start <= key < end`` in key order (descending with
        ``reverse``), as of one consistent point (``snapshot`` or the call's start): the bulk form
        of :meth:`iterator` (no Python frame per pair)."""
        return self.iterator(start, end, reverse=reverse, snapshot=snapshot).drain()

    def __iter__(self):
        return self.iterator(include_value=False).drain()

    # -- maintenance --------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the memtable to a table now (and wait for it): in L0, or deeper when its keys
        overlap nothing above (``Options.max_flush_level``)."""
        with self._lock:
            while True:
                self._check_writable()
                if self._imm is not None:
                    if self._bg.thread is None:
                        self._flush_imm()
                    else:
                        self._cond.wait()
                elif len(self._mem) == 0:
                    return
                elif self._vs.writing and self._vs.needs_reservation():  # see _make_room
                    self._cond.wait()
                else:
                    break
            self._switch_memtable()
            if self._bg.thread is None:
                self._flush_imm()
                return
            while self._imm is not None:
                self._cond.wait()
                self._check_writable()

    def compact_range(self, start=None, end=None) -> None:
        """Flush, then merge every table overlapping ``[start, end]`` down level by level until
        that range lives in one level (deletions and overwritten versions are dropped there)."""
        self.flush()
        lo = None if start is None else _key(start)
        hi = None if end is None else _key(end)
        self._bg.compact_range(lo, hi)

    def checkpoint(self, dest) -> str:
        """A consistent, openable copy of the live store in the new folder ``dest`` (:mod:`.checkpoint`)."""
        return checkpoint.create(self, dest)

    def wait_for_compactions(self) -> None:
        """Block until no flush or compaction is pending (tests and benchmarks)."""
        self._bg.wait_idle()

    def get_property(self, name):
        """``"bloomdb.stats"``, ``"bloomdb.num-files-at-level0"``, ... or None (:mod:`.properties`)."""
        return properties.get(self, name)

    def approximate_size(self, start=None, end=None) -> int:
        """Bytes of table files holding keys in ``[start, end)`` (plyvel's; no memtable data)."""
        return properties.approximate_size(self, *(None if k is None else _key(k) for k in (start, end)))

    def approximate_sizes(self, *ranges) -> list[int]:
        """plyvel's: :meth:`approximate_size` of each ``(start, end)`` range."""
        return [self.approximate_size(start, end) for start, end in ranges]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (plyvel's ``db.closed``)."""
        return self._closed

    @property
    def name(self) -> str:
        """The store's folder (plyvel's ``db.name``)."""
        return self.path

    def stats(self) -> dict:
        """Counters and shape: filter checks / useful (rejections) / positives / true positives,
        damaged filters, data blocks read, block-cache hits, tables and bytes per level, write
        amplification (table bytes written / user bytes logged), read amplification (data blocks
        read per key looked up in the tables: ~1 for present keys, ~the false-positive rate for
        absent ones), the memory held by filters (read so far, in place; the store filter's too) and
        by the tables' indexes, and the store filter's fields (:func:`.store_filter.stats`)."""
        mem, imm, ver = self._state
        counters = self._probe_base.copy()
        if ver._probe is not None:
            counters += ver.refresh_probe()[0][layout.COUNTERS]
        st = self._stats
        checks, useful, positive, blocks, lookups, found, sf_checks, sf_neg = self._reads.totals(counters)
        refs = ver.all_refs()
        held = ver.memory()
        wal_bytes = st["wal_bytes"] + (self._log.bytes if self._log is not None else 0)
        logged = max(1, wal_bytes)
        return {
            "filter_checks": checks,
            "filter_useful": useful,
            "filter_positive": positive,
            "true_positive": found,
            "filter_useful_ratio": useful / checks if checks else 0.0,
            "filters_damaged": sum(1 for r in refs if r.table.filter_damaged),
            "data_blocks_read": blocks,
            "block_cache_hits": self._cache.hits if self._cache else 0,
            "block_cache_misses": self._cache.misses if self._cache else 0,
            "tables_per_level": [len(level) for level in ver.levels],
            "bytes_per_level": [sum(r.info.file_size for r in level) for level in ver.levels],
            "filter_bytes": sum(r.table.filter_bytes for r in refs),
            "compactions": st["compactions"], "prefix_checks": st["prefix_checks"], "prefix_skips": st["prefix_skips"],
            "write_amplification": (st["bytes_flushed"] + st["bytes_compacted"]) / logged if wal_bytes else 0.0,
            "table_lookups": lookups,
            "read_amplification": blocks / max(1, lookups),
            "filter_memory_bytes": held[0], **store_filter.stats(self._vs.store_filter, ver, sf_checks, sf_neg),
            "index_memory_bytes": held[1],
            "memtable_entries": len(mem) + (len(imm) if imm is not None else 0),
            "last_sequence": self._seq, **cache_stats(self._cache),
        }

