"""``bloomdb ldb`` and ``bloomdb sst-dump`` (issue 15), RocksDB's ``ldb``/``sst_dump`` shapes."""

from __future__ import annotations

import os

import pytest

from bloomdb.cli.main import main
from bloomdb.lsm import DB, Options
from bloomdb.lsm.fs import RealFS


def _opts(**kw):
    kw.setdefault("fs", RealFS(fsync=False))
    kw.setdefault("background_compaction", False)
    return Options(**kw)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s"
    with DB.open(path, _opts(memtable_bytes=4096)) as db:
        for i in range(300):
            db.put(b"k%04d" % i, b"v\x00%d" % i)
        db.delete(b"k0003")
    return str(path)


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ldb_reads(store, capsys):
    assert _run(capsys, "ldb", store, "get", "k0001") == (0, "v\\x001\n", "")
    assert _run(capsys, "ldb", store, "get", "k0003")[:2] == (1, "NotFound\n")
    assert _run(capsys, "ldb", store, "--hex", "get", "0x6B30303032")[:2] == (0, "0x760032\n")
    code, out, _ = _run(capsys, "ldb", store, "scan", "--from", "k0001", "--to", "k0005")
    assert out.splitlines() == ["k0001 : v\\x001", "k0002 : v\\x002", "k0004 : v\\x004"]
    code, out, _ = _run(capsys, "ldb", store, "scan", "--reverse", "--limit", "2")
    assert out.splitlines() == ["k0299 : v\\x00299", "k0298 : v\\x00298"]
    code, out, _ = _run(capsys, "ldb", store, "dump")
    lines = out.splitlines()
    assert lines[0] == "k0000 ==> v\\x000" and lines[-1] == "Keys in range: 299" and len(lines) == 300
    code, out, _ = _run(capsys, "ldb", store, "stats")
    assert code == 0 and "Level  Files" in out and "--- level 0 ---" in out


def test_ldb_reads_beside_a_writer_and_writes_refused_while_it_runs(store, capsys):
    with DB.open(store, _opts()) as db:
        db.put(b"live", b"1")
        assert _run(capsys, "ldb", store, "get", "live")[:2] == (0, "1\n")  # read-only: no lock needed
        with pytest.raises(SystemExit) as e:
            main(["ldb", store, "put", "a", "b"])
        assert e.value.code == 2 and "another process" in capsys.readouterr().err


def test_ldb_writes_compact_checkpoint_repair(store, capsys, tmp_path):
    assert _run(capsys, "ldb", store, "put", "new", "x")[:2] == (0, "OK\n")
    assert _run(capsys, "ldb", store, "delete", "k0000")[:2] == (0, "OK\n")
    assert _run(capsys, "ldb", store, "compact")[:2] == (0, "OK\n")
    cp = str(tmp_path / "cp")
    code, out, _ = _run(capsys, "ldb", store, "checkpoint", cp)
    assert code == 0 and cp in out
    os.remove(os.path.join(cp, "MANIFEST"))
    code, out, _ = _run(capsys, "ldb", cp, "repair")
    assert code == 0 and "manifest: missing" in out
    with DB.open(cp, _opts()) as db:
        assert db.get(b"new") == b"x" and db.get(b"k0000") is None and db.get(b"k0299") == b"v\x00299"


def test_ldb_errors_are_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["ldb", str(tmp_path / "none"), "get", "a"])
    assert e.value.code == 2 and "no store here" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()
    with pytest.raises(SystemExit) as e:
        main(["ldb", str(tmp_path), "--hex", "get", "zz"])
    assert e.value.code == 2


def _one_table(store):
    with DB.open(store, _opts()) as db:
        db.compact_range()
        (ref,) = db._version.all_refs()
        return os.path.join(store, "%06d.sst" % ref.number), ref


def test_sst_dump_properties_filter_and_scan(store, capsys):
    path, ref = _one_table(store)
    code, out, _ = _run(capsys, "sst-dump", path, "--scan", "--limit", "2")
    assert code == 0
    assert "entries: 299 (0 deletions)" in out and "keys: k0000 .. k0299" in out
    assert "filter: blocked (spec 'blocked:10')" in out and "model FP rate" in out
    assert "verify: OK" in out
    assert out.splitlines()[-2:] == ["k0000 @ 1 : value => v\\x000", "k0001 @ 2 : value => v\\x001"]


def test_sst_dump_finds_a_damaged_block(store, capsys):
    path, ref = _one_table(store)
    raw = bytearray(open(path, "rb").read())
    raw[ref.table.offsets[0] + 10] ^= 0xFF
    open(path, "wb").write(bytes(raw))
    code, out, _ = _run(capsys, "sst-dump", path)
    assert code == 1 and "verify: FAILED" in out and "CRC32C" in out
    assert _run(capsys, "sst-dump", path, "--no-verify")[0] == 0


def test_sst_dump_of_a_file_that_is_no_table(tmp_path, capsys):
    p = tmp_path / "000001.sst"
    p.write_bytes(b"hello" * 40)
    with pytest.raises(SystemExit) as e:
        main(["sst-dump", str(p)])
    assert e.value.code == 2 and "magic" in capsys.readouterr().err
