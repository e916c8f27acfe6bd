"""Encode one column chunk to bytes and decode it back, whole or at selected positions.

Chunk layout (little-endian; docs/formats.md has the full table)::

    offset size field
    0      4    magic b"BDC1"
    4      1    encoding: 1 = frame of reference + bit-packing, 2 = plain, 3 = dictionary
    5      1    compression: 0 = none, 1 = zstd (the whole body)
    6      1    bit width of the packed values / codes (0..64)
    7      1    flags: bit 0 = a validity bitmap is present
    8      4    num_rows
    12     4    dictionary entries (encoding 3), else 0
    16     8    reference (FOR base, as uint64 bits), else 0
    24     8    stored body length (after compression)
    32     8    raw body length (before compression)
    40     4    CRC32C of the stored body
    44     1    plain value size in bytes (4 or 8), else 0
    45     3    zero
    48     ...  body

Body (raw), sections in this order, each starting at a multiple of 8 bytes from the body start:
validity bitmap (``ceil(n/8)`` bytes, bit ``i & 7`` of byte ``i >> 3`` set = row ``i`` not null)
if flagged; then the values: packed ``uint64`` words (FOR and dictionary codes, see
:mod:`bloomdb.columnar._kernels`), or ``n`` plain values; then for the dictionary its
``entries + 1`` ``uint64`` offsets and its bytes.

Uncompressed chunks decode any single value without touching its neighbours; a zstd chunk is
decompressed whole on first access (cost: one zstd pass over the chunk).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


from ..errors import CorruptionError, InvalidArgument
from ..checksum import crc32c
from . import _kernels as K
from .types import ColumnType

MAGIC = b"BDC1"
HEADER = struct.Struct("<4sBBBBIIQQQIB3x")
HEADER_SIZE = HEADER.size  # 48
ENC_FOR, ENC_PLAIN, ENC_DICT = 1, 2, 3
COMP_NONE, COMP_ZSTD = 0, 1
ENCODING_NAMES = {ENC_FOR: "for-bitpack", ENC_PLAIN: "plain", ENC_DICT: "dict-bitpack"}
_U64 = np.uint64


def _pad8(n: int) -> int:
    return -(-n // 8) * 8


def bit_width(max_delta: int) -> int:
    return int(max_delta).bit_length()


@dataclass
class EncodedChunk:
    data: bytes
    encoding: int
    null_count: int
    min: Any
    max: Any


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _int_bits(arr: pa.Array, ctype: ColumnType) -> np.ndarray:
    """The chunk's values as numpy ints of the storage type, nulls filled with 0."""
    storage = ctype.storage
    if pa.types.is_boolean(ctype.arrow):
        arr = arr.cast(pa.uint8())
    elif not pa.types.is_integer(ctype.arrow):
        arr = arr.view(storage)
    if arr.null_count:
        arr = pc.fill_null(arr, 0)
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=ctype.numpy_dtype)


def encode(arr: pa.Array, ctype: ColumnType, compression: str | None = None, level: int = 3) -> EncodedChunk:
    """Encode one chunk (an Arrow array of the column's type) into self-contained bytes."""
    n = len(arr)
    valid = _validity(arr)
    null_count = 0 if valid is None else int(n - valid.sum())
    sections: list[bytes] = []
    if valid is not None:
        sections.append(np.packbits(valid, bitorder="little").tobytes())
    width = ndict = 0
    reference = 0
    itemsize = 0
    vmin = vmax = None
    if ctype.kind == "int":
        enc = ENC_FOR
        vals = _int_bits(arr, ctype)
        wide = vals.astype(np.int64 if ctype.signed else np.uint64)
        live = wide if valid is None else wide[valid]
        if live.size:
            lo, hi = live.min(), live.max()
            vmin, vmax = int(lo), int(hi)
            if valid is not None:
                wide = np.where(valid, wide, lo)
            bits = wide.view(np.uint64) if wide.dtype == np.int64 else wide
            reference = int(np.array(lo).astype(wide.dtype).view(np.uint64))
            deltas = bits - _U64(reference)
            width = bit_width(int(hi) - int(lo))
        else:
            deltas = np.zeros(n, np.uint64)
        words = np.zeros(K.packed_words(n, width), np.uint64)
        K.pack(deltas, width, words)
        sections.append(words.tobytes())
    elif ctype.kind == "float":
        enc = ENC_PLAIN
        vals = np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False), dtype=ctype.numpy_dtype)
        itemsize = vals.dtype.itemsize
        live = vals if valid is None else vals[valid]
        live = live[~np.isnan(live)]
        if live.size:
            vmin, vmax = float(live.min()), float(live.max())
        sections.append(vals.tobytes())
    else:
        enc = ENC_DICT
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        de = arr.cast(pa.large_binary()).dictionary_encode()
        dictionary = de.dictionary
        codes = pc.fill_null(de.indices, 0).to_numpy(zero_copy_only=False).astype(np.uint64)
        if len(dictionary) == 0:
            dictionary = pa.array([b""], pa.large_binary())
        ndict = len(dictionary)
        width = bit_width(ndict - 1)
        words = np.zeros(K.packed_words(n, width), np.uint64)
        K.pack(codes, width, words)
        sections.append(words.tobytes())
        d = pa.concat_arrays([dictionary])  # drop any slice offset
        offs = np.frombuffer(d.buffers()[1], np.int64, count=ndict + 1)
        data = d.buffers()[2]
        sections.append((offs - offs[0]).astype(np.uint64).tobytes())
        sections.append(b"" if data is None else bytes(data)[offs[0] : offs[-1]])
        if ctype.is_string and n > null_count:
            mm = pc.min_max(arr)
            vmin, vmax = mm["min"].as_py(), mm["max"].as_py()
    body = b"".join(s + b"\0" * (_pad8(len(s)) - len(s)) for s in sections)
    raw_len = len(body)
    comp = COMP_NONE
    if compression == "zstd":
        import zstandard

        packed = zstandard.ZstdCompressor(level=level).compress(body)
        if len(packed) < raw_len:
            body, comp = packed, COMP_ZSTD
    elif compression not in (None, "none"):
        raise InvalidArgument(f"compression must be None or 'zstd', got {compression!r}")
    header = HEADER.pack(
        MAGIC, enc, comp, width, 1 if valid is not None else 0, n, ndict, reference,
        len(body), raw_len, crc32c(body), itemsize,
    )  # fmt: skip
    return EncodedChunk(header + body, enc, null_count, vmin, vmax)


