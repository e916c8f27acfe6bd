"""A table opens in one kernel call (``sstable/_open_kernels.open_table``: footer, meta and index
CRC32C and the index parsed from the mapped file). It must read exactly what the step-by-step
Python open reads, and hand every damaged file back to it so the damage is a CorruptionError
naming the file."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from bloomdb.checksum import HW_RANGES, crc32c
from bloomdb.errors import CorruptionError
from bloomdb.lsm import DB
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.sstable import _open_kernels as OK
from bloomdb.lsm.sstable.footer import FOOTER_SIZE, decode_footer
from bloomdb.lsm.sstable.reader import Table
from lsm_helpers import small_options

needs_hw = pytest.mark.skipif(not HW_RANGES, reason="the one-call open runs only with the SSE4.2 CRC32C kernel")

#: keys around the kernel's 8- and 16-byte word boundaries, equal prefix words, empty and 0xff keys
KEYS = sorted({b"", b"a", b"a\x00", b"\x00", b"k" * 7, b"k" * 8, b"k" * 9, b"k" * 16, b"k" * 16 + b"\x00",
               b"k" * 16 + b"a", b"k" * 16 + b"ab", b"k" * 17, b"\xff" * 8, b"\xff" * 17, b"\xff" * 40}
              | {b"key%06d" % i + b"-" * (i % 23) for i in range(1500)})


def _table(tmp_path, keys=KEYS) -> str:
    """One flushed table of ``keys`` in small blocks (hundreds of index entries)."""
    p = str(tmp_path / "db")
    with DB.open(p, small_options(block_size=128, memtable_bytes=1 << 22, background_compaction=False)) as db:
        for k in keys:
            db.put(k, b"v" * 20)
        db.flush()
    (sst,) = [f for f in os.listdir(p) if f.endswith(".sst")]
    return os.path.join(p, sst)


def _python_open(path: str) -> Table:
    t = Table.__new__(Table)
    t.path, t.number = path, 1
    t._buf = RealFS().read_all(path)
    t._open_checked()
    return t


@needs_hw
def test_one_call_open_reads_what_the_python_open_reads(tmp_path):
    path = _table(tmp_path)
    buf = RealFS().read_all(path)
    st, hs, index = OK.open_table(np.frombuffer(buf, np.uint8))
    assert st == OK.ST_OK  # a sound table is opened by the kernel, not handed back
    ref = _python_open(path)
    h = ref._handles
    assert hs[:6].tolist() == [h.filter_off, h.filter_size, h.meta_off, h.meta_size, h.index_off, h.index_size]
    assert index[0] > 100 and index.tobytes() == ref._index.tobytes()
    t = Table(RealFS(), path, 1)
    assert t._handles == h and t.meta == ref.meta
    assert (t.offsets, t.sizes, t.last_keys) == (ref.offsets, ref.sizes, ref.last_keys)
    for k in KEYS[::7]:
        assert bytes(t.get(k, 1 << 50)) == b"v" * 20


def _regions(path: str):
    h = decode_footer(open(path, "rb").read(), path)
    size = os.path.getsize(path)
    return {"meta": (h.meta_off, h.meta_off + h.meta_size + 5), "index": (h.index_off, h.index_off + h.index_size + 5),
            "footer": (size - FOOTER_SIZE, size)}


@pytest.mark.parametrize("region", ["footer", "meta", "index"])
def test_every_flipped_byte_of_footer_meta_and_index_is_caught_at_open(tmp_path, region):
    path = _table(tmp_path)
    good = open(path, "rb").read()
    lo, hi = _regions(path)[region]
    step = max(1, (hi - lo) // 400)  # the footer and meta whole, the index at ~400 places
    for pos in range(lo, hi, step):
        bad = bytearray(good)
        bad[pos] ^= 0x10
        with open(path, "wb") as f:
            f.write(bad)
        with pytest.raises(CorruptionError) as e:
            Table(RealFS(), path, 1)
        assert e.value.path == path, pos


def _rewrite_index(path: str, edit) -> None:
    """Apply ``edit`` to the index block's bytes (same length) and re-frame it with a valid CRC."""
    data = bytearray(open(path, "rb").read())
    h = decode_footer(bytes(data), path)
    a, b = h.index_off, h.index_off + h.index_size
    block = bytearray(data[a:b])
    edit(block)
    assert len(block) == b - a
    data[a:b] = block
    data[b + 1 : b + 5] = struct.pack("<I", crc32c(bytes(data[a : b + 1])))
    with open(path, "wb") as f:
        f.write(data)


def _entries(block: bytes):
    (n,) = struct.unpack_from("<I", block, 0)
    p, out = 4, []
    for _ in range(n):
        klen = struct.unpack_from("<I", block, p + 12)[0]
        out.append((p, klen))
        p += 16 + klen
    return out


def _swap_keys(block: bytearray, i: int, j: int) -> None:
    """Swap the last keys of index entries ``i`` and ``j`` (same length)."""
    (pi, li), (pj, lj) = _entries(bytes(block))[i], _entries(bytes(block))[j]
    assert li == lj
    ki, kj = bytes(block[pi + 16 : pi + 16 + li]), bytes(block[pj + 16 : pj + 16 + lj])
    block[pi + 16 : pi + 16 + li], block[pj + 16 : pj + 16 + lj] = kj, ki


