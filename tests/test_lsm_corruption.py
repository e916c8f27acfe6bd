"""Damaged files: flipped bytes in tables, WAL and manifest never give wrong data or crash the
interpreter; they raise CorruptionError naming the file, except a damaged filter (fails open)."""

from __future__ import annotations

import os
import random

import pytest

from bloomdb.errors import CorruptionError
from bloomdb.lsm import DB, Options


def _opts(**kw):
    base = dict(memtable_bytes=1 << 20, block_size=512, background_compaction=False)
    base.update(kw)
    return Options(**base)


def _fill(path, n=600, **kw):
    model = {b"key%05d" % i: b"value-%d" % (i * 7) * 3 for i in range(n)}
    with DB.open(path, _opts(**kw)) as db:
        for k, v in model.items():
            db.put(k, v)
        db.flush()
    return model


def _flip(path, rng, lo=0, hi=None):
    data = bytearray(open(path, "rb").read())
    hi = len(data) if hi is None else hi
    pos = rng.randrange(lo, hi)
    data[pos] ^= 1 << rng.randrange(8)
    with open(path, "wb") as f:
        f.write(data)
    return pos


def _read_all(db, model):
    for k, v in model.items():
        got = db.get(k)
        assert got == v, f"wrong data for {k!r}"
    assert db.get(b"absent") is None
    assert list(db.scan()) == sorted(model.items())


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_flip_table_byte(tmp_path, seed, compression):
    path = str(tmp_path / "db")
    model = _fill(path, compression=compression)
    (sst,) = [f for f in os.listdir(path) if f.endswith(".sst")]
    _flip(os.path.join(path, sst), random.Random(seed))
    try:
        with DB.open(path, _opts(compression=compression)) as db:
            _read_all(db, model)
    except CorruptionError as e:
        assert e.path is not None and sst in e.path


def test_damaged_filter_fails_open_and_is_counted(tmp_path):
    from bloomdb.lsm.sstable.footer import decode_footer

    path = str(tmp_path / "db")
    model = _fill(path)
    (sst,) = [f for f in os.listdir(path) if f.endswith(".sst")]
    p = os.path.join(path, sst)
    h = decode_footer(open(p, "rb").read(), p)
    _flip(p, random.Random(1), h.filter_off, h.filter_off + h.filter_size)
    with DB.open(path, _opts()) as db:
        _read_all(db, model)
        st = db.stats()
        assert st["filters_damaged"] == 1
        assert st["filter_checks"] == 0  # nothing was filtered: every read went to the table


def test_flip_wal_middle_and_tail(tmp_path):
    path = str(tmp_path / "db")
    db = DB.open(path, _opts())
    for i in range(200):
        db.put(b"k%04d" % i, b"v" * 20)
    log = os.path.join(path, [f for f in os.listdir(path) if f.endswith(".log")][0])
    size = db._log.bytes  # the records' end (a mapped log's file has reserved zeros after it)
    db._log.close()
    db._release_lock()  # simulate a crash: nothing flushed, the log is all there is
    db._closed = True
    # the tail record damaged: a torn tail, dropped silently
    backup = open(log, "rb").read()
    _flip(log, random.Random(0), size - 10, size)
    with DB.open(path, _opts()) as db2:
        assert db2.get(b"k0000") == b"v" * 20 and db2.get(b"k0198") == b"v" * 20
        assert db2.get(b"k0199") is None


def test_flip_wal_middle_is_corruption(tmp_path):
    path = str(tmp_path / "db")
    db = DB.open(path, _opts())
    for i in range(200):
        db.put(b"k%04d" % i, b"v" * 20)
    log = os.path.join(path, [f for f in os.listdir(path) if f.endswith(".log")][0])
    db._log.close()
    db._release_lock()
    db._closed = True
    import shutil

    shutil.copytree(path, str(tmp_path / "copy"))
    _flip(log, random.Random(0), 100, 200)
    with pytest.raises(CorruptionError) as ei:
        DB.open(path, _opts())
    assert ei.value.path.endswith(".log")
    # paranoid_checks=False keeps what came before the damage
    log2 = os.path.join(str(tmp_path / "copy"), os.path.basename(log))
    _flip(log2, random.Random(0), 100, 200)
    with DB.open(str(tmp_path / "copy"), _opts(paranoid_checks=False)) as db3:
        assert db3.get(b"k0000") == b"v" * 20
        assert db3.get(b"k0150") is None


