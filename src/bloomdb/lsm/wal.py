"""The write-ahead log: one checksummed record per write batch.

Record (little-endian)::

    u32 crc32c of the next 4 + L bytes | u32 L | payload of L bytes
    payload = u64 first sequence | u32 count | count x (u8 type, u32 klen, key, [u32 vlen, value])

type 1 = put (has a value), 0 = delete (no value part), 2 = range delete (key = start, value =
end: a range tombstone, :mod:`.rangedel`; such an op is ``(start, RangeEnd(end))``). The records of a batch get sequences
``first, first + 1, ...`` in order. A batch is applied on recovery only if its whole record is
intact, so a batch is all-or-nothing after a crash.

Recovery (:func:`read_log`): a damaged record that reaches the end of the file is a torn tail (the
write was never acknowledged) and is dropped silently; a damaged record with intact bytes after
it is corruption: :class:`~bloomdb.errors.CorruptionError` naming the file, unless
``paranoid=False`` (then reading stops there and keeps what came before).
"""

from __future__ import annotations

import struct
from typing import Iterator

import numpy as np

from ..checksum import crc32c
from ..errors import CorruptionError
from .logfile import open_log

_HDR = struct.Struct("<II")
_BATCH = struct.Struct("<QI")
_PUT1 = struct.Struct("<QIBI")  # seq, count=1, type, klen
PUT_HEAD = struct.Struct("<IQIBI")  # L, then a single put's payload head: seq, count=1, type, klen
_U32 = struct.Struct("<I")
_TYPE_KLEN = struct.Struct("<BI")
TYPE_DELETE = 0
TYPE_VALUE = 1
TYPE_RANGE_DELETE = 2


class RangeEnd:
    """A batch operation's value slot for a range tombstone: ``(start, RangeEnd(end))`` (a put's
    slot holds bytes, a delete's ``None``)."""

    __slots__ = ("end",)

    def __init__(self, end: bytes):
        self.end = end

    def __eq__(self, other) -> bool:
        return isinstance(other, RangeEnd) and other.end == self.end

    def __repr__(self) -> str:
        return f"RangeEnd({self.end!r})"


def encode_put(seq: int, key: bytes, value) -> bytes:
    """The record of a single put (``value`` given), delete (``value is None``) or range delete
    (``value`` a :class:`RangeEnd`)."""
    if type(value) is RangeEnd:
        return encode_batch(seq, [(key, value)])
    if value is None:
        return _frame(_PUT1.pack(seq, 1, TYPE_DELETE, len(key)) + key)
    # the frame built in one pass: L and the payload head packed together (DB.put inlines this)
    body = put_body(seq, key, value)
    return _U32.pack(crc32c(body)) + body


def encode_batch(seq: int, ops: list[tuple[bytes, bytes | None]]) -> bytes:
    """The record of a batch of ``(key, value or None)`` operations starting at ``seq``."""
    parts = [_BATCH.pack(seq, len(ops))]
    for key, value in ops:
        if value is None:
            parts.append(_TYPE_KLEN.pack(TYPE_DELETE, len(key)))
            parts.append(key)
        elif type(value) is RangeEnd:
            parts += [_TYPE_KLEN.pack(TYPE_RANGE_DELETE, len(key)), key, _U32.pack(len(value.end)), value.end]
        else:
            parts.append(_TYPE_KLEN.pack(TYPE_VALUE, len(key)))
            parts.append(key)
            parts.append(_U32.pack(len(value)))
            parts.append(value)
    return _frame(b"".join(parts))


#: ``(klen, vlen) -> struct.Struct`` laying out a single put's record after its CRC (``L``, the
#: payload head, key, ``vlen``, value) in one ``pack`` call: ``DB.put``'s encoder for the sizes it
#: has met (:func:`put_body` fills it, up to ``BODY_SHAPES`` sizes; others take the join path).
BODIES: dict[tuple[int, int], struct.Struct] = {}
BODY_SHAPES = 256


def put_body(seq: int, key: bytes, value: bytes) -> bytes:
    """A single put's record without its CRC (what :func:`encode_put` checksums), remembering its
    size's layout in :data:`BODIES` while there is room."""
    kl, vl = len(key), len(value)
    st = BODIES.get((kl, vl))
    if st is None and len(BODIES) < BODY_SHAPES:
        st = BODIES[(kl, vl)] = struct.Struct(f"<IQIBI{kl}sI{vl}s")
    if st is not None:
        return st.pack(21 + kl + vl, seq, 1, TYPE_VALUE, kl, key, vl, value)
    return b"".join((PUT_HEAD.pack(21 + kl + vl, seq, 1, TYPE_VALUE, kl), key, _U32.pack(vl), value))


