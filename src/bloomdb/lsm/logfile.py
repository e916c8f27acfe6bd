"""The write-ahead log's file on the real file system: appends through a shared memory map.

A ``write`` syscall per record cost about 1 us of a put's ~3 us (measured, docs/benchmarks.md);
copying the record into a shared mapping of the file costs ~0.25 us and gives the same
durability: the bytes are in the OS page cache as soon as the copy returns, so they survive the
process being killed (SIGKILL) exactly as a ``write`` does, and ``sync()`` (``msync`` + ``fsync``)
makes them survive an OS crash. LevelDB's ``PosixMmapFile`` wrote its logs the same way.

Space is reserved ahead in chunks with ``posix_fallocate`` before it is mapped, so a full disk is
an ``OSError`` (ENOSPC) at the reservation, never a ``SIGBUS`` on a write into the mapping; the
reserved chunk is then written with zeros (``pwrite``, :func:`reserve`), which puts its pages in
the page cache with their blocks allocated: a first write into a page of the mapping is then a
minor fault. Into a page only reserved by ``fallocate``, the write fault allocates and zeroes
the page and converts the extent (ext4) *while holding the GIL*: a 125 KB batch record cost ~137
us of faults against ~12 us of copy (~1.1 us per KB of log, every put and batch paid it); the
``pwrite`` of the zeros costs ~26 us per 125 KB and releases the GIL. The
reserved tail stays zero bytes, which :func:`.wal.read_log` reads as the log's end (no record
starts with zeros: its length field is at least 12). The file is never cut back, not even at
close: a checkpoint or a read-only process may hold a map of it, and touching a mapped page past
a truncated end kills the process (SIGBUS). A log recovery read to a clean end (its records,
then zeros only: :func:`.wal.read_log`'s ``ends``) is mapped again and appended to from the end
of its records (``at``), so a reopened store keeps writing to its newest log (LevelDB's
``reuse_logs``).

Cost: one ``memcpy`` per record; one ``posix_fallocate``, one ``pwrite`` of zeros and one
``mremap`` per ``CHUNK`` (1 MiB) of log; at most one chunk of zeros per log on disk (logs are
deleted once their memtable is flushed, mostly before the OS writes their pages back).
"""

from __future__ import annotations

import errno
import mmap
import os

CHUNK = 1 << 20
_ZEROS = memoryview(bytes(CHUNK))


def reserve(fd: int, start: int, end: int) -> None:
    """Bytes ``[start, end)`` of file ``fd`` (past its old end) allocated and written with zeros:
    ``posix_fallocate`` (a full disk raises ``OSError`` ENOSPC here), then ``pwrite`` of zeros
    (the pages in the page cache, so a mapped write into them is a minor fault: see the module's
    docstring). Both release the GIL."""
    os.posix_fallocate(fd, start, end - start)
    while start < end:
        n = os.pwrite(fd, _ZEROS[: min(CHUNK, end - start)], start)
        if n <= 0:
            raise OSError(errno.EIO, f"pwrite wrote nothing at {start}")
        start += n


class MappedLogFile:
    """An append-only file written through ``mmap`` (the ``open_append`` protocol: ``write``,
    ``tell``, ``sync``, ``close``). ``fast_write`` is the mapping's own ``write``: C-speed, it
    raises ``ValueError`` without writing anything when the record does not fit the reserved
    space (then call :meth:`write`, which reserves more)."""

    def __init__(self, path: str, fsync: bool = True, at: int | None = None):
        """A new file, or (``at`` given) an existing one written from byte ``at`` on, which the
        caller checked holds zero bytes only from there (``ValueError`` if it is shorter)."""
        self.path = path
        self._fsync = fsync
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(self._fd).st_size
            if (at is None and size != 0) or (at is not None and at > size):
                raise ValueError("not a new file" if at is None else "the log is shorter than its records")
            at = at or 0
            room = size if size > at else at + CHUNK - at % CHUNK
            if room > size:
                reserve(self._fd, size, room)
            self._mm = mmap.mmap(self._fd, room)
            self._mm.seek(at)
        except BaseException:
            os.close(self._fd)
            raise
        self.fast_write = self._mm.write

    def write(self, data) -> None:
        mm = self._mm
        pos, size = mm.tell(), mm.size()
        need = len(data)
        if size - pos < need:
            new = pos + need + CHUNK - (pos + need) % CHUNK
            reserve(self._fd, size, new)  # ENOSPC here, not SIGBUS later
            mm.resize(new)
        mm.write(data)

    def tell(self) -> int:
        """Bytes written (where the next record lands)."""
        return self._mm.tell()

    def sync(self) -> None:
        if self._fsync:
            self._mm.flush()
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            self._mm.close()  # the reserved tail stays (see the module's docstring)
        finally:
            os.close(self._fd)
            self._fd = -1


def open_log(fs, path: str, at: int | None = None):
    """The file a :class:`~.wal.LogWriter` appends to: a :class:`MappedLogFile` when ``fs`` is
    the plain real file system (a subclass that changes ``open_append`` -- fault injection in
    tests -- keeps its own files), else ``fs.open_append(path)``. A file system without
    ``posix_fallocate`` or shared maps falls back to plain appends too. ``at``: an existing log
    appended to from byte ``at`` (zeros only after it); plain appends can do that only when
    ``at`` is the file's size, else ``ValueError`` (the caller starts a new log instead)."""
    from .fs import RealFS

    if isinstance(fs, RealFS) and type(fs).open_append is RealFS.open_append and hasattr(os, "posix_fallocate"):
        try:
            return MappedLogFile(path, fs.fsync, at)
        except (OSError, ValueError):
            pass
    if at is not None and fs.size(path) != at:
        raise ValueError(f"{path}: cannot append after its last record")
    return fs.open_append(path)
