"""The write path at speed (issue 14): WAL records through a shared memory map (:mod:`bloomdb.lsm.logfile`),
batches of puts laid out by one kernel (:mod:`bloomdb.lsm.batch`) -- same bytes, same answers,
same durability as the per-record path."""

from __future__ import annotations

import errno
import os
import random
import signal

import pytest

from bloomdb.errors import BloomDBError, StoreIOError
from bloomdb.lsm import DB, Options, WriteBatch, batch as wb, logfile, wal
from bloomdb.lsm.fs import RealFS


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    return Options(**kw)


def test_log_is_mapped_with_space_reserved_and_reopens_from_its_zero_tail(tmp_path):
    with DB.open(tmp_path / "s", _opts()) as db:
        assert isinstance(db._log._f, logfile.MappedLogFile)
        name = db._log.path
        for i in range(100):
            db.put(b"k%03d" % i, b"v" * 50)
        assert os.path.getsize(name) == logfile.CHUNK  # space reserved ahead
        assert 100 * 50 < db._log.bytes < logfile.CHUNK
    with DB.open(tmp_path / "s", _opts()) as db:
        assert dict(db.scan()) == {b"k%03d" % i: b"v" * 50 for i in range(100)}


def test_a_record_bigger_than_the_reserved_space_grows_it(tmp_path):
    big = os.urandom(logfile.CHUNK * 3 + 17)
    with DB.open(tmp_path / "s", _opts(memtable_bytes=64 << 20)) as db:
        db.put(b"a", b"x")
        db.put(b"big", big)
        db.write(WriteBatch().put(b"big2", big).put(b"c", b"y"))
        db.put(b"z", b"last")
    with DB.open(tmp_path / "s", _opts()) as db:
        assert db.get(b"big") == big and db.get(b"big2") == big and db.get(b"z") == b"last"


def _kill_after_puts(path, n):
    pid = os.fork()
    if pid == 0:  # the child writes, then dies without closing anything
        try:
            db = DB.open(path, _opts(memtable_bytes=64 << 20))
            for i in range(n):
                db.put(b"k%05d" % i, b"v%05d" % i)
            db.write(WriteBatch().put(b"batch", b"b").delete(b"k00000"))
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)


def test_sigkill_keeps_every_acknowledged_write_and_the_zero_tail_ends_the_log(tmp_path):
    path = str(tmp_path / "s")
    _kill_after_puts(path, 3000)
    logs = [f for f in os.listdir(path) if f.endswith(".log")]
    assert logs and any(os.path.getsize(os.path.join(path, f)) == logfile.CHUNK for f in logs)
    with DB.open(path, _opts()) as db:
        assert db.get(b"k00000") is None and db.get(b"batch") == b"b"
        assert all(db.get(b"k%05d" % i) == b"v%05d" % i for i in range(1, 3000))


def test_zero_tail_after_records_and_after_a_torn_record_is_the_end():
    recs = wal.encode_put(1, b"a", b"1") + wal.encode_put(2, b"b", b"2")
    zeros = bytes(1 << 16)
    assert [s for s, _ in wal.read_log(recs + zeros, "x")] == [1, 2]
    torn = wal.encode_put(3, b"c", b"3")[:-2]
    assert [s for s, _ in wal.read_log(recs + torn + zeros, "x")] == [1, 2]  # a torn tail, not corruption
    assert wal.is_log(zeros) and wal.is_log(b"") and not wal.is_log(b"\x01" + zeros)


