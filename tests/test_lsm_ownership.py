"""The store deletes only files it can prove it wrote (issue 12, item 4).

``DB.open`` on a LevelDB or RocksDB folder used to create an empty store there and delete the
other engine's ``NNNNNN.log``/``.sst`` files (LevelDB lost its unflushed keys, RocksDB no longer
opened); garbage collection deleted any ``NNNNNN.sst`` not in the manifest.
"""

from __future__ import annotations

import os

import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.lsm import DB, Options
from bloomdb.lsm import manifest as mf
IDENTITY = "BLOOMDB"  # the store's identity file (docs/formats.md)
from lsm_helpers import small_options

N = 3000


def _snapshot(path):
    """Every file under ``path`` with its bytes (what a refused open must leave unchanged)."""
    out = {}
    for root, _, names in os.walk(path):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def _refused_everywhere(path):
    before = _snapshot(path)
    for o in (Options(), Options(create_if_missing=False), Options(error_if_exists=True), small_options()):
        with pytest.raises(InvalidArgument, match="not a bloomdb store"):
            DB.open(path, o)
    assert _snapshot(path) == before


def test_a_leveldb_folder_is_refused_and_leveldb_keeps_every_key(tmp_path):
    plyvel = pytest.importorskip("plyvel")
    p = str(tmp_path / "ldb")
    db = plyvel.DB(p, create_if_missing=True, write_buffer_size=64 << 10)
    for i in range(N):
        db.put(b"k%06d" % i, b"v%d" % i)
    db.close()
    db = plyvel.DB(p)
    for i in range(N, N + 500):  # these stay in LevelDB's log only (its memtable is not flushed)
        db.put(b"k%06d" % i, b"v%d" % i)
    db.close()
    names = os.listdir(p)
    assert any(n.endswith(".log") and os.path.getsize(os.path.join(p, n)) for n in names)
    _refused_everywhere(p)
    db = plyvel.DB(p)
    try:
        assert dict(db.iterator()) == {b"k%06d" % i: b"v%d" % i for i in range(N + 500)}
    finally:
        db.close()


def test_a_rocksdb_folder_is_refused_and_rocksdb_still_opens(tmp_path):
    rocksdict = pytest.importorskip("rocksdict")
    p = str(tmp_path / "rdb")
    o = rocksdict.Options(raw_mode=True)
    o.create_if_missing(True)
    db = rocksdict.Rdict(p, o)
    for i in range(N):
        db[b"k%06d" % i] = b"v%d" % i
    db.flush()
    for i in range(N, N + 500):  # in the WAL only
        db[b"k%06d" % i] = b"v%d" % i
    db.close()
    assert any(n.endswith(".sst") for n in os.listdir(p))
    _refused_everywhere(p)
    db = rocksdict.Rdict(p, rocksdict.Options(raw_mode=True))
    try:
        assert dict(db.items()) == {b"k%06d" % i: b"v%d" % i for i in range(N + 500)}
    finally:
        db.close()


def test_any_non_empty_folder_is_refused_untouched(tmp_path):
    p = tmp_path / "folder"
    p.mkdir()
    (p / "000003.log").write_bytes(b"someone else's log")
    (p / "000007.sst").write_bytes(b"someone else's table")
    (p / "MANIFEST").write_bytes(b"not ours")
    (p / "notes.txt").write_text("hello")
    _refused_everywhere(str(p))
    (p / IDENTITY).write_bytes(b"an identity of something else\n")
    with pytest.raises(InvalidArgument, match="identity"):
        DB.open(str(p))
    with pytest.raises(InvalidArgument, match="not a folder"):
        DB.open(str(p / "notes.txt"))


def test_an_empty_folder_becomes_a_store_and_the_flags_follow_leveldb(tmp_path):
    p = tmp_path / "empty"
    p.mkdir()
    with pytest.raises(InvalidArgument, match="create_if_missing"):
        DB.open(str(p), Options(create_if_missing=False))
    assert os.listdir(p) == []
    with DB.open(str(p)) as db:
        db.put(b"a", b"1")
    assert IDENTITY in os.listdir(p)
    with pytest.raises(InvalidArgument, match="error_if_exists"):
        DB.open(str(p), Options(error_if_exists=True))
    with DB.open(str(p), Options(create_if_missing=False)) as db:
        assert db.get(b"a") == b"1"


def test_a_store_whose_creation_crashed_half_way_still_opens(tmp_path):
    good = tmp_path / "good"
    DB.open(str(good)).close()
    p = tmp_path / "half"
    p.mkdir()
    (p / IDENTITY).write_bytes((good / IDENTITY).read_bytes())  # the identity file came first
    (p / "LOCK").write_bytes(b"")
    (p / "MANIFEST.tmp").write_bytes(b"BDBMANI1\x01")  # a torn first manifest
    with pytest.raises(InvalidArgument, match="interrupted"):
        DB.open(str(p), Options(create_if_missing=False))
    with DB.open(str(p)) as db:
        db.put(b"a", b"1")
    with DB.open(str(p), Options(create_if_missing=False)) as db:
        assert db.get(b"a") == b"1"
    assert "MANIFEST.tmp" not in os.listdir(p)


def _fill(db, n, tag=b""):
    for i in range(n):
        db.put(b"k%06d" % i, b"v%d" % i + tag)


