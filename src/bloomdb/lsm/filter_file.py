"""The store's filter file ``FILTERS``: a copy of every table's filter block, written when the
store closes, so that the next open reads no table file -- a table is opened on the first read
its filter lets through (:class:`.sstable.lazy.LazyTable`), and a key every filter rejects opens
none (LevelDB's table cache opens a table, reads its index and filter, on its first read; a
reopened 5M-key store's first 1000 missing-key reads open ~97% of its ~300 tables).

It is a cache, never the only copy of anything: each entry names its table by number and the
table file's identity when it was written (size, inode, modification time in ns); an entry whose
table file differs now (rewritten, damaged by a write, copied elsewhere) is not used -- the table
is opened at once as without the file --, and a file that is missing, short, of another version
or fails its CRC32C is ignored whole. Tables written after it (a crash before ``close``) are
opened at once too. Each copied block keeps its trailer (type byte, CRC32C): the probe kernel
checks it on the table's first lookup, and a copy that fails is read from the table file instead
(which fails open if damaged there too). Never fsynced: a torn file fails its checks.

Layout (little-endian; format version 1 in the header, a later version is ignored by this
reader)::

    magic "BDBFLTR1" (8 bytes), u32 version, u32 count
    count entries of ENTRY u64 words: number, file size, inode, mtime (ns), filter block size,
        its copy's offset in this file, entries, deletions, flags (bit 0: range tombstones), 0
    u32 CRC32C of everything above
    the copies: each filter block and its 5-byte trailer, at the offsets the entries give

Only the default, memory-mapped read route uses it (not ``cache_bytes``, not a read-only open),
and only on :class:`.fs.RealFS` (it needs ``os.stat``). Cost at open: one map of this file, its
header's CRC32C, one ``stat`` per table (~3 us); at close, when the set of tables changed since
the open: one write of every filter (~1.25 bytes a key at 10 bits a key).
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ..checksum import crc32c
from .fs import RealFS
from .sstable.block import TRAILER
from .sstable.builder import PARTITION_MAGIC
from .sstable.lazy import LazyTable

NAME = "FILTERS"
MAGIC = b"BDBFLTR1"
VERSION = 1
ENTRY = 10  #: u64 words per entry
_HEAD = struct.Struct("<8sII")
_E_NUMBER, _E_SIZE, _E_INO, _E_MTIME, _E_FSIZE, _E_OFF, _E_ENTRIES, _E_DELETIONS, _E_FLAGS = range(9)


def usable(fs, cache) -> bool:
    """Whether a store on ``fs`` with read route ``cache`` reads and writes the filter file."""
    return type(fs) is RealFS and not getattr(cache, "holds_tables", False)


class Loaded:
    """The filter file as read at open: its array and each entry by table number."""

    __slots__ = ("arr", "entries")

    def __init__(self, arr, entries: dict):
        self.arr = arr
        self.entries = entries

    def table(self, fs, path: str, number: int, cache, file_size: int):
        """A :class:`LazyTable` for table ``number`` when this file holds its filter and the table
        file is the one it was copied from, else None (open it now). Raises FileNotFoundError
        when the table file is missing (as opening it would)."""
        e = self.entries.get(number)
        if e is None or e[_E_SIZE] != file_size:
            return None
        st = os.stat(path)
        if st.st_size != file_size or st.st_ino != e[_E_INO] or st.st_mtime_ns != e[_E_MTIME]:
            return None
        facts = (e[_E_ENTRIES], e[_E_DELETIONS], bool(e[_E_FLAGS] & 1), st.st_ino, st.st_mtime_ns)
        return LazyTable(fs, path, number, cache, file_size, facts, self.arr, e[_E_OFF], e[_E_FSIZE])


def load(fs, folder: str):
    """The store's filter file as :class:`Loaded`, or None (absent, unreadable, another version,
    damaged). Never raises for the file's content."""
    path = os.path.join(folder, NAME)
    try:
        buf = fs.read_all(path)
    except OSError:
        return None
    n = len(buf)
    if n < _HEAD.size + 4:
        return None
    magic, version, count = _HEAD.unpack_from(buf, 0)
    end = _HEAD.size + 8 * ENTRY * count
    if magic != MAGIC or version != VERSION or end + 4 > n:
        return None
    with memoryview(buf) as mv:
        if crc32c(mv[:end]) != struct.unpack_from("<I", buf, end)[0]:
            return None
    arr = np.ndarray((n,), np.uint8, buffer=buf)
    rows = arr[_HEAD.size : end].view(np.uint64).reshape(count, ENTRY).astype(np.int64).tolist()
    entries = {}
    for r in rows:
        off, size = r[_E_OFF], r[_E_FSIZE]
        if 0 <= off and size > 0 and off + size + TRAILER <= n:
            entries[r[_E_NUMBER]] = r
    return Loaded(arr, entries)