@pytest.mark.parametrize("shared", [0, 20])
def test_index_keys_out_of_order_with_a_valid_crc_are_caught(tmp_path, shared):
    """Two index keys swapped and the block's CRC made valid again: keys that differ in their
    first 16 bytes, and (``shared=20``) keys equal in them (the kernel's tie path)."""
    path = _table(tmp_path, [b"p" * shared + b"%06d" % i for i in range(3000)])
    data = open(path, "rb").read()
    ents = _entries(data[decode_footer(data, path).index_off :])
    i = len(ents) // 2
    _rewrite_index(path, lambda blk: _swap_keys(blk, i, i + 1))
    with pytest.raises(CorruptionError, match="out of order") as e:
        Table(RealFS(), path, 1)
    assert e.value.path == path


def test_an_index_block_offset_past_the_file_is_caught(tmp_path):
    """An entry's block offset rewritten (valid CRC): the open accepts it as the format allows,
    but the first read of that block raises CorruptionError naming the file."""
    path = _table(tmp_path)

    def far(blk):
        p, _ = _entries(bytes(blk))[3]
        blk[p : p + 8] = struct.pack("<Q", 1 << 40)

    _rewrite_index(path, far)
    t = Table(RealFS(), path, 1)
    with pytest.raises(CorruptionError) as e:
        t.block(3)
    assert e.value.path == path


def _many_tables(path: str, opts, n: int = 30000):
    """The same writes into a bloomdb store at ``path`` and a LevelDB store beside it (plyvel)."""
    plyvel = pytest.importorskip("plyvel")
    ldb = plyvel.DB(path + "-leveldb", create_if_missing=True)
    with DB.open(path, opts) as db:
        for i in range(n):
            k = b"%08d" % ((i * 7919) % 30011)
            v = b"v%d" % i
            db.put(k, v)
            ldb.put(k, v)
            if i % 97 == 0:
                db.delete(k[:-1] + b"1")
                ldb.delete(k[:-1] + b"1")
    return ldb


def test_a_reopened_store_of_many_tables_reads_like_leveldb(tmp_path):
    """Hundreds of tables opened again (each through the one-call open, each filter read on its
    table's first lookup) answer at once as LevelDB does on the same writes."""
    p = str(tmp_path / "db")
    opts = small_options(block_size=256)
    ldb = _many_tables(p, opts)
    try:
        keys = [k for k, _ in ldb.iterator()]
        with DB.open(p, opts) as db:
            assert sum(db.stats()["tables_per_level"]) > 20
            for k in keys[::7]:
                assert db.get(k) == ldb.get(k)
                assert db.get(k + b".") is None
            assert list(db.scan()) == list(ldb.iterator())
        with DB.open(p, opts, read_only=True) as db:
            assert [db.get(k) for k in keys[::11]] == [ldb.get(k) for k in keys[::11]]
    finally:
        ldb.close()


def test_first_lookups_count_each_filter_check_once(tmp_path):
    """A table's first lookup reads its filter into the probe directory and the kernel checks it
    there: the filter checks counted for keys read right after a reopen are the same as for the
    same keys read again (none skipped, none counted twice)."""
    p = str(tmp_path / "db")
    opts = small_options(block_size=256)
    _many_tables(p, opts).close()
    absent = [b"%08d." % i for i in range(0, 30011, 37)]
    with DB.open(p, small_options(block_size=256, background_compaction=False)) as db:  # one version throughout
        counts = []
        for _ in range(2):
            before = db.stats()
            assert all(db.get(k) is None for k in absent)
            after = db.stats()
            counts.append(tuple(after[c] - before[c] for c in ("filter_checks", "filter_useful", "filter_positive")))
        assert counts[0] == counts[1] and counts[0][0] >= len(absent)


def test_a_loaded_filter_is_read_in_place_after_one_check_and_a_fresh_open_sees_damage(tmp_path):
    """The filter is read from a view of the mapped file, checked once (its block's CRC32C) and
    then read in place, like a data block after its first read: nothing is copied (issue 14's
    first reads; it used to be copied, and this test pinned the copy). Table files are never
    written in place; a fresh open of a damaged one fails open."""
    path = _table(tmp_path)
    t = Table(RealFS(), path, 1)
    f = t.filter()
    assert f is not None and not t.filter_damaged
    probe = KEYS[::5] + [k + b"#" for k in KEYS[::5]]
    said = [bool(f.might_contain(k)) for k in probe]
    assert all(said[: len(KEYS[::5])])
    assert np.shares_memory(f.probe_descriptor().args[0], t._arr)
    h = t._handles
    with open(path, "r+b") as fh:
        fh.seek(h.filter_off)
        fh.write(bytes(h.filter_size))
    t2 = Table(RealFS(), path, 1)
    assert t2.filter() is None and t2.filter_damaged  # a fresh open sees the damage and fails open
