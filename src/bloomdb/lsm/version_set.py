"""The store's history: the current :class:`Version`, the manifest, file numbers (LevelDB's
``version_set``).

A :class:`VersionSet` is the one owner of

* **recovery of the table set**: :meth:`recover` reads ``MANIFEST``, opens every table it lists
  (checking presence and size), deletes what the manifest history proves obsolete, and names the
  write-ahead logs the caller must replay (the WAL and the memtable are the caller's);
* **file numbers**: :meth:`new_file_number` hands out numbers reserved by a durable manifest
  (``RESERVE`` at a time), so recovery can prove that a table or log numbered below the
  manifest's ``next_file`` was written by this store and one above it was not;
* **edits**: :meth:`log_and_apply` makes a new version durable (its manifest record appended
  and fsynced, or the manifest replaced atomically: :mod:`.manifest`) before it becomes current, and restores the old one if the write fails. It is three steps,
  so the caller can write the manifest without holding its own lock (LevelDB's ``LogAndApply``
  unlocks the store's mutex around its manifest write too): :meth:`prepare` (under the caller's
  lock: the new version, the reservation to record, :attr:`writing` set), :meth:`write_edit` (no
  lock: encode, write, fsync), :meth:`commit` or :meth:`abort` (under the caller's lock). Each
  edit's manifest reserves ``RESERVE`` numbers ahead when fewer than half are left, so a writer
  switching memtables rarely writes a manifest itself.

It takes no lock: the caller (:class:`bloomdb.lsm.db.DB`) serialises calls under its own and
allows one edit in flight (:attr:`writing`); while one is, :meth:`new_file_number` may not write
a manifest (:meth:`needs_reservation` says when it would: the caller waits for the commit).
Cost: a manifest write appends O(tables) bytes and fsyncs (one ``write``, one ``fsync``; the
atomic replace it was before took two fsyncs and ~9 system calls, each a GIL release that a
background thread pays up to a switch interval to take back behind a busy writer); the first
write of a process, and one in ~16 later, replaces the file (:func:`.manifest.rewrite_due`).
``new_file_number`` writes one when the reservation runs out.
"""

from __future__ import annotations

import os
import re

from ..errors import CorruptionError
from . import filter_file
from . import manifest as mf
from . import wal
from .compaction.executor import table_path
from .options import MAX_LEVELS
from .sstable.cached_reader import open_table
from .sstable.footer import decode_footer
from .store_filter import StoreFilter
from .version import TableRef, Version

RESERVE = 64  # file numbers reserved per manifest write
OWN_RE = re.compile(r"^(\d{6,})(\.sst|\.sst\.tmp|\.log)$")  # the names of tables and logs


class Edit:
    """An edit between :meth:`VersionSet.prepare` and its commit: the version it makes, the
    manifest state recording it, the reservation and oldest live log that state holds."""

    __slots__ = ("version", "state", "reserved", "log_number", "deleted", "added")

    def __init__(self, version: Version, state: mf.ManifestState, reserved: int, log_number: int, deleted=(), added=()):
        self.version, self.state, self.reserved, self.log_number = version, state, reserved, log_number
        self.deleted, self.added = deleted, added  # the tables it removes (numbers) and adds (refs)