@pytest.mark.parametrize("seed", range(6))
def test_flip_manifest(tmp_path, seed):
    path = str(tmp_path / "db")
    _fill(path, n=50)
    _flip(os.path.join(path, "MANIFEST"), random.Random(seed))
    with pytest.raises(CorruptionError) as ei:
        DB.open(path, _opts())
    assert ei.value.path.endswith("MANIFEST")


def test_partitioned_filters_reject_and_fail_open(tmp_path):
    from bloomdb.lsm.sstable.builder import PARTITION_MAGIC
    from bloomdb.lsm.sstable.footer import decode_footer

    path = str(tmp_path / "db")
    model = _fill(path, partitioned_filters=True, filter_partition_blocks=4)
    with DB.open(path, _opts(partitioned_filters=True)) as db:
        _read_all(db, model)
        assert all(db.get(b"key%05dx" % i) is None for i in range(600))
        st = db.stats()
        assert st["filter_useful"] > 500 and st["filters_damaged"] == 0
    (sst,) = [f for f in os.listdir(path) if f.endswith(".sst")]
    p = os.path.join(path, sst)
    data = open(p, "rb").read()
    h = decode_footer(data, p)
    assert data[h.filter_off : h.filter_off + 4] == PARTITION_MAGIC
    # damage the first partition (it starts right after the data blocks): its keys fail open
    _flip(p, random.Random(3), h.filter_off - 200, h.filter_off - 100)
    with DB.open(path, _opts()) as db:
        _read_all(db, model)
        assert db.stats()["filters_damaged"] == 1


@pytest.mark.parametrize("where", ["body", "type", "crc"])
def test_scan_before_any_read_names_a_damaged_data_block(tmp_path, where):
    """A scan that is the first read of a table checks its blocks in the decode kernel
    (:func:`sstable._table_kernels.decode_range`): a flipped bit in a data block's body, its
    type byte or its stored CRC32C raises CorruptionError naming the file (the kernel hands the
    range to the step-by-step path, which names the damage); no wrong entry comes out first."""
    from bloomdb.lsm.fs import RealFS
    from bloomdb.lsm.sstable.reader import Table

    path = str(tmp_path / "db")
    model = _fill(path)
    (sst,) = [f for f in os.listdir(path) if f.endswith(".sst")]
    t = Table(RealFS(), os.path.join(path, sst), 0)
    k = t.num_blocks() // 2
    off, size = t.offsets[k], t.sizes[k]
    del t
    pos = {"body": off + size // 2, "type": off + size, "crc": off + size + 2}[where]
    data = bytearray(open(os.path.join(path, sst), "rb").read())
    data[pos] ^= 0x10
    with open(os.path.join(path, sst), "wb") as f:
        f.write(data)
    with DB.open(path, _opts()) as db:
        with pytest.raises(CorruptionError) as e:
            got = list(db.scan())
            assert got == sorted(model.items())  # not reached: the damage is found
        assert e.value.path is not None and sst in e.value.path


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_scan_as_first_read_equals_the_model(tmp_path, compression):
    """A scan as a reopened store's first read (raw blocks checked and decoded in one kernel
    call; compressed ones through the step-by-step path) gives the model, both directions."""
    path = str(tmp_path / "db")
    model = _fill(path, compression=compression)
    with DB.open(path, _opts(compression=compression)) as db:
        assert list(db.scan()) == sorted(model.items())
    with DB.open(path, _opts(compression=compression)) as db:
        assert list(db.scan(reverse=True)) == sorted(model.items(), reverse=True)
