"""What :meth:`DB.open` does before the store runs, and the errors it and :meth:`DB.close` give.

* :func:`open_store`: recovery (:mod:`.recovery`) under the process lock, or a read-only load
  (:mod:`.readonly`), with ``OSError`` turned into our error as below;
* :func:`os_errors`: an ``OSError`` while a store is opened (a read-only folder, a full disk, a
  file it may not read) becomes :class:`~bloomdb.errors.StoreIOError` naming the folder, the file
  and what to do -- never a raw ``PermissionError``/``OSError`` from deep inside recovery.
* :class:`Closed`: the read state of a closed store; unpacking it (what every read does first)
  raises :class:`~bloomdb.errors.StoreClosed`, so reads after ``close()`` cost nothing while open.
"""

from __future__ import annotations

import errno as _errno
from contextlib import contextmanager

from ..errors import BloomDBError, StoreClosed, StoreIOError
from . import readonly, recovery

_NO_WRITE = {_errno.EACCES, _errno.EPERM, _errno.EROFS}
_FULL = {_errno.ENOSPC, getattr(_errno, "EDQUOT", _errno.ENOSPC), _errno.EFBIG}


def advice(e: OSError, read_only: bool) -> str:
    """What a user can do about ``e`` raised while opening a store."""
    if e.errno in _NO_WRITE:
        if read_only:
            return "the store's files are not readable by this process: fix their permissions"
        return ("the folder is not writable by this process: make it writable, or open it with "
                "DB.open(path, read_only=True) to read it")
    if e.errno in _FULL:
        return ("the disk is full (opening a store writes its recovered log as a table and a new log): "
                "free space and open it again")
    return "check the folder and the disk, then open it again"


def open_store(db, read_only: bool) -> None:
    """Recover ``db`` (a :class:`~.db.DB` being opened) under its process lock -- released again
    if recovery fails -- or, ``read_only``, load it without lock or writes."""
    with os_errors(db.path, read_only):  # a read-only folder, a full disk: our error, naming the path
        if read_only:
            db._lockfile = readonly.NoLock()
            readonly.load(db)
            return
        kind = recovery.check_folder(db._fs, db.path, db.options)
        db._lockfile = recovery.StoreLock(db.path)
        try:
            recovery.recover(db, kind)
        except BaseException:
            db._lockfile.release()
            raise


@contextmanager
def os_errors(path: str, read_only: bool = False):
    """Re-raise an ``OSError`` of the block (not already one of ours) as :class:`StoreIOError`."""
    try:
        yield
    except BloomDBError:
        raise
    except OSError as e:
        where = f" ({e.filename})" if e.filename and str(e.filename) != path else ""
        what = e.strerror or str(e) or type(e).__name__
        raise StoreIOError(f"{path}: cannot open the store{where}: {what}; {advice(e, read_only)}",
                           e.errno, e.filename or path) from e


class Closed:
    """Stands in for ``(memtable, immutable memtable, version)`` after ``close()``."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path

    def __iter__(self):
        raise StoreClosed(f"{self.path}: the store is closed")
