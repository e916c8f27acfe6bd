"""What :meth:`DB.open` and :meth:`DB.close` turn into the store's own errors.

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
