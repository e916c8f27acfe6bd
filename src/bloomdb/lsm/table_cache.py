"""The table cache of the cached read route (LevelDB's ``TableCache``, ``max_open_files``): at
most ``max_open`` table files open at once, least recently used closed first, reopened on the
next read.

Tables read through :meth:`TableFiles.pread` (``os.pread``: no file position, so any number of
threads read one descriptor at once). A descriptor in use by a read is never closed under it:
each read holds its entry (a use count); when every open file is in use the limit is exceeded
until a read ends (as many extra descriptors as concurrent readers at most). A table whose
reader is dropped (:meth:`forget`, from its finalizer) has its descriptor closed at the next
call, so a file a compaction deleted does not stay open. Iterators and snapshots keep their
tables alive (they hold the version), so a table they read is reopened if it was closed: the
file itself is deleted only once no version holds it.

Cost: one lock round trip per read; an ``open`` per miss.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict


class TableFiles:
    """Open table files, at most ``max_open`` of them when no read is in progress (``None``: no
    limit; a file is closed when its table is dropped)."""

    def __init__(self, max_open: int):
        self.max_open = max_open
        self._open: OrderedDict = OrderedDict()  # path -> [fd, users]
        self._lock = threading.Lock()
        self._dead: list[str] = []  # forgotten paths, closed under the lock by the next call
        self._doomed: set[str] = set()  # forgotten while in use: closed by the last read
        self.opens = 0  # files opened (first opens and reopens)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def pread(self, path: str, offset: int, n: int) -> bytes:
        """``n`` bytes of ``path`` from ``offset`` (fewer only at the end of the file: the caller
        checks what it reads). Raises ``OSError`` when the file cannot be opened."""
        e = self._acquire(path)
        try:
            return _pread_all(e[0], n, offset)
        finally:
            self._release(path, e)

    def size(self, path: str) -> int:
        """The file's size in bytes."""
        e = self._acquire(path)
        try:
            return os.fstat(e[0]).st_size
        finally:
            self._release(path, e)

    def forget(self, path: str) -> None:
        """The table at ``path`` is gone: close its descriptor (at the next call; safe from a
        finalizer)."""
        self._dead.append(path)

    def close_all(self) -> None:
        """Close every descriptor not in use (the store is closing)."""
        with self._lock:
            for path in [p for p, e in self._open.items() if e[1] == 0]:
                os.close(self._open.pop(path)[0])

    def _acquire(self, path: str) -> list:
        with self._lock:
            self._reap()
            e = self._open.get(path)
            if e is None:
                e = self._open[path] = [os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)), 0]
                self.opens += 1
            else:
                self._open.move_to_end(path)
            e[1] += 1
            self._trim()
            return e

    def _release(self, path: str, e: list) -> None:
        with self._lock:
            e[1] -= 1
            if e[1] == 0 and path in self._doomed and self._open.get(path) is e:
                self._doomed.discard(path)
                os.close(self._open.pop(path)[0])
            self._trim()

    def _trim(self) -> None:
        """Close least recently used idle files while more than ``max_open`` are open."""
        extra = 0 if self.max_open is None else len(self._open) - self.max_open
        if extra <= 0:
            return
        for path in [p for p, e in self._open.items() if e[1] == 0][:extra]:
            os.close(self._open.pop(path)[0])

    def _reap(self) -> None:
        while self._dead:
            path = self._dead.pop()
            e = self._open.get(path)
            if e is not None and e[1] == 0:
                os.close(self._open.pop(path)[0])
            elif e is not None:
                self._doomed.add(path)  # closed when its last read ends


def _pread_all(fd: int, n: int, offset: int) -> bytes:
    """``os.pread`` until ``n`` bytes or the end of the file."""
    data = os.pread(fd, n, offset)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = os.pread(fd, n - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)

