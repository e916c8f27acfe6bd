"""The manifest: the store's whole state (live tables per level, counters) in one small file.

Every change (a flush, a compaction) writes the complete new state to ``MANIFEST.tmp``, fsyncs
it, renames it over ``MANIFEST`` and fsyncs the folder (``fs.write_atomic``), so after a crash
the set of live tables is exactly one that existed before it: the old or the new, never a mix.

Layout (little-endian)::

    8  magic b"BDBMANI1"
    4  u32 format version (1)
    4  u32 CRC32C of the body
    4  u32 body length
    body: u64 next file number | u64 last sequence | u64 log number | u32 table count |
          per table: u8 level | u64 number | u64 file size | u64 entries | u64 min seq |
                     u64 max seq | u32 len + min key | u32 len + max key
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field


from ..checksum import crc32c
from ..errors import CorruptionError
from .sstable.builder import TableInfo

MAGIC = b"BDBMANI1"
VERSION = 1
_HEAD = struct.Struct("<8sIII")
_STATE = struct.Struct("<QQQI")
_TABLE = struct.Struct("<BQQQQQ")


@dataclass
class ManifestState:
    next_file: int = 1
    last_seq: int = 0
    log_number: int = 0
    tables: list[tuple[int, TableInfo]] = field(default_factory=list)  # (level, info)


def encode(s: ManifestState) -> bytes:
    parts = [_STATE.pack(s.next_file, s.last_seq, s.log_number, len(s.tables))]
    for level, t in s.tables:
        parts.append(_TABLE.pack(level, t.number, t.file_size, t.entries, t.min_seq, t.max_seq))
        parts.append(struct.pack("<I", len(t.min_key)))
        parts.append(t.min_key)
        parts.append(struct.pack("<I", len(t.max_key)))
        parts.append(t.max_key)
    body = b"".join(parts)
    return _HEAD.pack(MAGIC, VERSION, crc32c(body), len(body)) + body


def decode(data: bytes, path: str) -> ManifestState:
    data = bytes(data)
    if len(data) < _HEAD.size:
        raise CorruptionError("manifest is truncated", path)
    magic, ver, crc, n = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        raise CorruptionError("bad manifest magic", path)
    if ver != VERSION:
        raise CorruptionError(f"unsupported manifest version {ver}", path)
    body = data[_HEAD.size :]
    if len(body) != n or crc32c(body) != crc:
        raise CorruptionError("manifest fails its CRC32C (or has the wrong length)", path)
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