def _frame(payload: bytes) -> bytes:
    n = _U32.pack(len(payload))
    return b"".join((_U32.pack(crc32c(payload, crc32c(n))), n, payload))


def _decode_payload(p: bytes, path: str) -> tuple[int, list[tuple[bytes, bytes | None]]]:
    try:
        seq, count = _BATCH.unpack_from(p, 0)
        pos = _BATCH.size
        ops = []
        for _ in range(count):
            typ, klen = _TYPE_KLEN.unpack_from(p, pos)
            pos += 5
            key = p[pos : pos + klen]
            pos += klen
            if typ == TYPE_VALUE or typ == TYPE_RANGE_DELETE:
                (vlen,) = _U32.unpack_from(p, pos)
                pos += 4
                value = p[pos : pos + vlen]
                pos += vlen
                if len(key) != klen or len(value) != vlen:
                    raise ValueError("an op runs past the record")
                ops.append((key, value if typ == TYPE_VALUE else RangeEnd(value)))
            elif typ == TYPE_DELETE:
                ops.append((key, None))
            else:
                raise ValueError(f"unknown op type {typ}")
        if pos != len(p):
            raise ValueError("trailing bytes in batch")
    except (struct.error, ValueError) as e:
        # the CRC matched, so the writer produced these bytes: a bug or a forged record
        raise CorruptionError(f"malformed WAL batch: {e}", path) from None
    return seq, ops


def read_log(data, path: str, paranoid: bool = True, damage: list | None = None,
             ends: list | None = None, start: int = 0) -> Iterator[tuple[int, list[tuple[bytes, bytes | None]]]]:
    """Yield ``(first sequence, ops)`` per intact batch of a log's bytes ``data`` (from byte
    ``start``, where a record begins: the records before it were replayed by the caller).

    With ``paranoid=False`` a damaged record in the middle ends the log and its offset is
    appended to ``damage`` (the caller must not replay later logs either: that would apply
    writes made after the lost ones). ``ends``: when the log is read to its end, the offset just
    past its last intact record is appended if nothing but zero bytes (reserved space) follows
    it -- a *clean* end, where new records may be appended (:func:`.recovery.recover`) -- else
    ``None`` (a torn tail or damage).

    Cost: one CRC32C pass over the log; after a damaged record, one scan of the rest of the file
    for an intact record (that is what tells mid-log corruption from a torn tail).
    """
    if start >= len(data) or _zeros_from(data, start):  # nothing but the reserved zeros left (what a log
        if ends is not None:  # whose records the replay kernel took holds): a clean end, and no copy of
            ends.append(start)  # the whole log below
        return
    data = bytes(data)
    pos = start
    end = len(data)
    head, put1, u32 = _HDR.unpack_from, _PUT1.unpack_from, _U32.unpack_from
    while pos < end:
        if end - pos >= _HDR.size + _BATCH.size:  # the common case inline: an intact record, often one put
            crc, n = head(data, pos)
            body_end = pos + _HDR.size + n
            if n >= _BATCH.size and body_end <= end and crc32c(data[pos + 4 : body_end]) == crc:
                if n >= _PUT1.size + 4:
                    seq, count, typ, klen = put1(data, pos + 8)
                    k = pos + 8 + _PUT1.size
                    if count == 1 and typ == TYPE_VALUE and k + klen + 4 <= body_end:
                        (vlen,) = u32(data, k + klen)
                        if k + klen + 4 + vlen == body_end:
                            yield seq, [(data[k : k + klen], data[k + klen + 4 : body_end])]
                            pos = body_end
                            continue
                yield _decode_payload(data[pos + 8 : body_end], path)
                pos = body_end
                continue
        # not an intact record (:func:`_intact`)
        if not _zeros_from(data, pos):  # else the reserved space starts here: a clean end
            if _intact_after(data, pos + 1):
                if paranoid:
                    raise CorruptionError(f"WAL record at offset {pos} is damaged (intact records follow)", path)
                if damage is not None:
                    damage.append(pos)
            pos = None  # torn tail: the record was being written when the process died; never acknowledged
        break
    if ends is not None:
        ends.append(pos)


