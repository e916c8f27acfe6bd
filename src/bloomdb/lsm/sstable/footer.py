"""The 64-byte table footer and the meta block (table facts).

Footer (little-endian)::

    u64 filter offset | u64 filter size | u64 meta offset | u64 meta size |
    u64 index offset  | u64 index size  | u32 format version | u32 CRC32C of the 52 bytes before |
    u64 magic 0x0031544253424442 (the bytes "BDBSBT1\\0")
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ...checksum import crc32c

from ...errors import CorruptionError

MAGIC = 0x0031544253424442
FORMAT_VERSION = 1
FOOTER = struct.Struct("<QQQQQQIIQ")
FOOTER_SIZE = FOOTER.size  # 64
_META_FIXED = struct.Struct("<QQQQQQI")


@dataclass(frozen=True)
class Handles:
    filter_off: int
    filter_size: int
    meta_off: int
    meta_size: int
    index_off: int
    index_size: int


def encode_footer(h: Handles) -> bytes:
    body = struct.pack("<QQQQQQI", h.filter_off, h.filter_size, h.meta_off, h.meta_size,
                       h.index_off, h.index_size, FORMAT_VERSION)
    return body + struct.pack("<IQ", crc32c(body), MAGIC)


def decode_footer(buf, path: str) -> Handles:
    n = len(buf)
    if n < FOOTER_SIZE:
        raise CorruptionError(f"table of {n} bytes is shorter than its footer", path)
    fo, fs, mo, ms, io, isz, ver, crc, magic = FOOTER.unpack_from(buf, n - FOOTER_SIZE)
    if magic != MAGIC:
        raise CorruptionError("bad table magic (not a bloomdb table, or truncated)", path)
    if crc32c(buf[n - FOOTER_SIZE : n - 12]) != crc:
        raise CorruptionError("table footer fails its CRC32C", path)
    if ver != FORMAT_VERSION:
        raise CorruptionError(f"unsupported table format version {ver}", path)
    return Handles(fo, fs, mo, ms, io, isz)


@dataclass(frozen=True)
class Meta:
    entries: int
    deletions: int
    min_seq: int
    max_seq: int
    key_bytes: int
    value_bytes: int
    num_blocks: int
    min_key: bytes
    max_key: bytes
    filter_spec: str | None
    #: range tombstones ``(start, end, seq)`` the table carries (:mod:`bloomdb.lsm.rangedel`)
    range_dels: tuple = ()
    #: the prefix extractor's name and the serialized filter over the table's key prefixes
    prefix_name: str | None = None
    prefix_filter: bytes = b""


#: Marks the meta block's optional range-tombstone section (a table without tombstones has none,
#: so its meta block is byte-for-byte the one format 1 always had).
RDEL_MARK = b"RDEL"
#: Marks the optional prefix-filter section: extractor name and filter bytes (:mod:`bloomdb.lsm.prefix`).
PFX_MARK = b"PFXF"


def encode_meta(m: Meta) -> bytes:
    spec = (m.filter_spec or "").encode()
    return b"".join((
        _META_FIXED.pack(m.entries, m.deletions, m.min_seq, m.max_seq, m.key_bytes, m.value_bytes, m.num_blocks),
        struct.pack("<I", len(m.min_key)), m.min_key, struct.pack("<I", len(m.max_key)), m.max_key,
        struct.pack("<H", len(spec)), spec, _encode_rdels(m.range_dels), _encode_prefix(m),
    ))  # fmt: skip


def _encode_prefix(m: Meta) -> bytes:
    """``PFXF | u16 len, extractor name | u32 len, filter bytes``; empty without a prefix filter."""
    if m.prefix_name is None:
        return b""
    name = m.prefix_name.encode()
    return b"".join((PFX_MARK, struct.pack("<H", len(name)), name, struct.pack("<I", len(m.prefix_filter)), m.prefix_filter))


def _decode_prefix(b: bytes, p: int) -> tuple[str | None, bytes, int]:
    if b[p : p + 4] != PFX_MARK:
        return None, b"", p
    (n,) = struct.unpack_from("<H", b, p + 4)
    name = bytes(b[p + 6 : p + 6 + n]).decode()
    p += 6 + n
    (f,) = struct.unpack_from("<I", b, p)
    blob = bytes(b[p + 4 : p + 4 + f])
    if len(blob) != f:
        raise ValueError("the prefix filter runs past the block")
    return name, blob, p + 4 + f


def _encode_rdels(tombs) -> bytes:
    """``RDEL | u32 n | n x (u32 len, start, u32 len, end, u64 seq)``; empty for none."""
    if not tombs:
        return b""
    parts = [RDEL_MARK, struct.pack("<I", len(tombs))]
    for s, e, q in tombs:
        parts += [struct.pack("<I", len(s)), s, struct.pack("<I", len(e)), e, struct.pack("<Q", q)]
    return b"".join(parts)


def _decode_rdels(b: bytes, p: int) -> tuple[tuple, int]:
    """The section at ``p`` (none when another follows or ``b`` ends there) and its end; raises
    ``ValueError``/``struct.error``."""
    if b[p : p + 4] != RDEL_MARK:
        return (), p
    (n,) = struct.unpack_from("<I", b, p + 4)
    p += 8
    out = []
    for _ in range(n):
        (ls,) = struct.unpack_from("<I", b, p)
        s = bytes(b[p + 4 : p + 4 + ls])
        p += 4 + ls
        (le,) = struct.unpack_from("<I", b, p)
        e = bytes(b[p + 4 : p + 4 + le])
        p += 4 + le
        (q,) = struct.unpack_from("<Q", b, p)
        p += 8
        if len(s) != ls or len(e) != le:
            raise ValueError("a range tombstone runs past the block")
        out.append((s, e, q))
    return tuple(out), p


def decode_meta(b: bytes, path: str) -> Meta:
    try:
        fixed = _META_FIXED.unpack_from(b, 0)
        p = _META_FIXED.size
        (n,) = struct.unpack_from("<I", b, p)
        mn = b[p + 4 : p + 4 + n]
        p += 4 + n
        (n,) = struct.unpack_from("<I", b, p)
        mx = b[p + 4 : p + 4 + n]
        p += 4 + n
        (n,) = struct.unpack_from("<H", b, p)
        spec = b[p + 2 : p + 2 + n].decode()
        rdels, p = _decode_rdels(b, p + 2 + n)
        pname, pfilter, p = _decode_prefix(b, p)
        if p != len(b):
            raise ValueError("trailing bytes")
    except (struct.error, ValueError, UnicodeDecodeError) as e:
        raise CorruptionError(f"malformed meta block: {e}", path) from None
    return Meta(*fixed, bytes(mn), bytes(mx), spec or None, rdels, pname, pfilter)
