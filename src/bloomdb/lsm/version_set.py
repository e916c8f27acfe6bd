"""The store's history: the current :class:`Version`, the manifest, file numbers (LevelDB's
``version_set``).

A :class:`VersionSet` is the one owner of

* **recovery of the table set**: :meth:`recover` reads ``MANIFEST``, opens every table it lists
  (checking presence and size), deletes what the manifest history proves obsolete, and names the
  write-ahead logs the caller must replay (the WAL and the memtable are the caller's);
* **file numbers**: :meth:`new_file_number` hands out numbers reserved by a durable manifest
  (``RESERVE`` at a time), so recovery can prove that a table or log numbered below the
  manifest's ``next_file`` was written by this store and one above it was not;
* **edits**: :meth:`log_and_apply` makes a new version durable (manifest written atomically)
  before it becomes current, and restores the old one if the write fails.

It takes no lock: the caller (:class:`bloomdb.lsm.db.DB`) serialises calls under its own.
Cost: a manifest write is one atomic file replace of O(tables) bytes; ``new_file_number`` writes
one every ``RESERVE`` numbers.
"""

from __future__ import annotations

import os
import re

from ..errors import CorruptionError
from . import manifest as mf
from . import wal
from .compaction.executor import table_path
from .options import MAX_LEVELS
from .sstable.cached_reader import open_table
from .sstable.footer import decode_footer
from .version import TableRef, Version

RESERVE = 64  # file numbers reserved per manifest write
OWN_RE = re.compile(r"^(\d{6,})(\.sst|\.sst\.tmp|\.log)$")  # the names of tables and logs


class VersionSet:
    """The current version of the store at ``path`` and everything that makes it durable."""

    def __init__(self, fs, path: str, cache):
        self._fs = fs
        self.path = path
        self._cache = cache
        self.current = Version([[] for _ in range(MAX_LEVELS)])
        self.next_file = 1
        self.reserved = 1  # numbers below it were reserved by a durable manifest
        self.log_number = 0  # the oldest log still needed (manifest's view)
        self.last_seq = 0  # the last sequence the manifest or the tables knew at recovery

    def release(self) -> None:
        """Forget every table (the store is closing): the current version becomes empty, so each
        table's mapped file -- and the file descriptor the map holds -- is released as soon as no
        reader still holds the table, not when the garbage collector next breaks the store's
        reference cycles (until then, every open/close of a store kept one descriptor per table)."""
        self.current = Version([[] for _ in range(MAX_LEVELS)])
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
        for level, info in state.tables:
            p = table_path(self.path, info.number)
            if not fs.exists(p):
                raise CorruptionError(f"table {info.number:06d}.sst listed in the manifest is missing", mpath)
            t = open_table(fs, p, info.number, self._cache, level)
            if t.file_size != info.file_size:
                raise CorruptionError(f"size {t.file_size} differs from the manifest's {info.file_size}", p)
            refs.append(TableRef(level, info, t))
            live.add(info.number)
        levels = [[] for _ in range(MAX_LEVELS)]
        for r in refs:
            levels[r.level].append(r)
        self.current = Version(levels)
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
        write, recording ``last_seq``, per ``RESERVE`` numbers). A failed write raises and hands
        out nothing."""
        n = self.next_file
        if n >= self.reserved:
            self.reserved = n + RESERVE
            try:
                self.save(self.log_number, last_seq)
            except BaseException:
                self.reserved = n
                raise
        self.next_file = n + 1
        return n

    def save(self, log_number: int, last_seq: int) -> None:
        """Write the manifest of :attr:`current` (atomically): its tables, ``next_file`` (the
        reservation), ``last_seq`` and the oldest log still needed."""
        tables = [(r.level, r.info) for r in self.current.all_refs()]
        state = mf.ManifestState(max(self.reserved, self.next_file), last_seq, log_number, tables)
        self._fs.write_atomic(self._file("MANIFEST"), mf.encode(state))
        self.log_number = log_number

    def log_and_apply(self, deleted: set[int], added: list[TableRef], log_number: int, last_seq: int) -> Version:
        """Make the edit (tables ``deleted`` by number, ``added``) durable, then current; returns
        the version it replaced. On a failed manifest write :attr:`current` is unchanged."""
        old = self.current
        self.current = old.apply(deleted, added)
        try:
            self.save(log_number, last_seq)
        except BaseException:
            self.current = old
            raise
        return old
