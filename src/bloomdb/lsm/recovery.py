"""Opening a store: which folder may be opened, the process lock, and the recovery of its state
(LevelDB's ``DB::Open`` / ``DBImpl::Recover``).

Order (each step is what makes the next safe): :func:`check_folder` classifies the folder and, for
a new store, writes its identity file first (:mod:`.identity`); :class:`StoreLock` keeps a second
process out; :func:`recover` lets the version set recover the table set (manifest, tables,
obsolete files: :meth:`.version_set.VersionSet.recover`), replays the write-ahead logs it names
into an L0 table, starts a new log and makes all of it durable in one manifest write before the
replayed logs are deleted. A crash at any point leaves a store that recovers the same way.

Cost: reading every live log once; one table write when the logs held anything.
"""

from __future__ import annotations

import os

from ..errors import BloomDBError, InvalidArgument
from . import identity, wal
from .memtable import MemTable


def check_folder(fs, path: str, options) -> str:
    """The :mod:`.identity` kind of ``path`` after the open checks: raises
    :class:`InvalidArgument` for a folder that is not a store and not empty, or a missing/existing
    store against ``create_if_missing`` / ``error_if_exists``; claims a new folder (identity file
    first). A refused open creates nothing."""
    kind = identity.inspect(fs, path)
    exists = kind in (identity.STORE, identity.LEGACY)
    if exists and options.error_if_exists:
        raise InvalidArgument(f"{path}: store exists (error_if_exists=True)")
    if not exists and not options.create_if_missing:
        why = " (its creation was interrupted)" if kind == identity.HALF else ""
        raise InvalidArgument(f"{path}: no store here{why} (create_if_missing=False)")
    if kind == identity.ABSENT:
        identity.claim(fs, path)  # the identity file first: from now on the folder is ours
    return kind


class StoreLock:
    """An exclusive ``flock`` on ``path/LOCK`` for the life of an open store (POSIX; elsewhere a
    no-op). Raises :class:`BloomDBError` when another process holds it."""

    def __init__(self, path: str):
        self._file = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            return
        f = open(os.path.join(path, "LOCK"), "a+")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            raise BloomDBError(f"{path}: the store is open in another process") from None
        self._file = f

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def replay(fs, path: str, logs: list[int], paranoid: bool, seq: int) -> tuple[MemTable, int]:
    """The writes of logs ``logs`` (in order) as one memtable, and the last sequence seen (at
    least ``seq``). A torn tail is dropped; damage before intact records raises
    :class:`CorruptionError` unless ``paranoid`` is False -- then replay stops there, later logs
    included (their writes came after the damage)."""
    mem = MemTable()
    damage: list[int] = []
    for n in logs:
        if damage:
            break
        p = os.path.join(path, f"{n:06d}.log")
        for first, ops in wal.read_log(fs.read_all(p), p, paranoid, damage):
            mem.apply(first, ops, True)
            seq = max(seq, first + len(ops) - 1)
    return mem, seq


def recover(db, kind: str) -> None:
    """Recover ``db``'s state (a :class:`~.db.DB` being opened, folder of ``kind``): the table set,
    the logs replayed into an L0 table, a new log and memtable, one manifest write, then the old
    logs deleted. Sets ``db._seq``, ``db._log``, ``db._mem``, ``db._imm`` and ``db._state``."""
    fs, vs = db._fs, db._vs
    exists = kind in (identity.STORE, identity.LEGACY)
    logs = vs.recover(exists, kind == identity.LEGACY)
    mem, db._seq = replay(fs, db.path, logs, db.options.paranoid_checks, vs.last_seq)
    if len(mem):
        ref = db._write_table(mem, 0)
        vs.current = vs.current.apply(set(), [ref])  # made durable by the save below
    log_number = db._new_file_number()
    db._log = wal.LogWriter(fs, os.path.join(db.path, f"{log_number:06d}.log"), log_number, db.options.wal_buffer_bytes)
    db._mem = MemTable(log_number)
    db._imm = None
    vs.save(log_number, db._seq)
    for n in logs:
        fs.remove(os.path.join(db.path, f"{n:06d}.log"))
    if kind == identity.LEGACY:  # after the first manifest with reservations is durable
        identity.claim(fs, db.path)
    db._state = (db._mem, None, vs.current)
