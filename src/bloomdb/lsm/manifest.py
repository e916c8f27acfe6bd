"""The manifest: the store's whole state (live tables per level, counters) in one small file.

The file is a log of *records*, each the complete state after one change; the last one is the
state (LevelDB's ``MANIFEST`` log holds edits; ours holds whole states, so a record never
depends on the ones before it). A change (a flush, a compaction) appends its record and fsyncs
the file: one ``write`` and one ``fsync``. The first write of a process, and any write that
would let the file grow past :func:`rewrite_due`'s bound, replaces the file instead with one
record (``fs.write_atomic``: ``MANIFEST.tmp`` written, fsynced, renamed over ``MANIFEST``, the
folder fsynced), so a process appends only to a file it wrote whole itself. After a crash the
set of live tables is exactly one that existed before it: the old or the new, never a mix.

Layout (little-endian), per record (version 2)::

    8  magic b"BDBMANI1"
    4  u32 format version (2)
    4  u32 CRC32C of the body
    4  u32 body length
    4  u32 CRC32C of the 20 bytes above (so a damaged length is damage, not a torn tail)
    body: u64 next file number | u64 last sequence | u64 log number | u32 table count |
          per table: u8 level | u64 number | u64 file size | u64 entries | u64 min seq |
                     u64 max seq | u32 len + min key | u32 len + max key

A record cut short by the end of the file after at least one whole record (a crash during an
append: its change was never acknowledged, nothing was deleted on its account) is ignored, and so
is such a prefix followed by zeros from a page boundary to the end, or a tail of zeros alone (after
a power loss some file systems keep an append's new size but not all of its pages; LevelDB's log
reader skips a zero tail too); any other damage raises :class:`CorruptionError`. Version 1 files (one record of the 20-byte header
without its CRC, the whole file) are still read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field


from ..checksum import crc32c
from ..errors import CorruptionError
from .sstable.builder import TableInfo

MAGIC = b"BDBMANI1"
VERSION = 2
_HEAD = struct.Struct("<8sIII")  # version 1's whole header; version 2's before its CRC
_HEAD2 = struct.Struct("<8sIIII")
_STATE = struct.Struct("<QQQI")
_TABLE = struct.Struct("<BQQQQQ")


@dataclass
class ManifestState:
    next_file: int = 1
    last_seq: int = 0
    log_number: int = 0
    tables: list[tuple[int, TableInfo]] = field(default_factory=list)  # (level, info)


def _table_bytes(level: int, t: TableInfo) -> bytes:
    """One table's part of a manifest record."""
    return b"".join((_TABLE.pack(level, t.number, t.file_size, t.entries, t.min_seq, t.max_seq),
                     struct.pack("<I", len(t.min_key)), t.min_key, struct.pack("<I", len(t.max_key)), t.max_key))


def encode(s: ManifestState, cache: dict | None = None) -> bytes:
    """``s`` as one manifest record. ``cache`` (``table number << 3 | level -> bytes``, kept by the
    caller between records, for one store: a number names one table file there for ever, so its
    facts never change): each table's part is encoded once per level it lives at -- a store
    rewrites every table's facts in every edit, ~3 us each, so an edit of a 300-table store cost
    ~1 ms of the interpreter's time, taken from the writer. The caller keeps one cache per store
    and prunes it (:func:`prune`)."""
    parts = [_STATE.pack(s.next_file, s.last_seq, s.log_number, len(s.tables))]
    if cache is None:
        parts.extend(_table_bytes(level, t) for level, t in s.tables)
    else:
        for level, t in s.tables:
            k = t.number << 3 | level  # ints and bytes only: nothing per table for the collector to track
            b = cache.get(k)
            if b is None:
                b = cache[k] = _table_bytes(level, t)
            parts.append(b)
    body = b"".join(parts)
    head = _HEAD.pack(MAGIC, VERSION, crc32c(body), len(body))
    return head + struct.pack("<I", crc32c(head)) + body


def prune(cache: dict, s: ManifestState) -> None:
    """Drop from an :func:`encode` cache the tables ``s`` no longer lists, once it holds twice
    as many parts as ``s`` has tables (amortised O(1) per record)."""
    if len(cache) > 2 * len(s.tables) + 64:
        live = {t.number << 3 | level for level, t in s.tables}
        for k in [k for k in cache if k not in live]:
            del cache[k]


