"""The self-describing byte envelope every filter is saved in.

Layout (all integers little-endian)::

    offset  size  field
    0       4     magic b"BLMF"
    4       1     envelope version (1)
    5       1     on_full policy: 0 warn, 1 raise, 2 ignore (was reserved, 0 = the default)
    6       2     family tag (see FAMILY_TAGS)
    8       2     family format version
    10      1     1 while open for writing through a writable map and not flushed, else 0
    11      1     reserved (0)
    12      4     P = length of the family's parameter block
    16      8     count: keys added so far
    24      8     L = payload length in bytes
    32      4     CRC32C of the payload
    36      4     CRC32C of bytes 0..36 followed by the parameter block
    40      P     parameter block (family specific, documented in docs/formats.md)
    40+P    pad   zero bytes up to the next multiple of 64
    H       L     payload (the filter's bit/counter/slot array), H a multiple of 64

The payload starts on a 64-byte boundary of the file, so a memory map of the file keeps the
cache-line alignment the kernels want. Any damage is a :class:`CorruptionError`.

Bytes 5 and 10 were "reserved (0)" in the first release and no reader checked them, so files
written before read as ``on_full="warn"`` and readers from before ignore the policy: no envelope
version bump was needed (a bump would have made every older reader refuse every new file).
Byte 10 is never 1 in a checksum-valid header: it is set (header CRC left stale) by a writable
map before its first unflushed write and cleared by the flush that rewrites the header.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from ..checksum import crc32c
from ..errors import CorruptionError, InvalidArgument, OutOfMemory

MAGIC = b"BLMF"
ENVELOPE_VERSION = 1
_FIXED = struct.Struct("<4sBBHHBBIQQII")
#: ``on_full`` policies by their byte-5 code (unknown codes read as the default, "warn").
ON_FULL_CODES = ("warn", "raise", "ignore")
FIXED_SIZE = _FIXED.size  # 40
ALIGN = 64

#: Family name -> tag stored in the envelope. Tags are forever: never reuse one.
FAMILY_TAGS: dict[str, int] = {
    "standard": 1,
    "blocked": 2,
    "leveldb": 3,
    "sbbf": 4,
    "register": 5,
    "paired": 6,
    "ribbon": 7,
    "counting": 8,
    "cuckoo": 9,
    "scalable": 10,
    "fuse8": 11,
    "fuse16": 12,
}


def _physical_memory() -> int | None:
    """The machine's memory in bytes (asked once: two ``sysconf`` calls cost ~2 us, and a store
    loading hundreds of table filters asked for each)."""
    global _RAM
    if _RAM is False:
        try:
            _RAM = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
            _RAM = None
    return _RAM


_RAM: int | None | bool = False


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def aligned_empty(nbytes: int, align: int = ALIGN) -> np.ndarray:
    """An uninitialised ``uint8`` array of ``nbytes`` whose first byte is ``align``-aligned.

    Raises InvalidArgument when ``nbytes`` exceeds the machine's physical memory and
    :class:`~bloomdb.errors.OutOfMemory` when the allocation fails; both say how much was needed.
    """
    return _aligned(nbytes, align, np.empty)


def aligned_zeros(nbytes: int, align: int = ALIGN) -> np.ndarray:
    """A zeroed ``uint8`` array of ``nbytes``, ``align``-aligned (``np.zeros`` gives only 16),
    raising as :func:`aligned_empty`. Cost: ``np.zeros`` (calloc): a large array takes fresh zero
    pages from the system, each made resident when first written, so a filter created for a
    billion keys holds no memory until keys arrive (and ``bloomdb calc`` sizes it without filling
    gigabytes)."""
    return _aligned(nbytes, align, np.zeros)


def _aligned(nbytes: int, align: int, make) -> np.ndarray:
    ram = _physical_memory()
    if ram is not None and nbytes > ram:
        raise InvalidArgument(
            f"a filter of {human_bytes(nbytes)} needs more than this machine's {human_bytes(ram)} "
            "of memory: lower the capacity or the bits per key"
        )
    try:
        raw = make(nbytes + align, dtype=np.uint8)
    except MemoryError:
        raise OutOfMemory(f"cannot allocate {human_bytes(nbytes)} for a filter") from None
    shift = (-raw.ctypes.data) % align
    return raw[shift : shift + nbytes]


def header_size(params_len: int) -> int:
    return -(-(FIXED_SIZE + params_len) // ALIGN) * ALIGN


@dataclass(frozen=True)
class Envelope:
    """A parsed envelope: which family, its parameters, and where the payload is."""

    family_tag: int
    family_version: int
    params: bytes
    count: int
    payload_offset: int
    payload_length: int
    on_full: str = "warn"
    payload_crc: int = 0


def encode_header(family_tag: int, family_version: int, params: bytes, count: int, payload_length: int,
                  payload_crc: int, on_full: str = "warn") -> bytes:
    """The envelope up to the payload (header, parameter block, padding), checksummed."""
    head = _FIXED.pack(
        MAGIC, ENVELOPE_VERSION, ON_FULL_CODES.index(on_full), family_tag, family_version, 0, 0,
        len(params), count, payload_length, payload_crc, 0,
    )
    head_crc = crc32c(head[:36] + params)
    head = head[:36] + struct.pack("<I", head_crc)
    pad = b"\0" * (header_size(len(params)) - FIXED_SIZE - len(params))
    return b"".join((head, params, pad))


def encode(family_tag: int, family_version: int, params: bytes, count: int, payload, on_full: str = "warn") -> bytes:
    """Serialise a filter: header + parameter block + padding + payload."""
    payload_mv = memoryview(payload).cast("B")
    head = encode_header(family_tag, family_version, params, count, payload_mv.nbytes, crc32c(payload_mv), on_full)
    return b"".join((head, payload_mv))


def _bytes_view(buf) -> memoryview:
    try:
        return memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf.cast("B")
    except TypeError:
        raise InvalidArgument(f"filter bytes must be a bytes-like object, got {type(buf).__name__}") from None


def decode(buf, *, verify_payload: bool = True, source: str | None = None, payload=None) -> Envelope:
    """Parse and check an envelope held in ``buf`` (bytes, memoryview or mmap).

    ``payload`` (a bytes-like object) when the payload travels apart from the header (pickle
    protocol 5): ``buf`` then holds the header, parameter block and padding only.

    Raises InvalidArgument when ``buf`` is not bytes-like, and
    :class:`CorruptionError` (with ``source`` as the path) for a wrong magic, unknown
    envelope version, truncation, or a checksum mismatch. Cost: O(1) plus one CRC pass over the
    payload when ``verify_payload``.
    """
    mv = _bytes_view(buf)
    if mv.nbytes < FIXED_SIZE:
        raise CorruptionError(f"truncated filter: {mv.nbytes} bytes, header needs {FIXED_SIZE}", source)
    (magic, ver, policy, tag, fver, writing, _r1, plen, count, paylen, pay_crc, head_crc) = _FIXED.unpack_from(mv, 0)
    if magic != MAGIC:
        raise CorruptionError(f"not a bloomdb filter (magic {bytes(magic)!r})", source)
    if ver != ENVELOPE_VERSION:
        raise CorruptionError(f"unknown filter envelope version {ver}", source)
    if FIXED_SIZE + plen > mv.nbytes:
        raise CorruptionError("truncated filter parameter block", source)
    params = bytes(mv[FIXED_SIZE : FIXED_SIZE + plen])
    if crc32c(bytes(mv[:36]) + params) != head_crc:
        if writing == 1:
            raise CorruptionError(
                "the filter file was open for writing (mmap='r+') and was not flushed or closed "
                "(the writer crashed or is still running): its contents are unknown", source)
        raise CorruptionError("filter header checksum mismatch", source)
    start = header_size(plen)
    if start > mv.nbytes or any(mv[FIXED_SIZE + plen : start]):
        raise CorruptionError("filter header padding is damaged", source)
    body = mv[start:] if payload is None else _bytes_view(payload)
    if payload is not None and mv.nbytes != start:
        raise CorruptionError(f"filter header is {mv.nbytes} bytes, expected {start}", source)
    if body.nbytes != paylen:
        raise CorruptionError(f"filter payload is {body.nbytes} bytes, header says {paylen}", source)
    if verify_payload and crc32c(body) != pay_crc:
        raise CorruptionError("filter payload checksum mismatch", source)
    on_full = ON_FULL_CODES[policy] if policy < len(ON_FULL_CODES) else "warn"
    return Envelope(tag, fver, params, count, start, paylen, on_full, pay_crc)
