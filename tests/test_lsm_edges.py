"""Edges a new user meets first (issue 15): reads after close, numpy key types, multi_get of one
str, opening in a read-only folder or on a full disk, per-table filter size, db-stress progress."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from bloomdb.errors import BloomDBError, KeyTypeError, StoreClosed, StoreIOError
from bloomdb.lsm import DB, Options, WriteBatch
from bloomdb.lsm.fs import RealFS


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    return Options(**kw)


def test_every_read_after_close_raises(tmp_path):
    db = DB.open(tmp_path / "s", _opts())
    db.put(b"a", b"1")
    snap = db.snapshot()
    db.close()
    reads = [lambda: db.get(b"a"), lambda: db.multi_get([b"a"]), lambda: list(db.scan()),
             lambda: b"a" in db, lambda: db.snapshot(), lambda: db.get(b"a", snapshot=snap),
             lambda: list(db.scan(snapshot=snap)), lambda: db.stats(), lambda: list(db)]
    for read in reads:
        with pytest.raises(StoreClosed, match="closed"):
            read()
    with pytest.raises(RuntimeError):  # plyvel raises RuntimeError: code catching it keeps working
        db.get(b"a")
    with pytest.raises(StoreClosed):
        db.put(b"b", b"2")
    db.close()  # still idempotent


def test_numpy_bytes_and_str_keys_are_the_same_keys(tmp_path):
    """np.bytes_ is a bytes subclass: accepted everywhere, as its bytes (like the filters' keys)."""
    with DB.open(tmp_path / "s", _opts()) as db:
        db.put(np.bytes_(b"k1"), np.bytes_(b"v1"))
        db.put(b"k2", b"v2")
        db.put(np.str_("k3"), b"v3")
        db.write(WriteBatch().put(np.bytes_(b"k4"), b"v4").delete(np.bytes_(b"k2")))
        assert db.get(b"k1") == b"v1" and type(db.get(b"k1")) is bytes
        assert db.get(np.bytes_(b"k1")) == b"v1"
        assert db.get(np.bytes_(b"k3")) == b"v3" and db.get("k3") == b"v3"
        assert db.get(np.bytes_(b"k2")) is None
        assert db.multi_get([np.bytes_(b"k1"), np.bytes_(b"k4"), b"k3"]) == [b"v1", b"v4", b"v3"]
        assert list(db.scan(np.bytes_(b"k1"), np.bytes_(b"k4"))) == [(b"k1", b"v1"), (b"k3", b"v3")]
        db.delete(np.bytes_(b"k1"))
        db.flush()
        assert db.get(np.bytes_(b"k1")) is None and db.get(np.bytes_(b"k4")) == b"v4"
        with pytest.raises(KeyTypeError):
            db.get(np.int64(5))


@pytest.mark.parametrize("one_key", ["abc", b"abc", bytearray(b"abc")])
def test_multi_get_of_one_key_is_an_error(tmp_path, one_key):
    with DB.open(tmp_path / "s", _opts()) as db:
        for k in (b"a", b"b", b"c", b"abc"):
            db.put(k, k)
        with pytest.raises(KeyTypeError, match="iterable of keys"):
            db.multi_get(one_key)
        assert db.multi_get(["abc"]) == [b"abc"]
        assert db.multi_get(iter([b"a", "c"])) == [b"a", b"c"]


class _RefusingFS(RealFS):
    """Every write fails with ``err`` (a read-only folder: EACCES; a full disk: ENOSPC)."""

    def __init__(self, err: int):
        super().__init__(fsync=False)
        self.err = err

    def _fail(self, path):
        raise OSError(self.err, os.strerror(self.err), path)

    def open_append(self, path):
        self._fail(path)

    def write_atomic(self, path, data):
        self._fail(path)


@pytest.mark.parametrize("err, advice", [(errno.EACCES, "not writable"), (errno.EROFS, "not writable"),
                                         (errno.ENOSPC, "free space")])
def test_reopen_that_cannot_write_raises_our_error_naming_path_and_remedy(tmp_path, err, advice):
    path = tmp_path / "s"
    with DB.open(path, _opts()) as db:
        db.put(b"k", b"v")  # a log to replay: the reopen must write a table and a new log
    before = sorted(os.listdir(path))
    with pytest.raises(StoreIOError) as e:
        DB.open(path, _opts(fs=_RefusingFS(err)))
    assert str(path) in str(e.value) and advice in str(e.value)
    assert e.value.errno == err and isinstance(e.value, OSError)
    assert sorted(os.listdir(path)) == before  # nothing changed by the refused open
    with DB.open(path, _opts()) as db:  # and the lock was released
        assert db.get(b"k") == b"v"


class _FillingFS(RealFS):
    """Writes fail with ENOSPC once ``full`` is set (the disk filled while the store was open)."""

    def __init__(self):
        super().__init__(fsync=False)
        self.full = False

    def open_append(self, path):
        f = super().open_append(path)
        write, fs = f.write, self

        def checked(data):
            if fs.full:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            write(data)

        f.write = checked
        return f


@pytest.mark.parametrize("how", ["put", "batch", "flush"])
def test_disk_filling_up_while_open_raises_our_error_and_loses_nothing(tmp_path, how):
    path = tmp_path / "s"
    fs = _FillingFS()
    db = DB.open(path, _opts(fs=fs))
    for i in range(100):
        db.put(b"k%03d" % i, b"v")
    fs.full = True
    with pytest.raises(StoreIOError) as e:
        if how == "put":
            db.put(b"late", b"x")
        elif how == "batch":
            db.write(WriteBatch().put(b"late", b"x").delete(b"k000"))
        else:
            db.flush()
    assert str(path) in str(e.value) and "free space" in str(e.value) and e.value.errno == errno.ENOSPC
    with pytest.raises(BloomDBError, match="stopped"):  # no write after a failed one
        db.put(b"later", b"y")
    assert db.get(b"k042") == b"v"  # reads keep working
    db.close()
    with DB.open(path, _opts()) as db:
        assert [db.get(b"k%03d" % i) for i in range(100)] == [b"v"] * 100
        assert db.get(b"late") is None and db.get(b"later") is None


def test_create_in_a_folder_that_cannot_be_written(tmp_path):
    with pytest.raises(StoreIOError, match="not writable"):
        DB.open(tmp_path / "new", _opts(fs=_RefusingFS(errno.EACCES)))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores folder permissions")
def test_real_read_only_folder(tmp_path):
    path = tmp_path / "s"
    with DB.open(path, _opts()) as db:
        db.put(b"k", b"v")
    os.chmod(path, 0o555)
    try:
        with pytest.raises(StoreIOError, match="not writable"):
            DB.open(path, _opts())
    finally:
        os.chmod(path, 0o755)


@pytest.mark.parametrize("spec", ["register:2", "register:1"])
def test_fixed_size_filter_spec_is_sized_per_table(tmp_path, spec):
    """register:2 alone is 256 KiB whatever the count; a table's filter follows its key count."""
    with DB.open(tmp_path / "s", _opts(filter=spec)) as db:
        for i in range(100):
            db.put(b"k%04d" % i, b"v")
        db.flush()
        (ref,) = db._version.all_refs()
        assert ref.table.filter_bytes < 1024  # ~10 bits per key of 100 keys, not 256 KiB
        assert all(db.get(b"k%04d" % i) == b"v" for i in range(100))
        assert db.stats()["filter_useful"] == 0
        assert sum(db.get(b"k%04d-%d" % (i % 99, i)) is None for i in range(2000)) == 2000  # in the key range
        st = db.stats()
        assert st["filter_useful"] > 0.9 * 2000
    with DB.open(tmp_path / "t", _opts(filter="register:2:20")) as db:  # an explicit density is kept
        for i in range(1000):
            db.put(b"k%04d" % i, b"v")
        db.flush()
        (ref,) = db._version.all_refs()
        assert 2000 < ref.table.filter_bytes < 4000


def test_db_stress_says_what_it_does_before_it_starts(tmp_path, capsys, monkeypatch):
    from bloomdb.bench import stress
    from bloomdb.cli.main import main

    seen = []
    real = stress.model_check

    def spy(*a, **kw):
        seen.append(capsys.readouterr().out)
        return real(*a, **kw)

    monkeypatch.setattr(stress, "model_check", spy)
    assert main(["db-stress", "--ops", "1000", "--kills", "0", "--no-progress", "--dir", str(tmp_path)]) == 0
    assert "db-stress: model check of 1,000 random ops" in seen[0]
    assert "model check: 1,000 ops, 0 divergences" in capsys.readouterr().out


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc (Linux)")
@pytest.mark.parametrize("read_only", [False, True])
def test_close_releases_every_table_file_without_the_garbage_collector(tmp_path, read_only):
    """A table's mapped file holds a descriptor. close() must give them back at once: before,
    they stayed until the garbage collector broke the store's reference cycles, so a process that
    opened and closed stores (the checkpoint tests: thousands) ran out of descriptors."""
    import gc

    path = str(tmp_path / "db")
    with DB.open(path, _opts()) as db:
        for t in range(4):
            for i in range(100):
                db.put(b"k%05d" % (t * 100 + i), b"v" * 40)
            db.flush()
    gc.collect()
    gc.disable()
    try:
        before = _open_fds()
        for _ in range(5):
            db = DB.open(path, _opts(), read_only=read_only)
            assert db.get(b"k00001") == b"v" * 40 and len(list(db.iterator())) == 400
            db.close()
            del db
            assert _open_fds() == before
    finally:
        gc.enable()


def test_a_second_open_of_a_store_in_the_same_process_is_refused_and_says_so(tmp_path):
    """Two writers of one folder in one process would corrupt it: the second open is refused
    (``flock`` is per open file), and the message does not send the user to look for another
    process."""
    p = str(tmp_path / "s")
    with DB.open(p) as db:
        db.put(b"k", b"v")
        with pytest.raises(BloomDBError, match="this or another process.*read_only=True"):
            DB.open(p)
        with DB.open(p, read_only=True) as r:
            assert r.get(b"k") == b"v"
        db.put(b"k2", b"v2")  # the refused open changed nothing
    with DB.open(p) as db:
        assert db.get(b"k2") == b"v2"
