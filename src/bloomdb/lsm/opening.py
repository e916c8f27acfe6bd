"""What :meth:`DB.open` does before the store runs, and the errors it and :meth:`DB.close` give.

* :func:`open_store`: recovery (:mod:`.recovery`) under the process lock, or a read-only load
  (:mod:`.readonly`), with ``OSError`` turned into our error as below;
* :func:`os_errors`: an ``OSError`` while a store is opened (a read-only folder, a full disk, a
  file it may not read) becomes :class:`~bloomdb.errors.StoreIOError` naming the folder, the file
  and what to do -- never a raw ``PermissionError``/``OSError`` from deep inside recovery;
  :func:`as_store_error` does the same for a write that fails once the store is open.
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


def advice(e: OSError, read_only: bool, opening: bool = True) -> str:
    """What a user can do about ``e`` raised while opening a store (or, ``opening=False``, while
    it wrote: it accepts no more writes then; every acknowledged write is in its log)."""
    if e.errno in _NO_WRITE:
        if read_only:
            return "the store's files are not readable by this process: fix their permissions"
        return ("the folder is not writable by this process: make it writable, or open it with "
                "DB.open(path, read_only=True) to read it")
    if e.errno in _FULL:
        if not opening:
            return "the disk is full: free space, then close the store and open it again"
        return ("the disk is full (opening a store writes its recovered log as a table and a new log): "
                "free space and open it again")
    return "check the folder and the disk, then open it again"


def as_store_error(path: str, e: BaseException, read_only: bool = False, opening: bool = True) -> BaseException:
    """``e`` as a :class:`StoreIOError` naming the store, the file and what to do, when it is a
    raw ``OSError`` (``e`` itself otherwise, and for one of ours); the ``OSError`` is its cause."""
    if not isinstance(e, OSError) or isinstance(e, BloomDBError):
        return e
    where = f" ({e.filename})" if e.filename and str(e.filename) != path else ""
    what = e.strerror or str(e) or type(e).__name__
    doing = "cannot open the store" if opening else "a write failed"
    err = StoreIOError(f"{path}: {doing}{where}: {what}; {advice(e, read_only, opening)}", e.errno, e.filename or path)
    err.__cause__ = e
    return err


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
    except OSError as e:
        raw = e.__cause__ if isinstance(e, StoreIOError) else e  # a write of recovery: said again as an open's
        if not isinstance(raw, OSError) or isinstance(raw, BloomDBError):
            raise
        raise as_store_error(path, raw, read_only) from raw


class Closed:
    """Stands in for ``(memtable, immutable memtable, version)`` after ``close()``."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path

    def __iter__(self):
        raise StoreClosed(f"{self.path}: the store is closed")