class VersionSet:
    """The current version of the store at ``path`` and everything that makes it durable."""

    def __init__(self, fs, path: str, cache, use_filter_file: bool = True, use_store_filter: bool = False,
                 read_only: bool = False):
        self._fs = fs
        self.path = path
        self._cache = cache
        #: the store's :class:`.store_filter.StoreFilter` (None: none), handed to every version
        #: (``read_only``: one that never writes its file, :mod:`.readonly`)
        self.store_filter = StoreFilter(read_only=read_only) if use_store_filter else None
        self.current = Version([[] for _ in range(MAX_LEVELS)], self.store_filter)
        self.next_file = 1
        self.reserved = 1  # numbers below it were reserved by a durable manifest
        self.log_number = 0  # the oldest log still needed (manifest's view)
        self.last_seq = 0  # the last sequence the manifest or the tables knew at recovery
        self.writing = False  # an edit is between prepare() and commit()/abort()
        self._mf = None  # the manifest opened for appends (only after this process wrote it whole)
        self._mf_bytes = -1  # its size; -1: not written whole by this process (the next write replaces it)
        self._parts: dict = {}  # each table's encoded manifest part (:func:`.manifest.encode`'s cache)
        #: the store keeps a filter file (:mod:`.filter_file`): tables whose filter it holds open lazily
        self.filter_file_ok = use_filter_file and filter_file.usable(fs, cache)
        #: the tables whose filters the filter file held (valid) at open; None until recovered
        self.filters_known: frozenset | None = None

    def save_filters(self) -> None:
        """Write the filter file of the current version's tables if its set of tables changed
        since the open (:func:`.filter_file.save`; a failed write leaves no file: it is a cache),
        and the store filter's file if it changed (:meth:`.store_filter.StoreFilter.save`).
        Nothing before :meth:`recover` ended (a refused or failed open writes nothing)."""
        recovered = self.filters_known is not None
        if self.filter_file_ok and recovered:
            self.filters_known = filter_file.save(self._fs, self.path, self.current.all_refs(), self.filters_known)
        if self.store_filter is not None and recovered:
            self.store_filter.save(self._fs, self.path, self.current)

    def release(self) -> None:
        """Forget every table (the store is closing): the current version becomes empty, so each
        table's mapped file -- and the file descriptor the map holds -- is released as soon as no
        reader still holds the table, not when the garbage collector next breaks the store's
        reference cycles (until then, every open/close of a store kept one descriptor per table)."""
        self.current = Version([[] for _ in range(MAX_LEVELS)])
        self._drop_manifest_file()
        if hasattr(self._cache, "close"):
            self._cache.close()  # the cached route's open table files close now too

    def remove_tables(self, deleted: set[int], old: Version, new: Version) -> None:
        """Delete the files of the tables ``deleted`` from ``old`` that ``new`` does not hold.
        A table read with ``pread`` (the cached route) may have its file closed and reopened
        later by an iterator or snapshot still holding ``old``: its file is deleted when its
        reader is dropped instead (LevelDB deletes only files no live version holds); a
        memory-mapped table's file is deleted now (the map keeps the bytes)."""
        live = {r.number for r in new.all_refs()}
        for r in old.all_refs():
            if r.number in deleted and r.number not in live:
                if hasattr(r.table, "remove_when_dropped"):
                    r.table.remove_when_dropped(self._fs)
                else:
                    self._fs.remove(table_path(self.path, r.number))

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    # -- recovery -----------------------------------------------------------------------------
    def recover(self, exists: bool, legacy: bool = False) -> list[int]:
        """Load the manifest and its tables as :attr:`current`, delete what the manifest history
        proves obsolete -- nothing else -- and return the numbers of the logs to replay, sorted.

        A ``NNNNNN.sst`` or ``.log`` numbered at or above the manifest's ``next_file`` was never
        reserved by this store, so it is left alone and never written over (``legacy``: a store
        from before reservations, whose newest log may lie there: it is replayed). Raises
        :class:`CorruptionError` for a damaged manifest or a missing or resized table."""
        fs = self._fs
        mpath = self._file("MANIFEST")
        state = mf.decode(fs.read_all(mpath), mpath) if exists else mf.ManifestState()
        self.next_file = state.next_file
        self.reserved = state.next_file
        self.log_number = state.log_number
        refs = []
        live = set()
        side = filter_file.load(fs, self.path) if exists and self.filter_file_ok else None
        lazy = set()
        for level, info in state.tables:
            p = table_path(self.path, info.number)
            try:  # no exists() first: one system call less per table (~3 us on this VM)
                t = None if side is None else side.table(fs, p, info.number, self._cache, info.file_size)
                if t is None:
                    t = open_table(fs, p, info.number, self._cache, level)
                else:  # its filter is in the filter file: opened on the first read that needs more
                    lazy.add(info.number)
            except FileNotFoundError:
                raise CorruptionError(f"table {info.number:06d}.sst listed in the manifest is missing", mpath) from None
            if t.file_size != info.file_size:
                raise CorruptionError(f"size {t.file_size} differs from the manifest's {info.file_size}", p)
            refs.append(TableRef(level, info, t))
            live.add(info.number)
        levels = [[] for _ in range(MAX_LEVELS)]
        for r in refs:
            levels[r.level].append(r)
        self.current = Version(levels, self.store_filter)
        self.filters_known = frozenset(lazy)
        self.last_seq = max([state.last_seq] + [r.info.max_seq for r in refs])
        logs = []
        for name in fs.listdir(self.path):
            m = OWN_RE.match(name)
            if m is None:
                if name == "MANIFEST.tmp":
                    fs.remove(self._file(name))  # the manifest's own temporary file
                continue
            n, suffix = int(m.group(1)), m.group(2)
            if n >= state.next_file:  # never reserved by this store's manifest: not provably ours
                self.next_file = max(self.next_file, n + 1)  # and never written over
                if suffix == ".log" and legacy:
                    logs.append(n)  # a store from before reservations: its newest log (replayed)
            elif suffix == ".sst.tmp" or (suffix == ".sst" and n not in live and self._is_table(name)):
                fs.remove(self._file(name))  # an interrupted output, or an obsolete input
            elif suffix == ".log" and n < state.log_number:
                if wal.is_log(fs.read_all(self._file(name))):
                    fs.remove(self._file(name))  # a log whose memtable was flushed
            elif suffix == ".log":
                logs.append(n)
        logs.sort()
        if logs:
            self.next_file = max(self.next_file, logs[-1] + 1)
        return logs

    def _is_table(self, name: str) -> bool:
        """Whether ``name`` ends in this store's table footer (magic and CRC32C)."""
        try:
            decode_footer(self._fs.read_all(self._file(name)), name)
        except CorruptionError:
            return False
        return True

    # -- file numbers and edits -----------------------------------------------------------------
    def new_file_number(self, last_seq: int) -> int:
        """A new file number, reserved by a durable manifest before it is returned (one manifest
        write, recording ``last_seq``, when the reservation runs out). A failed write raises and
        hands out nothing. Not while an edit is being written if :meth:`needs_reservation`."""
        n = self.next_file
        if n >= self.reserved:
            if self.writing:  # two manifest writes at once could land in either order
                raise RuntimeError("new_file_number needs a manifest write while an edit is being written")
            self.reserved = n + RESERVE
            try:
                self.save(self.log_number, last_seq)
            except BaseException:
                self.reserved = n
                raise
        self.next_file = n + 1
        return n

    def needs_reservation(self) -> bool:
        """Whether the next :meth:`new_file_number` writes a manifest."""
        return self.next_file >= self.reserved

    def save(self, log_number: int, last_seq: int) -> None:
        """Write the manifest of :attr:`current` (atomically): its tables, ``next_file`` (the
        reservation), ``last_seq`` and the oldest log still needed."""
        tables = [(r.level, r.info) for r in self.current.all_refs()]
        state = mf.ManifestState(max(self.reserved, self.next_file), last_seq, log_number, tables)
        self._write_manifest(self._encode(state))
        self.log_number = log_number

    def _write_manifest(self, record: bytes) -> None:
        """Make ``record`` the manifest's last, durably: appended and fsynced to the file this
        process wrote whole, else (first write, a failed earlier write, or
        :func:`.manifest.rewrite_due`) the file replaced by it alone. A failure raises; the next
        write then replaces the file (a torn or unsynced tail is never appended after)."""
        path = self._file("MANIFEST")
        if self._mf_bytes < 0 or mf.rewrite_due(self._mf_bytes, len(record)):
            self._drop_manifest_file()
            self._fs.write_atomic(path, record)
            self._mf_bytes = len(record)
            return
        try:
            if self._mf is None:
                self._mf = self._fs.open_append(path)
            self._mf.write(record)
            self._mf.sync()
        except BaseException:
            self._drop_manifest_file()
            raise
        self._mf_bytes += len(record)

    def _drop_manifest_file(self) -> None:
        """Close the append handle; the next write replaces the file."""
        f, self._mf, self._mf_bytes = self._mf, None, -1
        if f is not None:
            f.close()

    def prepare(self, deleted: set[int], added: list[TableRef], log_number: int, last_seq: int) -> Edit:
        """Start an edit (tables ``deleted`` by number, ``added``): nothing changes but
        :attr:`writing`; the reservation it records runs ``RESERVE`` ahead when fewer than half
        that are left (it counts only once the edit is committed, i.e. durable)."""
        if self.writing:
            raise RuntimeError("one manifest edit at a time")
        version = self.current.apply(deleted, added)
        reserved = self.reserved if self.reserved - self.next_file >= RESERVE // 2 else self.next_file + RESERVE
        tables = [(r.level, r.info) for r in version.all_refs()]
        self.writing = True
        return Edit(version, mf.ManifestState(reserved, last_seq, log_number, tables), reserved, log_number, deleted, added)

    def write_edit(self, edit: Edit) -> None:
        """Write ``edit``'s manifest record (durably, :meth:`_write_manifest`). Needs no lock:
        nothing else writes the manifest while :attr:`writing` is set."""
        self._write_manifest(self._encode(edit.state))

    def _encode(self, state: mf.ManifestState) -> bytes:
        """``state``'s record, each table's part taken from :attr:`_parts` when encoded before."""
        record = mf.encode(state, self._parts)
        mf.prune(self._parts, state)
        return record

    def commit(self, edit: Edit) -> Version:
        """``edit`` is durable: make its version current; returns the version it replaced."""
        old = self.current
        self.current = edit.version
        self.log_number = edit.log_number
        self.reserved = max(self.reserved, edit.reserved)
        self.writing = False
        if self.store_filter is not None:  # its covered tables follow the edit (:mod:`.store_filter`)
            self.store_filter.installed(set(edit.deleted), list(edit.added), edit.version)
        return old

    def abort(self, edit: Edit) -> None:
        """``edit``'s manifest write failed: nothing changes (the caller stops the store)."""
        self.writing = False

    def log_and_apply(self, deleted: set[int], added: list[TableRef], log_number: int, last_seq: int) -> Version:
        """Make the edit (tables ``deleted`` by number, ``added``) durable, then current; returns
        the version it replaced. On a failed manifest write :attr:`current` is unchanged."""
        edit = self.prepare(deleted, added, log_number, last_seq)
        try:
            self.write_edit(edit)
        except BaseException:
            self.abort(edit)
            raise
        return self.commit(edit)