def is_log(data) -> bool:
    """Whether ``data`` is a log this module wrote: empty, or its first record is intact (a
    foreign engine's log fails the CRC32C), or zero bytes only (a new log's reserved space,
    :mod:`.logfile`, left by a crash before its first record). Cost: one CRC32C over the first
    record."""
    return len(data) == 0 or _intact(data, 0) or _nonzero_end(data, 0) == 0


def _intact(data: bytes, pos: int) -> bool:
    if len(data) - pos < _HDR.size + _BATCH.size:
        return False
    crc, n = _HDR.unpack_from(data, pos)
    body_end = pos + _HDR.size + n
    return n >= _BATCH.size and body_end <= len(data) and crc32c(data[pos + 4 : body_end]) == crc


def _zeros_from(data: bytes, start: int) -> bool:
    """Whether ``data[start:]`` holds zero bytes only. Cost: one vectorised pass."""
    return not np.frombuffer(data, np.uint8, offset=start).any()


def _nonzero_end(data, start: int) -> int:
    """One past the last non-zero byte of ``data[start:]`` (``start`` when there is none)."""
    return start + len(bytes(data[start:]).rstrip(b"\0"))


def _intact_after(data: bytes, start: int) -> bool:
    """Whether an intact record starts anywhere at or after ``start``. A record's length field
    is never zero, so none starts in a tail of zero bytes (a mapped log's reserved space,
    :mod:`.logfile`): the scan stops where that tail begins."""
    end = len(data)
    stop = min(end - _HDR.size - _BATCH.size + 1, _nonzero_end(data, start))
    for p in range(start, stop):
        (n,) = _U32.unpack_from(data, p + 4)
        if _BATCH.size <= n <= end - p - _HDR.size and _intact(data, p):
            return True
    return False


class LogWriter:
    """Appends records to one log file (``fs.open_append``).

    Records of ``sync=False`` writes collect in a user-space buffer of up to ``buffer_bytes``
    and reach the OS when it fills, on the next ``sync=True`` write, on :meth:`flush` and on
    :meth:`close` (one ``write`` syscall per buffer instead of per record: a syscall releases the
    GIL, and getting it back behind a busy background thread costs milliseconds). So a process
    crash may lose up to ``buffer_bytes`` of the newest unsynced writes (never a part of a
    batch: the log's torn tail is dropped on recovery); ``sync=True`` writes are durable when
    the call returns. ``buffer_bytes=0`` sends every record to the OS at once (LevelDB's
    behaviour).
    """

    def __init__(self, fs, path: str, number: int, buffer_bytes: int = 0, at: int | None = None):
        """A new log at ``path``; ``at``: an existing log whose records end at byte ``at``, with
        zero bytes only after it, appended to from there (raises ``ValueError`` when ``fs``
        cannot: :func:`.logfile.open_log`)."""
        self.path = path
        self.number = number
        self._f = open_log(fs, path, at)
        self._start = self._f.tell()
        self._buf = bytearray()
        self._limit = buffer_bytes
        self._closed_bytes = None
        # append(record): add() without sync, the hot path of unsynced writes -- with no buffer,
        # straight to the file's write (one Python call less per put); a mapped log's is the
        # map's own write, which raises ValueError, writing nothing, when the reserved space is
        # full: then add(record, False) reserves more (DB.put does so)
        self.append = getattr(self._f, "fast_write", self._f.write) if buffer_bytes == 0 else self._append_buffered

    def _append_buffered(self, record: bytes) -> None:
        self._buf += record
        if len(self._buf) >= self._limit:
            self.flush()

    @property
    def bytes(self) -> int:
        """Bytes appended so far (written or buffered)."""
        if self._closed_bytes is not None:
            return self._closed_bytes
        return self._f.tell() - self._start + len(self._buf)

    def add(self, record: bytes, sync: bool) -> None:
        if sync or self._limit == 0:
            if self._buf:
                self._buf += record
                self.flush()
            else:
                self._f.write(record)
            if sync:
                self._f.sync()
            return
        self._buf += record
        if len(self._buf) >= self._limit:
            self.flush()

    def flush(self) -> None:
        """Hand the buffered records to the OS."""
        if self._buf:
            data = bytes(self._buf)
            self._buf.clear()
            self._f.write(data)

    def sync(self) -> None:
        self.flush()
        self._f.sync()

    def close(self) -> None:
        if self._closed_bytes is None:
            self._closed_bytes = self.bytes
        try:
            self.flush()
        finally:
            self._f.close()