def test_damage_before_intact_records_is_still_corruption_with_a_zero_tail():
    from bloomdb.errors import CorruptionError

    a, b = wal.encode_put(1, b"a", b"1"), wal.encode_put(2, b"b", b"2")
    bad = bytearray(a)
    bad[10] ^= 0xFF
    with pytest.raises(CorruptionError):
        list(wal.read_log(bytes(bad) + b + bytes(4096), "x"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batch_record_is_the_per_op_encoders_bytes(seed):
    rng = random.Random(seed)
    b = WriteBatch()
    for _ in range(rng.randrange(8, 300)):
        b.put(rng.randbytes(rng.randrange(0, 40)), rng.randbytes(rng.randrange(0, 300)))
    rec, puts = wb.record(b, 12345)
    assert puts is not None and bytes(rec) == wal.encode_batch(12345, b.ops)
    assert list(wal.read_log(bytes(rec), "x")) == [(12345, b.ops)]


@pytest.mark.parametrize("klen, vlen", [(16, 100), (1, 0), (0, 7), (24, None)])
def test_batch_record_of_one_size_keys_or_values_is_the_per_op_encoders_bytes(klen, vlen):
    """Keys (and values) all of one length take the offsets' uniform shortcut (``vlen=None``:
    values of mixed lengths beside one-length keys); empty keys and empty values included."""
    rng = random.Random(klen)
    b = WriteBatch()
    for _ in range(rng.randrange(8, 300)):
        b.put(rng.randbytes(klen), rng.randbytes(rng.randrange(0, 50) if vlen is None else vlen))
    rec, puts = wb.record(b, 99)
    assert puts is not None and bytes(rec) == wal.encode_batch(99, b.ops)
    assert list(wal.read_log(bytes(rec), "x")) == [(99, b.ops)]


def test_batch_fast_path_with_repeated_keys_matches_a_dict(tmp_path):
    rng = random.Random(7)
    model = {}
    with DB.open(tmp_path / "s", _opts(memtable_bytes=32 << 10)) as db:
        for _ in range(60):
            b = WriteBatch()
            for _ in range(rng.randrange(8, 200)):
                k, v = b"k%03d" % rng.randrange(300), rng.randbytes(20)
                b.put(k, v)
                model[k] = v
            db.write(b)
            if rng.random() < 0.3:  # the sorted keys catch up with the dict's new keys, each once
                with db._lock:
                    db._mem._merge_pending()
                    assert list(db._mem.keys) == sorted(db._mem.latest)
        assert dict(db.scan()) == model
    with DB.open(tmp_path / "s", _opts()) as db:
        assert dict(db.scan()) == model


def test_batch_under_a_snapshot_keeps_the_old_versions(tmp_path):
    with DB.open(tmp_path / "s", _opts()) as db:
        db.write(WriteBatch().put(b"a", b"1").put(b"b", b"1").put(b"c", b"1").put(b"d", b"1")
                 .put(b"e", b"1").put(b"f", b"1").put(b"g", b"1").put(b"h", b"1"))
        with db.snapshot() as snap:
            b = WriteBatch()
            for k in b"abcdefgh":
                b.put(bytes([k]), b"2")
            db.write(b)
            assert snap.get(b"a") == b"1" and db.get(b"a") == b"2"


def test_full_disk_when_reserving_log_space_raises_our_error_and_keeps_acknowledged_writes(tmp_path, monkeypatch):
    path = tmp_path / "s"
    db = DB.open(path, _opts(memtable_bytes=64 << 20))
    acked = 0
    real = os.posix_fallocate

    def full(fd, off, size):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(logfile.os, "posix_fallocate", full)
    with pytest.raises(StoreIOError) as e:
        for i in range(100000):
            db.put(b"k%06d" % i, b"v" * 100)
            acked = i + 1
    assert e.value.errno == errno.ENOSPC and acked > 1000
    with pytest.raises(BloomDBError, match="stopped"):
        db.put(b"later", b"x")
    monkeypatch.setattr(logfile.os, "posix_fallocate", real)
    db.close()
    with DB.open(path, _opts()) as db:
        assert all(db.get(b"k%06d" % i) == b"v" * 100 for i in range(acked))
        assert db.get(b"k%06d" % acked) is None


def test_subclassed_file_systems_keep_their_own_log_files(tmp_path):
    class Counting(RealFS):
        def open_append(self, path):
            return super().open_append(path)

    with DB.open(tmp_path / "s", _opts(fs=Counting(fsync=False))) as db:
        assert not isinstance(db._log._f, logfile.MappedLogFile)
        db.put(b"k", b"v")


def test_reserve_allocates_and_zeroes_past_the_end_even_through_short_pwrites(tmp_path, monkeypatch):
    name = str(tmp_path / "f")
    with open(name, "wb") as f:
        f.write(b"x" * 100)
    real = os.pwrite
    calls = []

    def short(fd, data, off):  # a file system that writes at most 4 KiB per call
        calls.append(off)
        return real(fd, bytes(data[:4096]), off)

    monkeypatch.setattr(logfile.os, "pwrite", short)
    fd = os.open(name, os.O_RDWR)
    try:
        logfile.reserve(fd, 100, 100 + 3 * 4096 + 5)
    finally:
        os.close(fd)
    with open(name, "rb") as f:
        data = f.read()
    assert data[:100] == b"x" * 100 and data[100:] == bytes(3 * 4096 + 5) and len(calls) == 4


def test_reserve_raises_when_pwrite_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(logfile.os, "pwrite", lambda fd, data, off: 0)
    fd = os.open(str(tmp_path / "f"), os.O_RDWR | os.O_CREAT)
    try:
        with pytest.raises(OSError):
            logfile.reserve(fd, 0, 4096)
    finally:
        os.close(fd)
