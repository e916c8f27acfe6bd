"""Block framing shared by the builder and reader: the 5-byte trailer and per-block compression.

Every block of a table is followed by a trailer: ``u8 type`` (0 raw, 1 zstd, 2 lz4 frame) and
``u32`` CRC32C of the stored block bytes followed by the type byte.
"""

from __future__ import annotations

import struct


from ...checksum import crc32c
from ...errors import CorruptionError, InvalidArgument

TRAILER = 5
RAW, ZSTD, LZ4 = 0, 1, 2
_CODES = {None: RAW, "zstd": ZSTD, "lz4": LZ4}
_U32 = struct.Struct("<I")


def compression_code(name: str | None) -> int:
    try:
        return _CODES[name]
    except KeyError:
        raise InvalidArgument(f"unknown compression {name!r}") from None


def frame(block: bytes, code: int) -> bytes:
    """``block`` compressed with ``code`` when that saves at least 1/8, plus its trailer."""
    typ = RAW
    if code == ZSTD:
        import zstandard

        c = zstandard.ZstdCompressor(level=3).compress(block)
        if len(c) < len(block) - len(block) // 8:
            block, typ = c, ZSTD
    elif code == LZ4:
        import lz4.frame

        c = lz4.frame.compress(block)
        if len(c) < len(block) - len(block) // 8:
            block, typ = c, LZ4
    t = bytes((typ,))
    return b"".join((block, t, _U32.pack(crc32c(t, crc32c(block)))))


def unframe(buf, off: int, size: int, path: str, what: str) -> tuple[int, bytes | None]:
    """Check the trailer of the block at ``buf[off:off+size]``; ``(type, decompressed or None)``.

    ``None`` means the block is raw and may be read in place. Raises :class:`CorruptionError`.
    """
    end = off + size + TRAILER
    if off < 0 or size < 0 or end > len(buf):
        raise CorruptionError(f"{what} block at {off} (+{size}) lies outside the file", path)
    stored = buf[off : off + size + 1]
    (crc,) = _U32.unpack_from(buf, off + size + 1)
    if crc32c(stored) != crc:
        raise CorruptionError(f"{what} block at offset {off} fails its CRC32C", path)
    typ = stored[-1]
    if typ == RAW:
        return RAW, None
    try:
        if typ == ZSTD:
            import zstandard

            return typ, zstandard.ZstdDecompressor().decompress(stored[:-1])
        if typ == LZ4:
            import lz4.frame

            return typ, lz4.frame.decompress(stored[:-1])
    except Exception as e:  # noqa: BLE001 - any decoder failure is damage
        raise CorruptionError(f"{what} block at offset {off} does not decompress: {e}", path) from None
    raise CorruptionError(f"{what} block at offset {off} has unknown type {typ}", path)