def rewrite_due(file_bytes: int, record_bytes: int) -> bool:
    """Whether a manifest of ``file_bytes`` should be replaced rather than appended to by a
    record of ``record_bytes``: past 1 MiB and past 16 records of this size (a reader decodes
    one record but reads and checks the whole file)."""
    return file_bytes + record_bytes > max(1 << 20, 16 * record_bytes)


_PAGE = 4096


def _torn_tail(data: bytes, pos: int) -> bool:
    """Whether ``data[pos:]`` is what a crash during one append can leave: a proper prefix of a
    record (its magic's prefix; its header CRC intact once the header is whole), or only zeros,
    or such a prefix followed by zeros from a page boundary to the end (a power loss that kept
    the append's new size but not all of its pages). A whole record is never a torn tail."""
    nonzero = len(data.rstrip(b"\0"))
    if nonzero <= pos:
        return True
    ends = [len(data)]
    aligned = -(-nonzero // _PAGE) * _PAGE
    if aligned < len(data):
        ends.append(aligned)
    for end in ends:
        rest = end - pos
        if data[pos : pos + min(rest, len(MAGIC))] != MAGIC[: min(rest, len(MAGIC))]:
            continue
        if rest < _HEAD2.size:
            return True
        head = _HEAD2.unpack_from(data, pos)
        if crc32c(data[pos : pos + _HEAD.size]) == head[4] and rest < _HEAD2.size + head[3]:
            return True
    return False


def _last_body(data: bytes, path: str) -> bytes:
    """The body of the file's last whole record (see the module's docstring)."""
    if len(data) < _HEAD.size:
        raise CorruptionError("manifest is truncated", path)
    magic, ver, crc, n = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        raise CorruptionError("bad manifest magic", path)
    if ver == 1:
        body = data[_HEAD.size :]
        if len(body) != n or crc32c(body) != crc:
            raise CorruptionError("manifest fails its CRC32C (or has the wrong length)", path)
        return body
    if ver != VERSION:
        raise CorruptionError(f"unsupported manifest version {ver}", path)
    pos, last = 0, None
    while pos < len(data):
        rest = len(data) - pos
        if rest < _HEAD2.size or rest < _HEAD2.size + _HEAD2.unpack_from(data, pos)[3]:
            problem = "is truncated or damaged"
        else:
            magic, ver, crc, n, hcrc = _HEAD2.unpack_from(data, pos)
            body = data[pos + _HEAD2.size : pos + _HEAD2.size + n]
            if magic != MAGIC or ver != VERSION or crc32c(data[pos : pos + _HEAD.size]) != hcrc:
                problem = "has a damaged header"
            elif crc32c(body) != crc:
                problem = "fails its CRC32C"
            else:
                last, pos = body, pos + _HEAD2.size + n
                continue
        if last is not None and _torn_tail(data, pos):
            break  # a crash during an append: its change was never acknowledged
        raise CorruptionError(f"manifest record at byte {pos} {problem}", path)
    return last


def decode(data: bytes, path: str) -> ManifestState:
    """The state of the manifest bytes ``data`` (its last whole record). Raises
    :class:`CorruptionError` naming ``path`` for anything but a torn last append."""
    body = _last_body(bytes(data), path)
    try:
        nf, ls, ln, count = _STATE.unpack_from(body, 0)
        p = _STATE.size
        tables = []
        for _ in range(count):
            level, num, size, entries, mins, maxs = _TABLE.unpack_from(body, p)
            p += _TABLE.size
            (kl,) = struct.unpack_from("<I", body, p)
            mn = body[p + 4 : p + 4 + kl]
            p += 4 + kl
            (kl,) = struct.unpack_from("<I", body, p)
            mx = body[p + 4 : p + 4 + kl]
            p += 4 + kl
            tables.append((level, TableInfo(num, size, entries, mn, mx, mins, maxs)))
        if p != len(body):
            raise ValueError("trailing bytes")
    except (struct.error, ValueError) as e:
        raise CorruptionError(f"malformed manifest: {e}", path) from None
    return ManifestState(nf, ls, ln, tables)
