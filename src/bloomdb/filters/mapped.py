"""A filter whose payload is a memory map of its file (``filters.open(path, mmap=True)``), and the
check that keeps it from answering from a file that changed under it.

A copy-on-write map (``MAP_PRIVATE``) reads the file's pages lazily, and a page the filter never
wrote still shows whatever the file holds *now*: an in-place rewrite of the file after the open
(and its checksum check) would silently change the filter's bits and give false negatives. What
is guaranteed instead:

* **Replacing the file by rename** (what :meth:`Filter.save` does: temp file, fsync, rename) never
  affects an open filter: the map holds the old inode, whose contents stay visible and unchanged.
* **Writing the same file in place** (or truncating it) is detected: before and after every query
  and snapshot the filter compares the open file's size and modification time (one ``fstat`` each,
  ~0.3 µs) with what they were at open, and raises :class:`~bloomdb.errors.CorruptionError` naming
  the file instead of answering. A truncated file is caught before its missing pages are touched.

Limits (detection rests on the file's timestamps): exact on Linux 6.13+ (multigrain timestamps: a
change after a ``stat`` always gets a new time) on ext4, xfs, btrfs and tmpfs; on older kernels or
coarser file systems a write in the same clock tick (a few ms) as the file's previous change can go
unseen; so can a write whose modification time is then set back (``os.utime``). Writes through
another process's shared mapping update the time lazily, and a truncation racing a query can still
fault. To be immune, open with ``mmap=False`` (the payload is read into
memory) or take :meth:`Filter.copy`. Engines handed raw arrays (``kernel_args``) are not checked.

**Writable maps** (``filters.open(path, mmap="r+")``) map the file shared (``MAP_SHARED``), so adds
land in the file's pages. The first write after an open or a flush first marks the header "open
for writing" (envelope byte 10 = 1, header CRC left stale) and syncs that page; ``flush()`` syncs
the payload, then rewrites the header (count, payload CRC, mark cleared, header CRC) and syncs it.
So a process that dies between a write and the next flush leaves a file every reader refuses with
:class:`~bloomdb.errors.CorruptionError` ("was open for writing and not flushed"), never one that
opens and answers from bits its header does not vouch for.

One writer per file: an ``r+`` open takes an exclusive advisory lock (``flock``) and a
``mmap=True`` open a shared one, both without waiting; a conflicting open raises
:class:`~bloomdb.errors.FilterInUse` instead of letting a reader's map change under it or two
writers' counts and checksums interleave. Concurrent processes on one writable map are not
supported. ``flock`` is advisory (plain ``open()``/``write()`` ignore it) and is not reliable on
network file systems (NFS), where the detection may not work.
"""

from __future__ import annotations

import fcntl
import mmap as _mmap
import os
import threading
import weakref

from ..errors import CorruptionError, FilterInUse

#: Envelope byte that says "open for writing through a writable map, not flushed" (see format.py).
WRITING_OFFSET = 10


class MappedFile:
    """The open file behind a mapped payload: ``map`` (the mmap) and :meth:`check`.

    ``writable=False``: read-only fd, copy-on-write map, shared ``flock``. ``writable=True``:
    read-write fd, shared map, exclusive ``flock``, plus :meth:`mark_writing` / :meth:`commit`.
    """

    __slots__ = ("path", "map", "writable", "dirty", "_fd", "_signature", "_mark_lock", "_finalizer", "__weakref__")

    def __init__(self, path: str, writable: bool = False) -> None:
        """Open and map ``path``. Raises CorruptionError for an empty file, FilterInUse when
        another open holds a conflicting lock (see the module docstring)."""
        fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
        try:
            self._fd = fd
            self.path = path
            self.writable = writable
            self.dirty = False
            self._mark_lock = threading.Lock()
            _lock(fd, writable, path)
            self._signature = self._stat()
            if self._signature[0] == 0:
                raise CorruptionError("empty file", path)
            self.map = _mmap.mmap(fd, 0, access=_mmap.ACCESS_WRITE if writable else _mmap.ACCESS_COPY)
        except BaseException:
            _unlock_and_close(fd)
            raise
        self._finalizer = weakref.finalize(self, _unlock_and_close, fd)

    def mark_writing(self) -> None:
        """Before the first write since the open or the last commit: set the header's "open for
        writing" byte (its CRC goes stale) and sync that page, so a crash from here on leaves a
        file readers refuse. Cost: one page sync, once per flush interval."""
        if self.dirty:
            return
        with self._mark_lock:
            if not self.dirty:
                self.map[WRITING_OFFSET] = 1
                self.map.flush(0, min(_mmap.PAGESIZE, len(self.map)))  # a file under a page: all of it
                self.dirty = True

    def commit(self, header: bytes) -> None:
        """Sync the payload, then write ``header`` (count, CRCs, mark cleared) over the file's
        first bytes and sync it. The caller holds writers off."""
        self.map.flush()
        self.map[: len(header)] = header
        self.map.flush(0, min(_mmap.PAGESIZE, len(self.map)))  # a file under a page: all of it
        self.dirty = False
        self._signature = self._stat()

    @property
    def open(self) -> bool:
        """True until :meth:`release` (or garbage collection) closed the file."""
        return self._finalizer.alive

    def on_full_code(self) -> int:
        """The header's ``on_full`` byte as the file holds it now."""
        return self.map[5]

    def release(self) -> None:
        """Give up the lock and the file descriptor (the map stays valid for the arrays on it)."""
        self._finalizer()

    def _stat(self) -> tuple[int, int]:
        st = os.fstat(self._fd)
        # not ctime: unlinking the old file (a rename over it) changes that, and is harmless
        return st.st_size, st.st_mtime_ns

    def check(self) -> None:
        """Raise CorruptionError if the file was written or truncated in place since the open
        (a writable map checks the size only: its own writes move the modification time)."""
        if not self._finalizer.alive:
            return
        now = self._stat()
        if self.writable and now[0] == self._signature[0]:
            return
        if now != self._signature:
            raise CorruptionError(
                "the filter file was changed in place since it was opened with mmap=True; its "
                "answers could be wrong, so none is given: reopen it (Filter.save replaces files "
                "by rename, which open filters never see)",
                self.path,
            )


def _lock(fd: int, exclusive: bool, path: str) -> None:
    """Take the open's advisory lock without waiting; FilterInUse when another open holds it."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        what = "opened" if exclusive else "opened with mmap=True"
        raise FilterInUse(
            f"{path!r} cannot be {what}: it is open with mmap='r+' elsewhere"
            + (" or memory-mapped by a reader" if exclusive else "")
            + " (one writable map per file, and no reader maps while it is open; close the other first)"
        ) from None
    except OSError:  # a file system without flock: no detection, as documented
        pass


def _unlock_and_close(fd: int) -> None:
    """Drop the lock explicitly (the mmap holds a duplicate of ``fd``, which would keep it), close."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        pass
    os.close(fd)
