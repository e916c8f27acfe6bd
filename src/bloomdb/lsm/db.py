"""The store's facade: :class:`DB` (open, put, get, delete, write, multi_get, scan, snapshot, ...).

Concurrency: one lock serialises writers and state changes; readers never lock. All the state a
reader needs is one tuple ``(memtable, immutable memtable, version)`` swapped atomically, in an
order that never hides data (the flushed table is installed in the same swap that drops the
immutable memtable). Flushes and compactions run in one background thread (or inline in the
writer with ``Options(background_compaction=False)``).

Durability: a write is appended to the WAL (one record per batch) before it is applied; with
``sync=True`` the WAL is fsynced before the call returns. Any I/O failure while writing the WAL,
a table or the manifest puts the store in an error state: later writes raise the error (reads
keep working) -- after a failed fsync the file's state is unknown, so nothing may be built on it.

Layers: the store's history -- the manifest, file numbers, the current version and the recovery of
the table set -- is :class:`~.version_set.VersionSet`'s; :class:`DB` routes calls, owns the WAL,
the memtables, the background thread and the read path (the probe layer, :mod:`.probe`).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import Counter
from typing import Any

import numpy as np

from ..checksum import crc32c
from ..errors import BloomDBError, CorruptionError, InvalidArgument, KeyTypeError
from . import identity, wal
from .iterator import Iterator, IteratorClosed, View, half_open
from .compaction import executor, policy
from .fs import RealFS
from .memtable import MemTable
from .options import MAX_LEVELS, Options
from .probe import _probe_kernels as K
from .probe import layout
from .sstable import DELETED, MISSING, Table
from .sstable.builder import build_table_arrays, pack_bytes
from .sstable.reader import BlockCache
from .version import TableRef, Version
from .version_set import VersionSet

MAX_SEQ = (1 << 56) - 1
_PUT_HEAD = wal.PUT_HEAD
_U32 = wal._U32


def _key(key: Any) -> bytes:
    t = type(key)
    if t is bytes:
        return key
    if t is str:
        return key.encode("utf-8")
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise KeyTypeError(f"store keys are bytes or str, not {t.__name__}")


def _value(value: Any) -> bytes:
    t = type(value)
    if t is bytes:
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise KeyTypeError(f"store values are bytes, not {t.__name__}")


class WriteBatch:
    """Puts and deletes applied atomically by :meth:`DB.write` (all or none, even after a crash)."""

    __slots__ = ("ops",)

    def __init__(self):
        self.ops: list[tuple[bytes, bytes | None]] = []

    def put(self, key, value) -> "WriteBatch":
        self.ops.append((_key(key), _value(value)))
        return self

    def delete(self, key) -> "WriteBatch":
        self.ops.append((_key(key), None))
        return self

    def clear(self) -> None:
        self.ops.clear()

    def __len__(self) -> int:
        return len(self.ops)


class Snapshot:
    """A consistent read view (``seq``): pass it to ``get``/``multi_get``/``scan``. Release with
    :meth:`close` (or a ``with`` block; garbage collection releases it too)."""

    def __init__(self, db: "DB", seq: int):
        self.seq = seq
        self._db = db
        self._finalizer = weakref.finalize(self, db._release_snapshot, seq)

    def close(self) -> None:
        self._finalizer()

    def get(self, key, default=None):
        """``db.get(key, default)`` as of this snapshot (plyvel's ``Snapshot.get``)."""
        return self._db.get(key, default, snapshot=self)

    def iterator(self, **kwargs) -> Iterator:
        """``db.iterator(..., snapshot=self)`` (plyvel's ``Snapshot.iterator``)."""
        return self._db.iterator(snapshot=self, **kwargs)

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Ctx:
    """What the compaction executor needs from the store."""

    def __init__(self, db: "DB", smallest: int):
        self.fs = db._fs
        self.folder = db.path
        self.options = db.options
        self.cache = db._cache
        self.smallest_snapshot = smallest
        self.new_file_number = db._new_file_number


class DB:
    """An LSM key-value store in a folder. Keys and values are bytes (str keys become UTF-8);
    keys are ordered bytewise. Open with :meth:`DB.open`; use as a context manager."""

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, options: Options | None = None) -> "DB":
        """Open (or create) the store at ``path``: recovers the WAL, cleans files a crash left.

        A store is created only in a new or empty folder (its identity file ``BLOOMDB`` is
        written first, :mod:`.identity`); a folder holding anything else -- a LevelDB or RocksDB
        store, any file -- is refused, untouched. The store deletes only files its manifest
        history proves it wrote (see :meth:`_recover`).

        Raises :class:`CorruptionError` naming the damaged file, :class:`InvalidArgument` for
        bad options, a folder that is not a store and not empty, or a missing/existing store
        against ``create_if_missing``/``error_if_exists``. A refused open creates nothing.
        """
        return cls(os.fspath(path), (options or Options()).validated())

    def __init__(self, path: str, options: Options):
        self.path = path
        self.options = options
        self._fs = options.fs or RealFS()
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._compaction_lock = threading.Lock()
        self._snapshots: Counter = Counter()
        self._keep_old = False  # a snapshot is live: memtables keep the versions they replace
        self._bg_error: BaseException | None = None
        self._closed = False
        self._closing = False
        self._mem_limit = options.memtable_bytes
        self._cache = BlockCache(options.block_cache_bytes) if options.compression and options.block_cache_bytes else None
        self._compact_pointers: dict[int, bytes] = {}
        self._manual_pending = False
        self._stats = Counter()
        self._blocks_read = 0  # plain attributes, not counters: they are updated on every read
        self._true_positive = 0
        self._probe_base = np.zeros(3, np.int64)
        self._lockfile = None
        self._iterators: weakref.WeakSet = weakref.WeakSet()
        self._vs = VersionSet(self._fs, path, self._cache)
        fs = self._fs
        kind = identity.inspect(fs, path)  # raises for a folder that is not ours and not empty
        exists = kind in (identity.STORE, identity.LEGACY)
        if exists and options.error_if_exists:
            raise InvalidArgument(f"{path}: store exists (error_if_exists=True)")
        if not exists and not options.create_if_missing:
            why = " (its creation was interrupted)" if kind == identity.HALF else ""
            raise InvalidArgument(f"{path}: no store here{why} (create_if_missing=False)")
        if kind == identity.ABSENT:
            identity.claim(fs, path)  # the identity file first: from now on the folder is ours
        self._take_lock()
        try:
            self._recover(exists, kind == identity.LEGACY)
            if kind == identity.LEGACY:  # after the first manifest with reservations is durable
                identity.claim(fs, path)
        except BaseException:
            self._release_lock()
            raise
        self._thread = None
        if options.background_compaction:
            self._thread = threading.Thread(target=self._bg_loop, name=f"bloomdb-lsm:{path}", daemon=True)
            self._thread.start()
            with self._lock:
                self._cond.notify_all()
        else:
            self._maybe_compact_inline()

    def _take_lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            return
        f = open(os.path.join(self.path, "LOCK"), "a+")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            raise BloomDBError(f"{self.path}: the store is open in another process") from None
        self._lockfile = f

    def _release_lock(self) -> None:
        if self._lockfile is not None:
            self._lockfile.close()
            self._lockfile = None

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    @property
    def _version(self) -> Version:
        """The current version (owned by the version set)."""
        return self._vs.current

    def _recover(self, exists: bool, legacy: bool = False) -> None:
        """Recover the table set (:meth:`VersionSet.recover`: manifest, tables, obsolete files),
        replay the logs it names into a table, start a new log and save the manifest."""
        fs = self._fs
        vs = self._vs
        logs = vs.recover(exists, legacy)
        seq = vs.last_seq
        mem = MemTable()
        damage: list[int] = []
        for n in logs:
            if damage:
                continue  # paranoid_checks=False stopped at damage: later writes are not replayed
            p = self._file(f"{n:06d}.log")
            for first, ops in wal.read_log(fs.read_all(p), p, self.options.paranoid_checks, damage):
                for i, (k, v) in enumerate(ops):
                    mem.add(first + i, k, v, True)
                seq = max(seq, first + len(ops) - 1)
        self._seq = seq
        if len(mem):
            info = self._write_table(mem, 0)
            vs.current = vs.current.apply(set(), [info])  # made durable by the save below
        log_number = self._new_file_number()
        self._log = wal.LogWriter(fs, self._file(f"{log_number:06d}.log"), log_number, self.options.wal_buffer_bytes)
        self._mem = MemTable(log_number)
        self._imm = None
        vs.save(log_number, self._seq)
        for n in logs:
            fs.remove(self._file(f"{n:06d}.log"))
        self._state = (self._mem, None, vs.current)

    def _new_file_number(self) -> int:
        """A new file number reserved by a durable manifest (:meth:`VersionSet.new_file_number`);
        a failed manifest write stops writes (:meth:`_fail`) and raises."""
        with self._lock:
            try:
                return self._vs.new_file_number(self._seq)
            except BaseException as e:
                self._fail(e)
                raise

    def _write_table(self, mem: MemTable, level: int) -> TableRef:
        kd, ko, trs, vd, vo = mem.table_arrays()
        number = self._new_file_number()
        p = executor.table_path(self.path, number)
        last = all(not self._version.levels[i] for i in range(1, MAX_LEVELS))
        o = self.options
        info = build_table_arrays(self._fs, p, number, kd, ko, trs, vd, vo, o.filter_for(level, last), o.block_size,
                                  o.restart_interval, o.compression, partition_blocks=o.partition_blocks())
        self._stats["bytes_flushed"] += info.file_size
        return TableRef(level, info, Table(self._fs, p, number, self._cache))

    # -- closing ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the background thread (after its current step) and close the files. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        for it in list(self._iterators):
            it.close()
        with self._lock:
            self._closed = True
            try:
                self._log.close()
            finally:
                self._release_lock()

    def __enter__(self) -> "DB":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            if not self._closed:
                self.close()
        except Exception:  # noqa: BLE001
            pass

    # -- writing ------------------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self._closed or self._closing:
            raise BloomDBError(f"{self.path}: the store is closed")
        if self._bg_error is not None:
            raise BloomDBError(f"{self.path}: the store stopped after an I/O error: {self._bg_error!r}")

    def put(self, key, value, sync: bool = False) -> None:
        """Set ``key`` to ``value``. ``sync=True``: the WAL is fsynced before returning.
        Cost: one WAL append (one ``write`` syscall) and one memtable insert."""
        if type(key) is not bytes:
            key = _key(key)
        if type(value) is not bytes:
            value = _value(value)
        with self._lock:
            mem = self._mem
            if mem.bytes >= self._mem_limit or self._bg_error is not None or self._closing:
                self._check_writable()
                self._make_room()
                mem = self._mem
            seq = self._seq + 1
            # wal.encode_put, inlined: this is the hot path of every unbatched write
            body = b"".join((_PUT_HEAD.pack(21 + len(key) + len(value), seq, 1, 1, len(key)), key,
                             _U32.pack(len(value)), value))
            try:
                if sync:
                    self._log.add(_U32.pack(crc32c(body)) + body, True)
                else:
                    self._log.append(_U32.pack(crc32c(body)) + body)
            except BaseException as e:
                self._bg_error = e  # the log's tail is unknown now: nothing may be appended after it
                raise
            self._seq = seq
            mem.add(seq, key, value, self._keep_old)

    def delete(self, key, sync: bool = False) -> None:
        """Remove ``key`` (writes a tombstone). Deleting a missing key is not an error."""
        key = _key(key)
        with self._lock:
            self._check_writable()
            self._make_room()
            seq = self._seq + 1
            self._append(wal.encode_put(seq, key, None), sync)
            self._seq = seq
            self._mem.add(seq, key, None, self._keep_old)

    def write(self, batch: WriteBatch, sync: bool = False) -> None:
        """Apply ``batch`` atomically: one WAL record, consecutive sequence numbers."""
        if not isinstance(batch, WriteBatch):
            raise InvalidArgument(f"write() takes a WriteBatch, not {type(batch).__name__}")
        ops = batch.ops
        if not ops:
            return
        with self._lock:
            self._check_writable()
            self._make_room()
            first = self._seq + 1
            self._append(wal.encode_batch(first, ops), sync)
            keep = self._keep_old
            add = self._mem.add
            for i, (k, v) in enumerate(ops):
                add(first + i, k, v, keep)
            self._seq = first + len(ops) - 1

    def _append(self, record: bytes, sync: bool) -> None:
        try:
            self._log.add(record, sync)
        except BaseException as e:
            self._bg_error = e  # the log's tail is unknown now: nothing may be appended after it
            raise

    def _make_room(self) -> None:
        """Called with the lock held: switch to a fresh memtable when full, waiting for the
        previous flush (and for L0 to drain below ``level0_stop``)."""
        o = self.options
        while True:
            self._check_writable()
            if self._mem.bytes < o.memtable_bytes:
                return
            if self._imm is not None or len(self._version.levels[0]) >= o.level0_stop:
                if self._thread is None:
                    self._flush_imm()
                    self._maybe_compact_inline()
                else:
                    self._cond.wait()
                continue
            self._switch_memtable()
            if self._thread is None:
                self._flush_imm()
                self._maybe_compact_inline()
            return

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
            raise
        self._imm = self._mem
        self._mem = MemTable(n)
        self._state = (self._mem, self._imm, self._version)
        self._cond.notify_all()

    # -- background work ----------------------------------------------------------------------
    def _pick(self):
        v = self._version
        shape = [[policy.TableShape(r.number, r.info.file_size, r.info.min_key, r.info.max_key) for r in lvl]
                 for lvl in v.levels]
        o = self.options
        return policy.pick(shape, self._compact_pointers, o.level0_trigger, o.level1_bytes, o.level_ratio)

    def _bg_loop(self) -> None:
        while True:
            with self._lock:
                while not self._closing and self._bg_error is None and self._imm is None and self._pick() is None:
                    self._cond.wait()
                if self._bg_error is not None or (self._closing and self._imm is None):
                    self._cond.notify_all()
                    return
            try:
                if self._imm is not None:
                    self._flush_imm()
                elif not self._closing:
                    self._compact_once()
            except BaseException as e:  # noqa: BLE001 - reported to writers
                with self._lock:
                    self._bg_error = e
                    self._cond.notify_all()
                return

    def _flush_imm(self) -> None:
        imm = self._imm
        if imm is None:
            return
        try:
            ref = self._write_table(imm, 0)
            with self._lock:
                self._install(set(), [ref], drop_imm=True)
        except BaseException as e:
            self._fail(e)
            raise

    def _fail(self, e: BaseException) -> None:
        """Stop accepting writes after an I/O failure in a flush or compaction."""
        with self._lock:
            if self._bg_error is None:
                self._bg_error = e
            self._cond.notify_all()

    def _install(self, deleted: set[int], added: list[TableRef], drop_imm: bool = False) -> None:
        """Make the edit durable (manifest) and visible (one state swap); then delete old files."""
        with self._lock:
            # logs older than the oldest unflushed memtable's are obsolete (not the current
            # memtable's: a compaction may finish while an immutable memtable awaits its flush)
            live_log = self._mem.log_number if (drop_imm or self._imm is None) else self._imm.log_number
            old = self._vs.log_and_apply(deleted, added, live_log, self._seq)
            new = self._vs.current
            if old._probe is not None:
                self._probe_base += old.refresh_probe()[0][layout.C_CHECKS : layout.C_POSITIVE + 1]
            imm = self._imm
            if drop_imm:
                self._imm = None
            self._state = (self._mem, self._imm, new)
            if drop_imm and imm is not None:
                self._fs.remove(self._file(f"{imm.log_number:06d}.log"))
            self._cond.notify_all()
        for n in deleted:
            if not any(r.number == n for r in new.all_refs()):
                self._fs.remove(executor.table_path(self.path, n))

    def _compact_once(self) -> bool:
        """Run the policy's next compaction, if any (serialised with other compactions)."""
        with self._compaction_lock:
            with self._lock:
                task = self._pick()
            if task is None:
                return False
            self._run_task(task)
            return True

    def _run_task(self, task) -> None:
        """Execute ``task`` (caller holds the compaction lock) and install its edit."""
        with self._lock:
            version = self._version
            smallest = min(self._snapshots) if self._snapshots else self._seq
        try:
            deleted, added, written = executor.run(task, version, _Ctx(self, smallest))
            self._stats["bytes_compacted"] += written
            self._stats["compactions"] += 1
            if task.level > 0:
                self._compact_pointers[task.level] = task.largest
            self._install(deleted, added)
        except BaseException as e:
            self._fail(e)
            raise

    def _maybe_compact_inline(self) -> None:
        while self._compact_once():
            pass

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
        block, found through the in-memory index).
        """
        if type(key) is not bytes:
            key = _key(key)
        mem, imm, ver = self._state
        if snapshot is None:
            e = mem.latest.get(key)
            if e is None and imm is not None:
                e = imm.latest.get(key)
            snap = MAX_SEQ
        else:
            snap = snapshot.seq
            e = mem.get(key, snap)
            if e is None and imm is not None:
                e = imm.get(key, snap)
        if e is not None:
            v = e[1]
            return default if v is None else v
        p = ver._probe or ver.probe()
        s = K.probe(p[0], key, 0)
        if s == -1:
            return default
        if s >= 0:  # the common case, one call shorter: the filter said "may contain"
            r = self._read(ver, s, key, snap)
            if r is MISSING:
                r = self._read_from(ver, K.probe(ver.refresh_probe()[0], key, s + 1), key, snap)
        else:
            r = self._read_from(ver, s, key, snap)
        return default if r is MISSING or r is DELETED else r

    def _read_from(self, ver: Version, s: int, key: bytes, snap: int):
        """Follow the probe kernel's answer ``s`` (a slot, ``-slot - 2``: Python checks the
        filter first, or -1: none) through the tables until one holds ``key``: its value,
        DELETED or MISSING."""
        while s != -1:
            if s < -1:
                s = -s - 2
                r = self._read(ver, s, key, snap) if self._ask(ver, s, key) else MISSING
            else:
                r = self._read(ver, s, key, snap)
            if r is not MISSING:
                return r
            s = K.probe(ver.refresh_probe()[0], key, s + 1)
        return MISSING

    def _ask(self, ver: Version, s: int, key: bytes) -> bool:
        """The filter check the kernel left to Python (a filter to load, partitions, another
        family): counted like the kernel's; False means "not here"."""
        return self._ask_many(ver, s, [key])[0]

    def _ask_many(self, ver: Version, s: int, keys: list[bytes]) -> list[bool]:
        """:meth:`_ask` for several keys of one slot: one batched call per filter."""
        verdicts = ver.directory.check_many(s, keys)
        ver.refresh_probe()  # the check may have laid the directory out again
        st = self._stats
        no = verdicts.count(False)
        yes = verdicts.count(True)
        st["filter_checks"] += no + yes
        st["filter_useful"] += no
        st["filter_positive"] += yes
        return [v is not False for v in verdicts]

    def _read(self, ver: Version, s: int, key: bytes, snap: int):
        """Read table slot ``s`` for ``key`` (one data block): value, DELETED or MISSING."""
        r = ver.slots[s].table.get(key, snap)
        self._blocks_read += 1
        if r is not MISSING:
            self._true_positive += 1
        return r

    def multi_get(self, keys, default=None, snapshot: Snapshot | None = None) -> list:
        """Values of ``keys`` in order (``default`` where absent). The filter checks of the whole
        batch are done by one kernel call (one hash per key); the memtable lookups and the
        packing of the keys are C-speed passes (``map``, ``bytes.join``)."""
        keys = list(keys)
        if not set(map(type, keys)) <= {bytes}:
            keys = [_key(k) for k in keys]
        n = len(keys)
        mem, imm, ver = self._state
        if snapshot is None:
            snap = MAX_SEQ
            found = list(map(mem.latest.get, keys))
            if imm is not None:
                get = imm.latest.get
                found = [e if e is not None else get(k) for k, e in zip(keys, found)]
        else:
            snap = snapshot.seq
            found = [mem.get(k, snap) for k in keys]
            if imm is not None:
                found = [e if e is not None else imm.get(k, snap) for k, e in zip(keys, found)]
        if found.count(None) == n:  # nothing in the memtables (the common case of a big batch)
            out = [default] * n
            todo = range(n)
            sub = keys
        else:
            out = [default if e is None or e[1] is None else e[1] for e in found]
            todo = [i for i, e in enumerate(found) if e is None]
            if not todo:
                return out
            sub = [keys[i] for i in todo]
        data, offsets = pack_bytes(sub)
        slots = np.empty(len(sub), np.int64)
        p = ver._probe or ver.probe()
        K.probe_many(p[0], data, offsets, slots)
        hits = np.flatnonzero(slots != -1)
        if hits.size:
            sl = slots.tolist()
            self._resolve(ver, {j: sl[j] for j in hits.tolist()}, sub, snap, out, todo)
        return out

    def _resolve(self, ver: Version, pending: dict, keys: list, snap: int, out: list, todo) -> None:
        """Follow the kernel's answers ``pending`` (key index -> slot, or ``-slot - 2``: Python
        checks the filter first) for a batch, round by round: the keys handed to Python are
        checked with one batched filter call per slot (:meth:`_ask_many`), then every key that
        may be in its slot reads it; a key not found there is probed again from the next slot.
        Sets ``out[todo[j]]`` for every key found with a value."""
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
                r = self._read(ver, s, keys[j], snap)
                if r is MISSING:
                    nxt[j] = s + 1
                elif r is not DELETED:
                    out[todo[j]] = r
            d = ver.refresh_probe()[0]
            pending = {j: s for j, s in ((j, K.probe(d, keys[j], s)) for j, s in nxt.items()) if s != -1}

    def __contains__(self, key) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT

    def snapshot(self) -> Snapshot:
        """A consistent view as of now; versions it can see are kept until it is released."""
        with self._lock:
            seq = self._seq
            self._snapshots[seq] += 1
            self._keep_old = True
            return Snapshot(self, seq)

    def iterator(self, start=None, stop=None, include_start: bool = True, include_stop: bool = False,
                 prefix=None, reverse: bool = False, include_key: bool = True, include_value: bool = True,
                 snapshot: Snapshot | None = None) -> Iterator:
        """A cursor over the keys in the range (plyvel's signature and semantics, see
        :mod:`.iterator`), as of ``snapshot`` or of now (an implicit snapshot held until the
        iterator is closed). Cost: the memtables' entries in the range are copied under the lock;
        tables are read a block at a time as the cursor moves."""
        lo, hi = half_open(None if start is None else _key(start), None if stop is None else _key(stop),
                           include_start, include_stop, None if prefix is None else _key(prefix))
        with self._lock:
            if self._closed:
                raise IteratorClosed(f"{self.path}: the store is closed")
            own = self.snapshot() if snapshot is None else None
            snap = snapshot.seq if own is None else own.seq
            mem, imm, ver = self._state
            items = [mem.range_items(lo, hi, snap)] + ([imm.range_items(lo, hi, snap)] if imm is not None else [])
        it = Iterator(View(items, ver, snap), lo, hi, reverse, include_key, include_value,
                      None if own is None else own.close)
        self._iterators.add(it)
        return it

    def scan(self, start=None, end=None, reverse: bool = False, snapshot: Snapshot | None = None) -> Iterator:
        """``(key, value)`` pairs with ``start <= key < end`` in key order (descending with
        ``reverse``), as of one consistent point (``snapshot`` or the call's start): the bulk form
        of :meth:`iterator` (no Python frame per pair)."""
        return self.iterator(start, end, reverse=reverse, snapshot=snapshot).drain()

    def __iter__(self):
        return self.iterator(include_value=False).drain()

    # -- maintenance --------------------------------------------------------------------------
    def flush(self) -> None:
        """Write the memtable to an L0 table now (and wait for it)."""
        with self._lock:
            self._check_writable()
            while self._imm is not None:
                if self._thread is None:
                    self._flush_imm()
                else:
                    self._cond.wait()
                    self._check_writable()
            if len(self._mem) == 0:
                return
            self._switch_memtable()
            if self._thread is None:
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
        with self._compaction_lock:
            self._compact_levels(lo, hi)
        with self._lock:
            self._cond.notify_all()

    def _compact_levels(self, lo, hi) -> None:
        for level in range(MAX_LEVELS - 1):
            with self._lock:
                v = self._version
                deepest = v.deepest_nonempty()
                if level >= deepest and not v.levels[level]:
                    break
                ins = [r for r in v.levels[level]
                       if (hi is None or r.info.min_key <= hi) and (lo is None or r.info.max_key >= lo)]
                if not ins or (level == deepest and level > 0):
                    continue
                a = min(r.info.min_key for r in ins)
                b = max(r.info.max_key for r in ins)
                below = [r for r in v.levels[level + 1] if not (r.info.max_key < a or r.info.min_key > b)]
                if below:
                    a = min(a, min(r.info.min_key for r in below))
                    b = max(b, max(r.info.max_key for r in below))
                bottom = all(not any(not (r.info.max_key < a or r.info.min_key > b) for r in v.levels[n])
                             for n in range(level + 2, MAX_LEVELS))
                task = policy.Task(level, tuple(r.number for r in ins), tuple(r.number for r in below),
                                   False, bottom, a, b)
            self._run_task(task)

    def wait_for_compactions(self) -> None:
        """Block until no flush or compaction is pending (tests and benchmarks)."""
        with self._lock:
            while self._thread is not None and self._bg_error is None and (self._imm is not None or self._pick() is not None):
                self._cond.wait(0.05)

    def stats(self) -> dict:
        """Counters and shape: filter checks / useful (rejections) / positives / true positives,
        damaged filters, data blocks read, block-cache hits, tables and bytes per level, write
        amplification (table bytes written / user bytes logged) and read amplification (tables
        read per filter-passing lookup)."""
        mem, imm, ver = self._state
        counters = self._probe_base.copy()
        if ver._probe is not None:
            counters += ver.refresh_probe()[0][layout.C_CHECKS : layout.C_POSITIVE + 1]
        st = self._stats
        checks = int(counters[0]) + st["filter_checks"]
        useful = int(counters[1]) + st["filter_useful"]
        positive = int(counters[2]) + st["filter_positive"]
        refs = ver.all_refs()
        wal_bytes = st["wal_bytes"] + self._log.bytes
        logged = max(1, wal_bytes)
        return {
            "filter_checks": checks,
            "filter_useful": useful,
            "filter_positive": positive,
            "true_positive": self._true_positive,
            "filter_useful_ratio": useful / checks if checks else 0.0,
            "filters_damaged": sum(1 for r in refs if r.table.filter_damaged),
            "data_blocks_read": self._blocks_read,
            "block_cache_hits": self._cache.hits if self._cache else 0,
            "block_cache_misses": self._cache.misses if self._cache else 0,
            "tables_per_level": [len(level) for level in ver.levels],
            "bytes_per_level": [sum(r.info.file_size for r in level) for level in ver.levels],
            "filter_bytes": sum(r.table.filter_bytes for r in refs),
            "compactions": st["compactions"],
            "write_amplification": (st["bytes_flushed"] + st["bytes_compacted"]) / logged if wal_bytes else 0.0,
            "read_amplification": self._blocks_read / max(1, self._true_positive),
            "memtable_entries": len(mem) + (len(imm) if imm is not None else 0),
            "last_sequence": self._seq,
        }


_ABSENT = object()