def test_garbage_collection_keeps_files_the_manifest_does_not_prove_ours(tmp_path):
    p = str(tmp_path / "db")
    o = small_options(background_compaction=False)
    with DB.open(p, o) as db:
        _fill(db, 2000)
    foreign = {"900000.sst": b"a table of someone else", "900001.log": b"a log of someone else",
               "notes.txt": b"keep me", "000012.ldb": b"leveldb's table suffix"}
    for name, data in foreign.items():
        with open(os.path.join(p, name), "wb") as fh:
            fh.write(data)
    with open(os.path.join(p, "MANIFEST"), "rb") as fh:
        st = mf.decode(fh.read(), "MANIFEST")
    live = {info.number for _, info in st.tables}
    free = [n for n in range(st.next_file - 1, 0, -1) if n not in live and not os.path.exists(os.path.join(p, f"{n:06d}.sst"))]
    # reserved by the manifest and not live: an obsolete input whose deletion a crash stopped (a
    # complete table of ours) and an interrupted output -- both provably ours, both deleted
    obsolete, interrupted = f"{free[0]:06d}.sst", f"{free[1]:06d}.sst.tmp"
    with open(os.path.join(p, f"{min(live):06d}.sst"), "rb") as src, open(os.path.join(p, obsolete), "wb") as fh:
        fh.write(src.read())
    with open(os.path.join(p, interrupted), "wb") as fh:
        fh.write(b"half a table")
    foreign[f"{free[2]:06d}.sst"] = b"a reserved number, but not our table"
    with open(os.path.join(p, f"{free[2]:06d}.sst"), "wb") as fh:
        fh.write(foreign[f"{free[2]:06d}.sst"])
    for _ in range(3):
        with DB.open(p, o) as db:  # recovery, flushes and compactions: each deletes obsolete files
            assert not os.path.exists(os.path.join(p, obsolete))
            assert not os.path.exists(os.path.join(p, interrupted))
            _fill(db, 2000, b"+")
            db.compact_range()
            assert db.get(b"k000007") == b"v7+"
    for name, data in foreign.items():
        with open(os.path.join(p, name), "rb") as fh:
            assert fh.read() == data, f"{name} was changed or removed"
    with DB.open(p, o) as db:
        assert dict(db.scan()) == {b"k%06d" % i: b"v%d+" % i for i in range(2000)}
        nums = [int(n[:6]) for n in os.listdir(p) if n[:6].isdigit() and n not in foreign]
        assert max(nums) > 900001  # numbers past the foreign files: never written over them


def test_a_store_from_before_the_identity_file_opens_with_its_newest_log(tmp_path):
    """Stores written before this change have no identity file and a manifest whose next_file
    is exactly the next number (the newest log lies at or above it): still opened, log replayed."""
    p = str(tmp_path / "db")
    with DB.open(p, small_options(memtable_bytes=1 << 20)) as db:
        _fill(db, 500)  # in the log only
    mpath = os.path.join(p, "MANIFEST")
    with open(mpath, "rb") as fh:
        st = mf.decode(fh.read(), mpath)
    newest = max(int(n[:6]) for n in os.listdir(p) if n.endswith(".log"))
    st.next_file = newest  # what the old code wrote: the newest log is not below next_file
    with open(mpath, "wb") as fh:
        fh.write(mf.encode(st))
    os.remove(os.path.join(p, IDENTITY))
    with DB.open(p) as db:
        assert dict(db.scan()) == {b"k%06d" % i: b"v%d" % i for i in range(500)}
    assert IDENTITY in os.listdir(p)
    with DB.open(p) as db:
        assert db.get(b"k000499") == b"v499"


@pytest.mark.parametrize("torn", [b"", b"bloomdb-lsm", b"bloomdb-lsm-store 1\n", b"bloomdb-lsm-store 1\n3f2a"])
def test_a_crash_while_writing_the_identity_file_still_opens(tmp_path, torn):
    """The identity file is written atomically (BLOOMDB.tmp, then renamed): a crash before the
    rename leaves a torn BLOOMDB.tmp in an otherwise empty folder, which is still ours."""
    p = tmp_path / "db"
    p.mkdir()
    (p / (IDENTITY + ".tmp")).write_bytes(torn)
    with DB.open(str(p)) as db:
        db.put(b"a", b"1")
    with DB.open(str(p)) as db:
        assert db.get(b"a") == b"1"
    assert (p / IDENTITY).read_bytes().startswith(b"bloomdb-lsm-store 1\n")


def test_a_foreign_file_named_like_the_identity_temporary_is_refused(tmp_path):
    p = tmp_path / "db"
    p.mkdir()
    (p / (IDENTITY + ".tmp")).write_bytes(b"something else entirely")
    _refused_everywhere(str(p))


def test_folders_named_like_the_stores_files_are_refused_cleanly(tmp_path):
    """A folder called MANIFEST or BLOOMDB is nothing of ours: InvalidArgument, not an OSError."""
    p = tmp_path / "manifest"
    (p / "MANIFEST").mkdir(parents=True)
    _refused_everywhere(str(p))
    p = tmp_path / "identity"
    (p / IDENTITY).mkdir(parents=True)
    with pytest.raises(InvalidArgument, match="identity"):
        DB.open(str(p))
