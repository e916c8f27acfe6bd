"""A generic Thrift compact-protocol codec for tests: decode a struct into nested
``[(field id, type, value), ...]`` lists, edit them, encode them back. Enough to rewrite a Parquet
footer (``FileMetaData``) as older writers laid it out: e.g. without the ``LogicalType`` fields
newer writers add next to the legacy ``ConvertedType`` (:func:`legacy_footer_copy`).

Values: bool, int (i8/i16/i32/i64), bytes (binary/string), float bytes kept raw (double), a
nested field list (struct), ``(element type, [values])`` (list/set), ``(key type, value type,
[(k, v), ...])`` (map).
"""

from __future__ import annotations

import struct

from parquet_helpers import varint as _varint

TRUE, FALSE, I8, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


class _Reader:
    def __init__(self, buf: bytes, pos: int = 0):
        self.buf, self.pos = buf, pos

    def byte(self) -> int:
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return out

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, t: int):
        if t in (TRUE, FALSE):  # inside a collection: one byte (1 = true)
            return self.byte() == TRUE
        if t == I8:
            return struct.unpack("b", bytes([self.byte()]))[0]
        if t in (I16, I32, I64):
            return self.zigzag()
        if t == DOUBLE:
            v = self.buf[self.pos : self.pos + 8]
            self.pos += 8
            return v
        if t == BINARY:
            n = self.varint()
            v = bytes(self.buf[self.pos : self.pos + n])
            self.pos += n
            return v
        if t in (LIST, SET):
            h = self.byte()
            n, et = h >> 4, h & 15
            if n == 15:
                n = self.varint()
            return et, [self.value(et) for _ in range(n)]
        if t == MAP:
            n = self.varint()
            if n == 0:
                return 0, 0, []
            kv = self.byte()
            kt, vt = kv >> 4, kv & 15
            return kt, vt, [(self.value(kt), self.value(vt)) for _ in range(n)]
        if t == STRUCT:
            return self.struct()
        raise ValueError(f"thrift type {t}")

    def struct(self) -> list:
        fields, last = [], 0
        while True:
            h = self.byte()
            if h == 0:
                return fields
            delta, t = h >> 4, h & 15
            fid = last + delta if delta else self.zigzag()
            if t in (TRUE, FALSE):
                fields.append((fid, t, t == TRUE))
            else:
                fields.append((fid, t, self.value(t)))
            last = fid


def _zigzag(x: int) -> bytes:
    return _varint((x << 1) ^ (x >> 63))


def _value(t: int, v) -> bytes:
    if t in (TRUE, FALSE):
        return bytes([TRUE if v else FALSE])
    if t == I8:
        return struct.pack("b", v)
    if t in (I16, I32, I64):
        return _zigzag(v)
    if t == DOUBLE:
        return bytes(v)
    if t == BINARY:
        return _varint(len(v)) + bytes(v)
    if t in (LIST, SET):
        et, items = v
        head = bytes([(len(items) << 4) | et]) if len(items) < 15 else bytes([0xF0 | et]) + _varint(len(items))
        return head + b"".join(_value(et, x) for x in items)
    if t == MAP:
        kt, vt, items = v
        if not items:
            return b"\0"
        return _varint(len(items)) + bytes([(kt << 4) | vt]) + b"".join(_value(kt, a) + _value(vt, b) for a, b in items)
    if t == STRUCT:
        return encode_struct(v)
    raise ValueError(f"thrift type {t}")


def encode_struct(fields: list) -> bytes:
    out, last = bytearray(), 0
    for fid, t, v in fields:
        if t in (TRUE, FALSE):
            t = TRUE if v else FALSE
        delta = fid - last
        out += bytes([(delta << 4) | t]) if 0 < delta <= 15 else bytes([t]) + _zigzag(fid)
        if t not in (TRUE, FALSE):
            out += _value(t, v)
        last = fid
    out.append(0)
    return bytes(out)


def decode_struct(buf: bytes, pos: int = 0) -> tuple[list, int]:
    """``(fields, position after the struct)``."""
    r = _Reader(buf, pos)
    return r.struct(), r.pos


def field(fields: list, fid: int):
    return next((v for f, _, v in fields if f == fid), None)


# ---- Parquet footers ------------------------------------------------------------------------

SCHEMA, KEY_VALUE_METADATA = 2, 5  # FileMetaData fields
LOGICAL_TYPE, CONVERTED_TYPE = 10, 6  # SchemaElement fields


def rewrite_footer(src, dst, edit) -> None:
    """Copy Parquet file ``src`` to ``dst`` with its FileMetaData replaced by ``edit(fields)``
    (column chunks keep their offsets: the footer follows them)."""
    raw = open(src, "rb").read()
    n = int.from_bytes(raw[-8:-4], "little")
    start = len(raw) - 8 - n
    meta, end = decode_struct(raw, start)
    assert end == len(raw) - 8, "footer did not decode to its length"
    new = encode_struct(edit(meta))
    with open(dst, "wb") as fh:
        fh.write(raw[:start] + new + len(new).to_bytes(4, "little") + b"PAR1")


def strip_logical_types(meta: list) -> list:
    """FileMetaData as a legacy writer (parquet-mr < 1.11, Impala, old Spark) stores it: schema
    elements with their ConvertedType only, and no Arrow schema in the key-value metadata."""
    out = []
    for fid, t, v in meta:
        if fid == SCHEMA:
            et, elems = v
            v = (et, [[f for f in e if f[0] != LOGICAL_TYPE] for e in elems])
        elif fid == KEY_VALUE_METADATA:
            et, kvs = v
            kvs = [kv for kv in kvs if field(kv, 1) != b"ARROW:schema"]
            if not kvs:
                continue
            v = (et, kvs)
        out.append((fid, t, v))
    return out


def legacy_footer_copy(src, dst) -> None:
    rewrite_footer(src, dst, strip_logical_types)
