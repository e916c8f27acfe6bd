"""Kernel arguments without numba's unboxing (:mod:`bloomdb._fastargs`): a ``bytes`` key unboxed as
pointer and length, a directory passed by its address (:func:`bloomdb.lsm.probe.lookup.newest`),
against the same kernels called through numba's own ``bytes`` and array arguments."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from bloomdb._fastargs import address, address_value, key_bytes, key_view
from bloomdb.lsm import DB
from bloomdb.lsm.probe import _get_kernels as G, layout, lookup as L
from bloomdb.lsm.probe.fastcall import direct
from bloomdb.lsm.rangedel import MAX_SEQ

from lsm_helpers import small_options


@njit
def _digest(key):
    kv = key_view(key)
    h = np.uint64(1469598103934665603)
    for i in range(len(kv)):
        h = (h ^ np.uint64(kv[i])) * np.uint64(1099511628211)
    return len(kv), h


def _fnv(b: bytes):
    h = 1469598103934665603
    for c in b:
        h = ((h ^ c) * 1099511628211) & (2**64 - 1)
    return len(b), h


KEYS = [b"", b"\x00", b"a\x00b\x00", bytes(range(256)), b"k" * 4096, b"%016d." % 12345]


def test_a_key_bytes_argument_reads_the_bytes_object_itself():
    entry = direct(_digest, (b"x",), (key_bytes,))
    assert entry is not _digest  # the compiled entry, not the dispatcher
    for k in KEYS:
        assert entry(k) == _fnv(k) == _digest(k)  # the dispatcher's bytes argument: same kernel


@pytest.mark.parametrize("bad", [bytearray(b"abc"), "abc", memoryview(b"abc"), None, 3, np.zeros(3, np.uint8)])
def test_anything_but_bytes_for_a_key_bytes_argument_raises_type_error(bad):
    entry = direct(_digest, (b"x",), (key_bytes,))
    with pytest.raises(TypeError):
        entry(bad)


@njit
def _twice(a):
    return address_value(a) * 2


def test_an_address_argument_is_the_int_itself():
    entry = direct(_twice, (8,), (address,))
    assert entry is not _twice
    for a in (0, 1, 8, 2**30 - 1, 2**30, 2**31 + 8, 2**47 + 16, 2**61):  # one, two and three 30-bit digits
        assert entry(a) == _twice(a) == 2 * a
    for bad in (1.5, "8", None, b"8"):
        with pytest.raises(TypeError):
            entry(bad)
    with pytest.raises(OverflowError):
        entry(2**64)


def test_key_view_in_python_is_a_view_of_the_bytes():
    assert key_view(b"abc").tolist() == [97, 98, 99]


def test_the_directory_records_its_length_through_relayouts(tmp_path):
    """``layout.WORDS`` is the array's length, in every array a version's directory had (the
    kernel taking the address views the array with it); the probe tuples agree."""
    o = small_options(background_compaction=False, filter_file=False)
    with DB.open(tmp_path / "db", o) as db:
        for i in range(3000):
            db.put(b"key%05d" % i, b"v%d" % i)
            if i % 1000 == 999:
                db.flush()
    with DB.open(tmp_path / "db", o) as db:
        ver = db._state[2]
        d, bufs, at, _ = ver.probe()
        assert d is ver.probe()[0] and bufs is ver.probe()[1] and at == d.ctypes.data
        assert d[layout.WORDS] == d.shape[0]
        for i in range(0, 3000, 7):  # first lookups load filters (a load may lay the directory out again)
            assert db.get(b"key%05d" % i) == b"v%d" % i
        d2 = ver.refresh_probe()[0]
        d3, bufs2, at2, _ = ver.probe()
        assert d3 is d2 and at2 == d2.ctypes.data and bufs2 is bufs and d2[layout.WORDS] == d2.shape[0]


def test_lookup_by_address_answers_as_lookup_by_array(tmp_path):
    """:func:`lookup.newest` (address, ``key_bytes``) against :func:`_get_kernels.lookup` (array,
    ``bytes``) on every key of a store with overwrites and deletions, and missing keys."""
    o = small_options(background_compaction=False, filter_file=False)
    model = {}
    with DB.open(tmp_path / "db", o) as db:
        for step, (every, tag) in enumerate([(1, b"a"), (3, b"b"), (5, None), (7, b"c")]):  # a table per pass
            for i in range(0, 2500, every):
                k = b"k%05d" % i
                db.put(k, tag + k) if tag else db.delete(k)
                model[k] = tag + k if tag else None
            db.flush()
        model = {k: v for k, v in model.items() if v is not None}
        probes = [b"k%05d" % i for i in range(2500)] + [b"k%05d." % i for i in range(300)]
        assert [db.get(k) for k in probes] == [model.get(k) for k in probes]  # filters loaded, blocks checked
        ver = db._state[2]
        d, bufs, at, _ = ver.probe()
        def plain(r):  # the answer without the seek flag (a lookup may use up a seek budget)
            if type(r) is bytes:  # lookup_newest boxes a value as its bytes
                return r
            return None if r is None or r[0] & ~G.SEEK in (G.MISSING, G.DELETED) else (r[0] & ~G.SEEK,) + r[1:]

        for k in probes:
            r = plain(L.newest(at, k))
            st, s, a, n = plain(G.lookup(d, k, MAX_SEQ, 0)) or (G.MISSING, -1, 0, 0)
            if st == G.VALUE:
                assert bufs[s][a : a + n] == model[k]
                assert r == model[k] or r == (st, s, a, n)  # the value, or the tuple when a seek flag came back
            else:
                assert r == (None if st == G.MISSING else (st, s, a, n))
            assert plain(G.lookup_newest(at, k)) == r  # the dispatcher with a bytes key: the same kernel
