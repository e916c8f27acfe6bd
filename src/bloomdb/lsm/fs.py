"""The file-system interface of the store: the real one and a fault-injecting one for tests.

The store touches files only through these methods, so crash and fault tests can tear writes and
fail fsyncs without root or special mounts:

* ``open_append(path)`` -> a writer with ``write(b)``, ``tell()`` (size), ``sync()``, ``close()``
  (WAL, tables);
* ``write_atomic(path, data)``: write a temporary file, fsync it, rename over ``path``, fsync
  the folder (manifest);
* ``read_all(path)`` -> a bytes-like buffer of the whole file (the real FS memory-maps it);
* ``listdir``, ``exists``, ``remove``, ``rename``, ``makedirs``, ``size``;
* optional: ``link(src, dst)`` (a hard link; raises ``OSError`` where the file system has none:
  checkpoints then copy), ``sync_dir(path)``.
"""

from __future__ import annotations

import mmap
import os
import threading


class RealFile:
    """Unbuffered append-only file: every ``write`` reaches the OS (survives a process kill)."""

    def __init__(self, path: str, fsync: bool = True):
        self.path = path
        self._fsync = fsync
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, data) -> None:
        n = os.write(self._fd, data)
        if n == len(data):
            return
        view = memoryview(data).cast("B")[n:]
        while view.nbytes:
            n = os.write(self._fd, view)
            view = view[n:]

    def tell(self) -> int:
        """The file's size (where the next append lands)."""
        return os.lseek(self._fd, 0, os.SEEK_END)

    def sync(self) -> None:
        if self._fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class RealFS:
    """The operating system's files (``os``/``mmap``).

    ``fsync=False`` skips every fsync (data survives a process crash but not a power cut): for
    tests and benchmarks that are not about durability.
    """

    def __init__(self, fsync: bool = True):
        self.fsync = fsync

    def open_append(self, path: str) -> RealFile:
        return RealFile(path, self.fsync)

    def write_durable(self, path: str, data) -> None:
        """Append ``data`` to ``path`` (a new file) and sync it before returning."""
        f = self.open_append(path)
        try:
            f.write(data)
            f.sync()
        finally:
            f.close()

    def write_atomic(self, path: str, data: bytes) -> None:
        tmp = path + ".tmp"
        self.remove(tmp)  # a temporary file a crash left would be appended to
        self.write_durable(tmp, data)
        os.replace(tmp, path)
        self.sync_dir(os.path.dirname(path) or ".")

    def sync_dir(self, path: str) -> None:
        if not self.fsync:
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_all(self, path: str):
        """The file's bytes: a private memory map (``b""`` for an empty file). Private
        (``ACCESS_COPY``), not read-only: a numpy view of it is writable, so a filter read in place
        from a table's map (:meth:`Table.filter`) is probed by the family's own kernels, which
        take writable arrays; nothing writes to it, and a write would never reach the file."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))  # no file object: ~4 us less per table
        try:  # no fstat of our own: mmap takes the size itself and refuses an empty file
            return mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)
        except ValueError:
            if os.fstat(fd).st_size == 0:
                return b""
            raise
        finally:
            os.close(fd)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    def rename(self, src: str, dst: str) -> None:
        """Rename ``src`` over ``dst`` (durable with the next ``sync_dir``/``write_atomic``)."""
        os.replace(src, dst)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def link(self, src: str, dst: str) -> None:
        """Hard-link ``src`` as ``dst`` (``OSError`` across devices or where links are refused)."""
        os.link(src, dst)

    def size(self, path: str) -> int:
        return os.path.getsize(path)


class InjectedFault(OSError):
    """An I/O error raised on purpose by :class:`FaultyFS`."""


class _FaultyFile(RealFile):
    def __init__(self, path: str, fs: "FaultyFS"):
        super().__init__(path)
        self._fs = fs

    def write(self, data) -> None:
        fs = self._fs
        with fs._lock:
            budget = fs.write_budget
            if budget is not None:
                if len(data) > budget:
                    # torn write: only a prefix reaches the file, then the "machine dies"
                    super().write(memoryview(data)[:budget])
                    fs.write_budget = 0
                    fs.faults += 1
                    raise InjectedFault(f"torn write on {self.path} after {budget} bytes")
                fs.write_budget = budget - len(data)
        super().write(data)

    def sync(self) -> None:
        fs = self._fs
        with fs._lock:
            if fs.fail_sync:
                fs.faults += 1
                raise InjectedFault(f"fsync failed on {self.path}")
        super().sync()


class FaultyFS(RealFS):
    """Real files with injected faults.

    * ``write_budget``: bytes that may still be written; the write that would exceed it writes
      only the bytes that fit (a torn write) and raises :class:`InjectedFault`; ``None`` = no limit.
    * ``fail_sync``: every ``sync`` raises :class:`InjectedFault` (the data may or may not be on disk).
    * ``faults``: how many faults were injected.
    """

    def __init__(self, write_budget: int | None = None, fail_sync: bool = False):
        super().__init__(fsync=True)
        self.write_budget = write_budget
        self.fail_sync = fail_sync
        self.faults = 0
        self._lock = threading.Lock()

    def open_append(self, path: str) -> _FaultyFile:
        return _FaultyFile(path, self)
