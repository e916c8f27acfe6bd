"""A table's index block is read by one kernel pass at open (``_table_kernels.parse_index``):
the same entries as a plain ``struct`` reading of the format, and damage is a CorruptionError."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomdb.errors import CorruptionError
from bloomdb.lsm import DB
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.sstable import _table_kernels as TK
from bloomdb.lsm.sstable.block import unframe
from bloomdb.lsm.sstable.reader import Table
from lsm_helpers import small_options


def _reference(b: bytes):
    """``(last key, offset, size)`` per block, read with struct (docs/formats.md's index block)."""
    (n,) = struct.unpack_from("<I", b, 0)
    p, out = 4, []
    for _ in range(n):
        off, size, klen = struct.unpack_from("<QII", b, p)
        out.append((b[p + 16 : p + 16 + klen], off, size))
        p += 16 + klen
    assert p == len(b)
    return out


def _index_bytes(n: int, keys) -> bytes:
    parts = [struct.pack("<I", n)]
    for i, k in enumerate(keys):
        parts.append(struct.pack("<QII", 1000 * i, 100 + i, len(k)) + k)
    return b"".join(parts)


def test_the_kernel_reads_the_index_as_the_format_says(tmp_path):
    p = str(tmp_path / "db")
    keys = [b"", b"a" * 40] + [b"key%06d" % i for i in range(3000)] + [b"\xff" * 17]
    with DB.open(p, small_options(block_size=256, memtable_bytes=1 << 22, background_compaction=False)) as db:
        for k in keys:
            db.put(k, b"v" * 30)
        db.flush()
        (ref,) = db._state[2].slots
        t = ref.table
        h = t._handles
        _, ib = unframe(t._buf, h.index_off, h.index_size, t.path, "index")
        ib = ib if ib is not None else bytes(t._buf[h.index_off : h.index_off + h.index_size])
        table = Table(RealFS(), t.path, t.number)
        got = list(zip(table.last_keys, table.offsets, table.sizes))
        assert len(got) > 50 and got == _reference(bytes(ib))
        for k in keys:
            assert db.get(k) == b"v" * 30


@pytest.mark.parametrize("keys", [[b"b", b"a"], [b"ab", b"a"], [b"key2", b"key10"]])
def test_keys_out_of_order_are_found(keys):
    b = np.frombuffer(_index_bytes(len(keys), keys), np.uint8)
    _, end = TK.parse_index(b, 4, len(keys))
    assert end == -2


@pytest.mark.parametrize("cut", [1, 5, 16, 17])
def test_truncated_index_is_found(cut):
    keys = [b"a", b"b" * 20, b"c"]
    raw = _index_bytes(len(keys), keys)
    b = np.frombuffer(raw[:-cut], np.uint8)
    _, end = TK.parse_index(b, 4, len(keys))
    assert end == -1


def test_parsed_entries_match_the_struct_reading():
    keys = [b"", b"a", b"a\x00", b"ab" * 30, b"b", b"\xff" * 9]
    raw = _index_bytes(len(keys), keys)
    a, end = TK.parse_index(np.frombuffer(raw, np.uint8), 4, len(keys))
    assert end == len(raw)
    e = a[1 : 1 + 6 * len(keys)].reshape(-1, 6)
    u8 = a.view(np.uint8)
    got = [(u8[o : o + n].tobytes(), off, size) for _, _, o, n, off, size in e.tolist()]
    assert got == _reference(raw)
    words = a.view(np.uint64)[1 : 1 + 6 * len(keys)].reshape(-1, 6)[:, :2]
    for (w0, w1), k in zip(words.tolist(), keys):
        b = k[:16].ljust(16, b"\0")
        assert (w0, w1) == (int.from_bytes(b[:8], "big"), int.from_bytes(b[8:], "big"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=24), min_size=1, max_size=30), st.integers(0, 24), st.booleans())
def test_any_index_reads_as_the_format_says_and_its_order_is_bytewise(tails, shared, ordered):
    """Both open paths share this reader (``_index_kernels``): keys of any length, sorted or
    not, sharing a prefix of ``shared`` bytes (ties past the 16-byte prefix words), against
    Python's own bytes order and a struct reading."""
    keys = [b"k" * shared + t for t in tails]
    if ordered:
        keys = sorted(keys)
    raw = _index_bytes(len(keys), keys)
    a, end = TK.parse_index(np.frombuffer(raw, np.uint8), 4, len(keys))
    if any(x > y for x, y in zip(keys, keys[1:])):
        assert end == -2
        return
    assert end == len(raw)
    e = a[1 : 1 + 6 * len(keys)].reshape(-1, 6)
    u8 = a.view(np.uint8)
    assert [(u8[o : o + n].tobytes(), off, size) for _, _, o, n, off, size in e.tolist()] == _reference(raw)
