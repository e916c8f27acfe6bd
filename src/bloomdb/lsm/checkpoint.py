"""``db.checkpoint(dest)``: a consistent, openable copy of a live store (RocksDB's
``Checkpoint::CreateCheckpoint``).

Under the store's lock (writers wait, for as long as it takes to list and link files) it takes
the current version, the sequence, and the live logs' lengths; tables are immutable, so each is
hard-linked into the new folder (copied where the file system refuses links, e.g. across
devices). Logs are still being appended, so the first bytes of each -- exactly what had been
written when the lock was taken -- are copied. Copies read memory maps taken under the lock,
so they run after it is released and a compaction deleting a table meanwhile does not matter.
Then a manifest naming those tables and logs is written, and the folder, built under
``dest + ".tmp"``, is renamed to ``dest``: a crash leaves no half-made checkpoint at ``dest``.

Opening the checkpoint replays its logs: it holds every write acknowledged before the call
(unsynced ones too: the log buffer is handed to the OS first), none made after.
Cost: one hard link per table (or a copy), a copy of the live logs (at most two memtables).
"""

from __future__ import annotations

import os

from ..errors import InvalidArgument
from . import identity
from . import manifest as mf
from .compaction.executor import table_path


def create(db, dest) -> str:
    """Write a checkpoint of ``db`` (an open, writable :class:`~.db.DB`) to the new folder
    ``dest``; returns its path. Raises :class:`InvalidArgument` when ``dest`` (or
    ``dest.tmp``) holds anything but a store's files, an :class:`OSError` when a file cannot be
    written (``dest`` and ``dest.tmp`` are then absent)."""
    dest = os.path.abspath(os.fspath(dest))
    fs = db._fs
    if fs.exists(dest):  # (RocksDB refuses an existing folder too)
        raise InvalidArgument(f"{dest}: exists; a checkpoint is written to a new folder")
    if os.path.abspath(db.path) == dest or dest.startswith(os.path.abspath(db.path) + os.sep):
        raise InvalidArgument(f"{dest}: a checkpoint cannot be written inside its store")
    db._check_writable()  # closed or read-only: refused before anything is made
    tmp = dest + ".tmp"
    _clear(fs, tmp)
    try:
        return _build(db, fs, tmp, dest)
    except BaseException:
        try:
            _clear(fs, tmp)  # nothing half-made is left behind
        except Exception:  # noqa: BLE001 - the first error is the one to report
            pass
        raise


def _build(db, fs, tmp: str, dest: str) -> str:
    identity.claim(fs, tmp)  # the identity file first, as for any new store
    copies = []
    with db._lock:
        db._check_writable()
        db._log.flush()  # buffered records reach the OS: the copy holds every acknowledged write
        ver, seq, vs = db._version, db._seq, db._vs
        logs = ([db._imm.log_number] if db._imm is not None else []) + [db._mem.log_number]
        for r in ver.all_refs():
            src, dst = table_path(db.path, r.number), table_path(tmp, r.number)
            try:
                fs.link(src, dst)
            except (OSError, AttributeError):  # no hard links here: copy (after the lock)
                copies.append((fs.read_all(src), dst))
        for n in logs:
            name = f"{n:06d}.log"
            copies.append((fs.read_all(os.path.join(db.path, name)), os.path.join(tmp, name)))
        state = mf.ManifestState(max(vs.reserved, vs.next_file), seq, logs[0],
                                 [(r.level, r.info) for r in ver.all_refs()])
    for buf, dst in copies:
        fs.write_durable(dst, buf)
    fs.write_atomic(os.path.join(tmp, "MANIFEST"), mf.encode(state))
    fs.rename(tmp, dest)
    _sync_dir(fs, os.path.dirname(dest))
    return dest


def _clear(fs, tmp: str) -> None:
    """Remove the temporary folder a failed checkpoint left (only if it is one: a store's files)."""
    if not fs.exists(tmp):
        return
    identity.inspect(fs, tmp)  # raises when it holds anything but a store's files
    for name in fs.listdir(tmp):
        fs.remove(os.path.join(tmp, name))
    os.rmdir(tmp)


def _sync_dir(fs, path: str) -> None:
    sync = getattr(fs, "sync_dir", None)
    if sync is not None:
        sync(path)
