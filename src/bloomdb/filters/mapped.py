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
"""

from __future__ import annotations

import mmap as _mmap
import os
import weakref

from ..errors import CorruptionError


class MappedFile:
    """The open file behind a mapped payload: ``map`` (the mmap) and :meth:`check`."""

    __slots__ = ("path", "map", "_fd", "_signature", "__weakref__")

    def __init__(self, path: str) -> None:
        """Open ``path`` read-only and map it copy-on-write. Raises CorruptionError for an empty file."""
        fd = os.open(path, os.O_RDONLY)
        try:
            self._fd = fd
            self.path = path
            self._signature = self._stat()
            if self._signature[0] == 0:
                raise CorruptionError("empty file", path)
            self.map = _mmap.mmap(fd, 0, access=_mmap.ACCESS_COPY)
        except BaseException:
            os.close(fd)
            raise
        weakref.finalize(self, os.close, fd)

    def _stat(self) -> tuple[int, int]:
        st = os.fstat(self._fd)
        # not ctime: unlinking the old file (a rename over it) changes that, and is harmless
        return st.st_size, st.st_mtime_ns

    def check(self) -> None:
        """Raise CorruptionError if the file was written or truncated in place since the open."""
        if self._stat() != self._signature:
            raise CorruptionError(
                "the filter file was changed in place since it was opened with mmap=True; its "
                "answers could be wrong, so none is given: reopen it (Filter.save replaces files "
                "by rename, which open filters never see)",
                self.path,
            )