def _layout_bytes(enc: int, flags: int, n: int, width: int, ndict: int, itemsize: int, body: np.ndarray) -> int:
    """The raw body length the header's fields imply (sections padded to 8 bytes), or -1."""
    size = _pad8(-(-n // 8)) if flags & 1 else 0
    if enc == ENC_PLAIN:
        return size + _pad8(n * itemsize)
    size += int(K.packed_words(n, width)) * 8
    if enc == ENC_FOR:
        return size
    end = size + (ndict + 1) * 8
    if ndict < 1 or end > body.nbytes:
        return -1
    return end + _pad8(int(body[end - 8 : end].view(np.int64)[0]))


def _agrees_with_manifest(info, enc, width, flags, reference, body_len, nbytes, ctype, source) -> None:
    """The header against the manifest's entry for the chunk (its encoding, length, nulls and,
    for frame-of-reference chunks, min/max, which fix the reference and the bit width)."""
    ok = ENCODING_NAMES[enc] == info.encoding and HEADER_SIZE + body_len == info.length == nbytes \
        and bool(flags & 1) == (info.null_count > 0)
    if ok and enc == ENC_FOR:
        lo, hi = info.min, info.max
        if lo is None or hi is None:
            ok = width == 0 and reference == 0
        else:
            ok = type(lo) is int and type(hi) is int and reference == lo & 0xFFFFFFFFFFFFFFFF \
                and width == bit_width(hi - lo)
    if not ok:
        raise CorruptionError("column chunk header disagrees with the table manifest", source)


class Chunk:
    """A decoded view of one stored column chunk (``buf``: its bytes as a uint8 array, e.g. mmap).

    Uncompressed bodies are used in place (zero copy); zstd bodies are decompressed once here.
    Raises :class:`CorruptionError` for a bad magic, size or checksum. :attr:`alloc` (default
    ``np.empty``) allocates the whole-chunk decode: a caller whose result keeps it (a left join's
    probe columns) sets :func:`bloomdb.recycled.empty`.
    """

    alloc = None

    def __init__(self, buf: np.ndarray, ctype: ColumnType, source: str | None = None, verify: bool = True,
                 info: Any = None):
        if buf.nbytes < HEADER_SIZE:
            raise CorruptionError("column chunk shorter than its header", source)
        head = buf[:HEADER_SIZE].tobytes()
        (magic, enc, comp, width, flags, n, ndict, reference, body_len, raw_len, crc, itemsize) = HEADER.unpack(head)
        if magic != MAGIC or enc not in ENCODING_NAMES or comp not in (0, 1) or width > 64 or flags > 1 \
                or head[45:] != b"\0\0\0":
            raise CorruptionError("not a bloomdb column chunk (bad magic or header)", source)
        if HEADER_SIZE + body_len > buf.nbytes:
            raise CorruptionError("column chunk body truncated", source)
        if info is not None:
            _agrees_with_manifest(info, enc, width, flags, reference, body_len, buf.nbytes, ctype, source)
        stored = buf[HEADER_SIZE : HEADER_SIZE + body_len]
        if verify and crc32c(stored) != crc:
            raise CorruptionError("column chunk checksum mismatch", source)
        if comp == COMP_ZSTD:
            import zstandard

            try:
                body = np.frombuffer(zstandard.ZstdDecompressor().decompress(stored.tobytes(), max_output_size=raw_len), np.uint8)
            except zstandard.ZstdError as exc:
                raise CorruptionError(f"column chunk zstd body: {exc}", source) from exc
        else:
            body = stored
        if body.nbytes != raw_len or raw_len != _layout_bytes(enc, flags, n, width, ndict, itemsize, body):
            raise CorruptionError("column chunk body length mismatch", source)
        self.ctype, self.encoding, self.num_rows, self.width = ctype, enc, n, width
        self.source = source
        self.reference = _U64(reference)
        self.compressed = comp == COMP_ZSTD
        pos = 0
        self._valid_bits = None
        if flags & 1:
            nb = -(-n // 8)
            self._valid_bits = body[:nb]
            pos = _pad8(nb)
        self._validity: np.ndarray | None = None
        self._all: np.ndarray | None = None
        try:
            if enc == ENC_PLAIN:
                dt = ctype.numpy_dtype
                if itemsize != dt.itemsize:
                    raise CorruptionError("plain chunk value size does not match its column type", source)
                self._values = body[pos : pos + n * itemsize].view(dt)
            else:
                nw = K.packed_words(n, width)
                self._words = body[pos : pos + nw * 8].view(np.uint64)
                if self._words.shape[0] != nw:
                    raise CorruptionError("packed values truncated", source)
                pos += nw * 8
                if enc == ENC_DICT:
                    offs = body[pos : pos + (ndict + 1) * 8].view(np.int64)
                    pos += (ndict + 1) * 8
                    dlen = int(offs[-1])
                    if ndict < 1 or offs[0] != 0 or np.any(np.diff(offs) < 0) or pos + dlen > body.nbytes:
                        raise CorruptionError("bad dictionary offsets", source)
                    self.dictionary = pa.Array.from_buffers(
                        pa.large_binary(), ndict, [None, pa.py_buffer(offs), pa.py_buffer(body[pos : pos + dlen])]
                    )
                    self.dict_size = ndict
        except (ValueError, IndexError) as exc:
            raise CorruptionError(f"column chunk body: {exc}", source) from exc

    # ---- validity ------------------------------------------------------------------------

    @property
    def null_count(self) -> int:
        return 0 if self._valid_bits is None else int(self.num_rows - self.validity.sum())

    @property
    def validity(self) -> np.ndarray | None:
        """Bool array (True = not null), or None when the chunk has no nulls."""
        if self._valid_bits is not None and self._validity is None:
            self._validity = np.unpackbits(self._valid_bits, count=self.num_rows, bitorder="little").view(np.bool_)
        return self._validity

    # ---- values --------------------------------------------------------------------------

    def raw(self, positions: np.ndarray | None = None) -> np.ndarray:
        """Values (ints: uint64 bits; floats: float; dict: uint64 codes), all or at ``positions``.

        Null slots hold a meaningless value. Cost: O(rows decoded); positions are int64. All
        values are decoded once per Chunk (read-only, kept for the next call: a join reads its key
        column for the hash probe and again as a result column).
        """
        if self.encoding == ENC_PLAIN:
            return self._values if positions is None else self._values[positions]
        if positions is None:
            if self._all is None:
                out = (self.alloc or np.empty)(self.num_rows, np.uint64)
                K.unpack_all(self._words, self.width, self.reference, out)
                out.flags.writeable = False
                self._all = out
            return self._all
        out = np.empty(positions.shape[0], np.uint64)
        K.unpack_at(self._words, self.width, self.reference, positions, out)
        return out

    def numpy(self, positions: np.ndarray | None = None) -> np.ndarray:
        """Values in the column's numpy dtype (not for dictionary columns); null slots undefined."""
        v = self.raw(positions)
        if self.encoding == ENC_FOR:
            dt = self.ctype.numpy_dtype
            if dt == np.int64:
                return v.view(np.int64)
            if dt == np.uint64:
                return v
            return (v.view(np.int64) if self.ctype.signed else v).astype(dt)
        return v

    def arrow(self, positions: np.ndarray | None = None) -> pa.Array:
        """The values (all, or at ``positions``) as an Arrow array of the column's type, nulls included."""
        valid = self.validity
        mask = None
        if valid is not None:
            mask = ~(valid if positions is None else valid[positions])
        t = self.ctype.arrow
        if self.encoding == ENC_DICT:
            codes = self.raw(positions).astype(np.int64)
            try:
                return self.dictionary.take(pa.array(codes, mask=mask)).cast(t)
            except (pa.ArrowIndexError, pa.ArrowInvalid) as exc:  # damage an unverified read let through
                raise CorruptionError(f"column chunk dictionary: {exc}", self.source) from None
        v = self.numpy(positions)
        storage = self.ctype.storage
        a = pa.array(v, type=storage, mask=mask)
        if pa.types.is_boolean(t):
            return a.cast(t)
        return a if storage == t else a.view(t)