def _copy_of(t):
    """``(filter block with its trailer as a buffer, facts, file identity or None)`` of table
    ``t`` for the file, or None when it has none to copy (no filter, partitioned, not mapped)."""
    if isinstance(t, LazyTable):  # its identity as checked at open (a file changed since is not vouched for)
        foff, fsize = t.filter_block
        return t.filter_buffer[foff : foff + fsize + TRAILER], t._facts
    fo, fsize = getattr(t, "filter_block", (0, 0))
    arr = getattr(t, "_arr", None)
    if not fsize or arr is None or fo + fsize + TRAILER > len(arr) or getattr(t, "partitions", None) is not None:
        return None
    block = arr[fo : fo + fsize + TRAILER]
    if bytes(block[:4]) == PARTITION_MAGIC:
        return None
    st = os.stat(t.path)
    if st.st_size != t.file_size:
        return None
    return block, (t.entries, t.deletions, bool(t.range_dels), st.st_ino, st.st_mtime_ns)


def save(fs, folder: str, refs, known) -> frozenset | None:
    """Write the filter file of the tables ``refs`` (a version's ``TableRef`` s) unless it would
    hold exactly the tables of ``known`` (the numbers the file read at open held, validated).
    Returns the numbers written (or ``known`` when nothing was written); None when the write
    failed (the file is then removed: it is only a cache)."""
    path = os.path.join(folder, NAME)
    tmp = path + ".tmp"
    try:
        items = []
        for r in refs:
            c = _copy_of(r.table)
            if c is not None:
                items.append((r, c))
        numbers = frozenset(r.number for r, _ in items)
        if numbers == known:
            return known
        head_end = _HEAD.size + 8 * ENTRY * len(items)
        pos = (head_end + 4 + 7) & ~7
        rows = np.zeros((len(items), ENTRY), np.uint64)
        parts = []
        for i, (r, (block, facts)) in enumerate(items):
            entries, deletions, rdel, ino, mtime = facts
            rows[i, :9] = (r.number, r.table.file_size, ino, mtime, len(block) - TRAILER, pos, entries, deletions,
                           1 if rdel else 0)
            pad = (-(pos + len(block))) & 7
            parts.append(block)
            if pad:
                parts.append(bytes(pad))
            pos += len(block) + pad
        head = _HEAD.pack(MAGIC, VERSION, len(items)) + rows.tobytes()
        head += struct.pack("<I", crc32c(head))
        head += bytes((-len(head)) & 7)
    except OSError:  # a table's file gone or changed under us
        _remove_quietly(tmp, path)
        return None
    return numbers if replace_cache_file(path, [head] + parts) else None


def replace_cache_file(path: str, parts) -> bool:
    """Make ``parts`` (buffers) the content of the derived (cache) file ``path``: written as
    ``path + ".tmp"``, then renamed over ``path``, without fsync (a torn file fails its own
    checks at the next read). On ``OSError`` both are removed -- a cache file is never left
    stale -- and False is returned. Used for ``FILTERS`` and ``STOREFILTER``."""
    tmp = path + ".tmp"
    try:
        _write(tmp, parts)
        os.replace(tmp, path)
        return True
    except OSError:
        _remove_quietly(tmp, path)
        return False


def _remove_quietly(*paths: str) -> None:
    for p in paths:
        try:
            os.remove(p)
        except OSError:
            pass


def _write(path: str, parts) -> None:
    """Write ``parts`` (buffers) as the new file ``path``, a ``writev`` per 512 of them."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        for i in range(0, len(parts), 512):
            chunk = [memoryview(p).cast("B") if isinstance(p, np.ndarray) else p for p in parts[i : i + 512]]
            want = sum(len(c) for c in chunk)
            done = os.writev(fd, chunk)
            if done != want:  # a short write: the rest one by one
                rest = b"".join(bytes(c) for c in chunk)[done:]
                while rest:
                    rest = rest[os.write(fd, rest):]
    finally:
        os.close(fd)
