"""A store used as a mapping in rocksdict's forms, against rocksdict (RocksDB) itself:
``db[key]``, ``db[[k1, k2]]``, ``db[key] = value``, ``del db[key]``, ``keys()/values()/items()``
with ``backwards``/``from_key``, ``key_may_exist``, and ``DB(path)`` as ``DB.open(path)``."""

from __future__ import annotations

import random

import pytest

from bloomdb.errors import InvalidArgument, NotFoundError
from bloomdb.lsm import DB, Options

from lsm_helpers import small_options

rocksdict = pytest.importorskip("rocksdict")


@pytest.mark.parametrize("seed", range(4))
def test_mapping_forms_answer_as_rocksdict(tmp_path, seed):
    rng = random.Random(seed)
    db = DB(str(tmp_path / "b"), small_options())
    rd = rocksdict.Rdict(str(tmp_path / "r"))
    try:
        keys = [bytes(rng.choice(b"abc\x00\xff") for _ in range(rng.randint(0, 3))) for _ in range(300)]
        for i, k in enumerate(keys):
            if rng.random() < 0.2:
                del db[k]
                del rd[k]
            else:
                db[k] = rd[k] = b"v%d" % i
            if i == 150:
                db.flush()
        probes = keys[:60] + [b"zz", b"\xff\xff\xff\xff"]
        for k in probes:
            try:
                want = ("ok", rd[k])
            except KeyError:
                want = ("missing", None)
            try:
                got = ("ok", db[k])
            except NotFoundError as e:
                assert isinstance(e, KeyError) and repr(k) in str(e)
                got = ("missing", None)
            assert got == want, k
            assert db.key_may_exist(k) == rd.key_may_exist(k) == (want[0] == "ok")
            assert db.key_may_exist(k, True) == (want[0] == "ok", want[1])
        assert db[probes] == rd[probes]
        for backwards in (False, True):
            for from_key in [None, b"", b"b", b"bb\x00", b"\xff\xff\xff\xff"] + keys[:5]:
                kw = {"backwards": backwards, "from_key": from_key}
                if from_key is None:
                    del kw["from_key"]
                assert list(db.keys(**kw)) == list(rd.keys(**kw)), kw
                assert list(db.values(**kw)) == list(rd.values(**kw)), kw
                assert list(db.items(**kw)) == list(rd.items(**kw)), kw
    finally:
        db.close()
        rd.close()


def test_db_constructor_is_open(tmp_path):
    p = tmp_path / "s"
    with DB(p) as db:  # a PathLike, no options: DB.open's defaults
        db[b"k"] = b"v"
    with DB(str(p), Options(filter="blocked:12")) as db:
        assert db[b"k"] == b"v" and db.options.filter == "blocked:12"
    with DB(str(p), None, True) as db:
        assert db.read_only and db[b"k"] == b"v"
    with pytest.raises(InvalidArgument):
        DB(str(p), {"filter": "blocked:10"})
    with pytest.raises(InvalidArgument):
        DB(str(p), read_only="yes")
    with pytest.raises(InvalidArgument):  # options are checked as open checks them
        DB(str(tmp_path / "new"), Options(block_size=1))
    assert not (tmp_path / "new").exists()


def test_options_by_name_as_plyvel_takes_them(tmp_path):
    p = str(tmp_path / "s")
    with pytest.raises(InvalidArgument):  # create_if_missing=False on a missing store, as LevelDB
        DB(p, create_if_missing=False)
    assert not (tmp_path / "s").exists()
    with DB(p, create_if_missing=True, block_size=8192, filter="blocked:12") as db:
        db[b"k"] = b"v"
        assert db.options.block_size == 8192 and db.options.filter == "blocked:12"
    with DB.open(p, Options(block_size=1024), block_size=2048) as db:  # a name overrides options'
        assert db.options.block_size == 2048 and db[b"k"] == b"v"
    with pytest.raises(InvalidArgument, match="bloom_filter_bits.*create_if_missing"):
        DB(p, bloom_filter_bits=10)
    with pytest.raises(InvalidArgument):  # checked as any option
        DB(p, block_size=-1)
