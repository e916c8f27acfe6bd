"""The exception hierarchy of bloomdb.

Every error bloomdb raises on purpose is a :class:`BloomDBError`. The children also derive from
the matching built-in (``ValueError``, ``TypeError``, ``KeyError``) so code written against the
built-ins keeps working.
"""

from __future__ import annotations


class BloomDBError(Exception):
    """Base class of every error raised on purpose by bloomdb."""


class InvalidArgument(BloomDBError, ValueError):
    """A parameter is out of its domain (negative capacity, NaN bits/key, fpr outside (0, 1), ...)."""


class KeyTypeError(BloomDBError, TypeError):
    """A key (or batch of keys) is of a type bloomdb does not accept."""


class CorruptionError(BloomDBError, ValueError):
    """Persisted bytes are damaged, truncated or of an unknown format.

    ``path`` names the file when the bytes came from one.
    """

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


# Short alias used in the design notes.
Corruption = CorruptionError


class IncompatibleFilters(InvalidArgument):
    """Two filters cannot be combined (different family, size or parameters)."""


class FilterFull(BloomDBError):
    """A fixed-capacity filter (cuckoo) could not place a key, or a filter created with
    ``on_full="raise"`` was asked to go past its capacity. Nothing added before is lost."""


class CapacityWarning(UserWarning):
    """A filter's estimated FP rate went past twice its target: it holds more keys than it was
    sized for (the message names the filter, its count and estimated FP rate)."""


class FilterFileNotFound(BloomDBError, FileNotFoundError):
    """A filter file to open does not exist (a :class:`FileNotFoundError` too)."""


class FilterInUse(BloomDBError):
    """A filter file is already open for writing (``mmap="r+"``) elsewhere, or a writable open
    found it memory-mapped by a reader (advisory ``flock``; one writer per file)."""


class OutOfMemory(BloomDBError, MemoryError):
    """The memory a filter needs could not be allocated (the message says how much)."""


class StaticFilterError(BloomDBError, TypeError):
    """A static filter (built once from all keys) was asked to add a key after it was built."""


class NotFoundError(BloomDBError, KeyError):
    """A key that must be present (e.g. for ``remove``) is not."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class FilterBuildError(BloomDBError):
    """A static filter could not be built from its keys (e.g. every Ribbon seed failed to band)."""


class StoreClosed(BloomDBError, RuntimeError):
    """A store (or an object reading it) was used after ``close()`` (a ``RuntimeError`` too, as
    plyvel raises for a closed database)."""


class IteratorInvalidError(BloomDBError):
    """A raw iterator (``db.raw_iterator()``) was read or stepped while it is not on an entry:
    before its first seek, or after stepping off either end (plyvel's ``IteratorInvalidError``)."""


class StoreReadOnly(BloomDBError):
    """A write (or a flush, compaction, checkpoint) on a store opened with ``read_only=True``."""


class StoreIOError(BloomDBError, OSError):
    """The store could not read or write its folder (a read-only folder, a full disk, ...). The
    message names the path and what to do; ``errno`` and ``filename`` are the operating system's."""

    def __init__(self, message: str, errno: int | None = None, filename: str | None = None):
        super().__init__(message)
        self.errno = errno
        self.filename = filename

    def __str__(self) -> str:  # OSError's own would print "[Errno N] None: filename"
        return str(self.args[0])
