"""``DB.multi_get``'s key batch (:mod:`bloomdb.lsm.keylist`): the keys joined in one pass when they
are all ``bytes``, converted one by one otherwise; answers the same either way."""

from __future__ import annotations

import numpy as np
import pytest

from bloomdb.errors import KeyTypeError
from bloomdb.lsm import DB
from bloomdb.lsm.keylist import key_list

from lsm_helpers import small_options


def test_key_list_joins_bytes_and_converts_the_rest():
    assert key_list([b"a", b"bc", b""]) == ([b"a", b"bc", b""], b"abc")
    assert key_list(iter([b"x"])) == ([b"x"], b"x")
    assert key_list([]) == ([], b"")
    # bytes-like but not bytes: joined fine by bytes.join, still converted (and not joined)
    for odd in (bytearray(b"b"), memoryview(b"b"), np.bytes_(b"b")):
        keys, joined = key_list([b"a", odd])
        assert keys == [b"a", b"b"] and all(type(k) is bytes for k in keys) and joined is None
    assert key_list(["é", b"z"]) == (["é".encode(), b"z"], None)
    with pytest.raises(KeyTypeError):
        key_list([b"a", 7])


def test_multi_get_answers_alike_for_every_key_form(tmp_path):
    with DB.open(tmp_path / "db", small_options(background_compaction=False)) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"v%d" % i)
        db.flush()
        for i in range(0, 3000, 7):  # some keys in the memtable: only the rest go to the tables
            db.put(b"k%05d" % i, b"w%d" % i)
        db.delete(b"k00003")
        want = [None if i == 3 else (b"w%d" % i if i % 7 == 0 else b"v%d" % i) if i < 3000 else None
                for i in range(0, 3100, 3)]
        keys = [b"k%05d" % i for i in range(0, 3100, 3)]
        assert db.multi_get(keys) == want
        assert db.multi_get([k.decode() for k in keys]) == want
        assert db.multi_get([bytearray(k) for k in keys]) == want
        with pytest.raises(KeyTypeError):
            db.multi_get(keys + [None])
