"""The plain get's ``METH_O`` builtin (:mod:`bloomdb.lsm.probe.find`, the ``cfunc``
:func:`bloomdb.lsm.probe._find_kernels.find`): the same answers as ``lookup_newest`` through
numba's dispatcher, new references and nothing kept, ``TypeError`` for a key that is not bytes,
a numba exception inside turned into the Python error, gets on threads beside a writer."""

from __future__ import annotations

import random
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

from bloomdb.lsm import DB
from bloomdb.lsm.probe import _get_kernels as G, find as F, layout

from lsm_helpers import small_options


def _fill(db):
    """Passes of puts and deletes over every n-th key, a table per pass (tables at several
    levels): the model and the keys whose last write was a delete."""
    model, deleted = {}, set()
    for every, tag in [(1, b"a"), (3, b"bb"), (5, None), (7, b"c" * 40), (11, None), (13, b"d")]:
        for i in range(0, 3000, every):
            k = b"k%06d" % i
            if tag is None:
                db.delete(k)
                model.pop(k, None)
                deleted.add(k)
            else:
                model[k] = tag + k
                deleted.discard(k)
                db.put(k, tag + k)
        db.flush()
    return model, deleted


def test_find_answers_as_the_dispatcher_on_a_twin_directory(tmp_path):
    """``find`` on one copy of a version's directory and ``lookup_newest`` through numba's
    dispatcher (``int`` and ``bytes`` arguments) on another, key by key: the same answers
    (values, ``None`` for missing and deleted keys, the 4-tuples of slots handed over, seek flags
    included) and the same directory words (counters, seek budgets, filters loaded) after."""
    o = small_options(background_compaction=False)
    with DB.open(tmp_path / "db", o) as db:
        model, deleted = _fill(db)
    assert F.fallback is None
    probes = [b"k%06d" % i for i in range(3000)] + [b"k%06d." % i for i in range(500)] + [b"", b"zz"]
    assert deleted & set(probes)  # deleted keys among them (answered None)
    with DB.open(tmp_path / "db", o) as db:
        ver = db._state[2]
        d = ver.probe()[0]
        for s in range(0, len(ver.slots), 3):  # these tables' filters are left to Python (ASK)
            d[layout.SLOTS + layout.STRIDE * s + layout.S_TFW] = 0
        kinds = set()
        for phase in ("cold", "warm"):  # cold: tables not opened, filters not read (READ, ASK)
            if phase == "warm":
                assert [db.get(k) for k in probes] == [model.get(k) for k in probes]  # opens, reads, checks
            d = ver.refresh_probe()[0]
            kinds |= _twins(d, len(ver.slots), probes, model)
        assert {"bytes", "NoneType", G.ASK, G.READ} <= kinds
        assert [db.get(k) for k in probes] == [model.get(k) for k in probes]


def _twins(d, nslots, probes, model) -> set:
    """Two copies of directory ``d``, each with its own seek budgets (a table's budget is shared
    by address): ``find`` on one and the dispatcher on the other answer alike, key by key, and
    leave the same words; the kinds of answers met."""
    a, b = d.copy(), d.copy()
    budgets = []
    same = np.ones(len(d), bool)  # the words compared after: all but the budgets' addresses
    for s in range(nslots):
        w = layout.SLOTS + layout.STRIDE * s + layout.S_SEEKS
        same[w] = False
        if d[w]:
            for twin in (a, b):
                budgets.append(np.array([3 + s % 4], np.int64))  # small: some run out
                twin[w] = budgets[-1].ctypes.data
    find = F.finder(a.ctypes.data)
    kinds = set()
    for rounds in range(2):
        for k in probes:
            r = find(k)
            assert r == G.lookup_newest(b.ctypes.data, k), k
            kinds.add(type(r).__name__ if not isinstance(r, tuple) else r[0] & ~G.SEEK)
            if isinstance(r, bytes):
                assert r == model[k]
            elif r is None:
                assert k not in model
            if rounds:  # Python clears the flag (take_due): the next answers come without it
                a[layout.SEEK_DUE] = b[layout.SEEK_DUE] = 0
        assert np.array_equal(a[same], b[same])
    assert [int(x[0]) for x in budgets[::2]] == [int(x[0]) for x in budgets[1::2]]
    assert min(int(x[0]) for x in budgets) <= 0  # budgets ran out: seek flags compared too
    return kinds


def _warm_store(path):
    o = small_options(background_compaction=False)
    db = DB.open(path, o)
    for i in range(3000):
        db.put(b"k%06d" % i, b"value-%d" % i)
    db.flush()
    assert all(db.get(b"k%06d" % i) == b"value-%d" % i for i in range(3000))
    return db


def test_find_returns_new_references_and_keeps_nothing(tmp_path):
    """Values, ``None`` and handed-over tuples are new references the caller owns: refcounts of
    the answers and of ``None`` do not move, traced memory stays flat over 100K calls each."""
    db = _warm_store(tmp_path / "db")
    try:
        p = db._state[2].probe()
        d, find = p[0], p[3]
        v = find(b"k000007")
        assert v == b"value-7" and sys.getrefcount(v) == 2
        assert find(b"k000007.") is None
        d[layout.SEEK_DUE] = 1  # every answer then carries the seek flag: the 4-tuple, for Python
        t = find(b"k000007")
        assert isinstance(t, tuple) and t[0] == G.VALUE | G.SEEK and sys.getrefcount(t) == 2
        assert find(b"k000007.") == (G.MISSING | G.SEEK, -1, 0, 0)
        for due in (1, 0):
            d[layout.SEEK_DUE] = due
            n0 = sys.getrefcount(None)
            tracemalloc.start()
            try:
                m0 = tracemalloc.get_traced_memory()[0]
                for i in range(100_000):
                    find(b"k000123")
                    find(b"k000123.")
                grown = tracemalloc.get_traced_memory()[0] - m0
            finally:
                tracemalloc.stop()
            assert grown < 64 << 10, grown  # a leaked answer per call would be megabytes
            assert abs(sys.getrefcount(None) - n0) < 100  # a leaked None per call: 100K
    finally:
        db.close()


def test_find_refuses_what_is_not_bytes(tmp_path):
    db = _warm_store(tmp_path / "db")
    try:
        find = db._state[2].probe()[3]
        for bad in ("k000001", 7, None, bytearray(b"k000001"), memoryview(b"k000001")):
            with pytest.raises(TypeError):
                find(bad)
        with pytest.raises(TypeError):
            find()
        with pytest.raises(TypeError):
            find(b"k000001", b"k000002")

        class Key(bytes):
            pass

        assert find(Key(b"k000001")) == find(b"k000001") == b"value-1"
        assert db.get("k000001") == b"value-1"  # DB.get turns a str key into bytes first
    finally:
        db.close()


def _boom(x, y, z):
    if x < 0:
        raise ValueError("boom")
    return x, y, z, 0, 0


def test_a_numba_exception_under_guarded_becomes_the_python_error():
    """:func:`._find_kernels.guarded` sets a numba exception of the function it calls as the
    Python error (the builtin raises it) instead of leaving it to the ``cfunc``'s wrapper."""
    from numba import cfunc, types

    from bloomdb.lsm.probe import _find_kernels as K

    call = K.guarded(_boom, types.UniTuple(types.int64, 5))

    @cfunc(types.voidptr(types.voidptr, types.voidptr))
    def f(self, arg):
        x = K._address_of(arg)
        if x == -1 and K._error_set():
            return K._null()
        ok, a, b, c, d, e = call(x, 1, 2)
        if not ok:
            return K._null()
        return K._answer_object(G.ASK, a, b, c, e)

    g = F.bind(F.method_def(f.address, b"boom"), None)
    assert g(5) == (G.ASK, 5, 1, 2)
    with pytest.raises(ValueError, match="boom"):
        g(-5)
    with pytest.raises(TypeError):
        g("5")
    assert g(6) == (G.ASK, 6, 1, 2)


def test_gets_on_threads_beside_a_writer(tmp_path):
    """Readers on two threads get every key written before they began (and nothing for missing
    keys) while a writer puts, flushes and compacts: every version's ``find`` is used."""
    o = small_options()
    with DB.open(tmp_path / "db", o) as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v%d" % i)
        db.flush()
        stop = threading.Event()
        errors = []

        def reader(seed):
            rng = random.Random(seed)
            try:
                while not stop.is_set():
                    i = rng.randrange(2000)
                    assert db.get(b"k%05d" % i) == b"v%d" % i
                    assert db.get(b"k%05d." % i) is None
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        def writer():
            try:
                for j in range(6000):
                    db.put(b"w%05d" % (j % 1500), b"x%d" % j)
                    if j % 1000 == 999:
                        db.flush()
            finally:
                stop.set()

        w = threading.Thread(target=writer)
        r = threading.Thread(target=reader, args=(1,))
        w.start(), r.start()
        reader(2)  # this thread reads too, until the writer is done
        w.join(), r.join()
        assert not errors, errors[0]
        assert db.get(b"w00000") == b"x4500"


def test_the_store_get_is_the_builtin_and_answers_as_db_get(tmp_path):
    """``db.get`` is the builtin over the gate (:mod:`bloomdb.lsm.quickget`) and answers exactly
    as ``DB.get`` on a twin store, cold (hand-overs finished in Python) and warm, with the same
    read statistics; memtable hits, defaults, snapshots, ``str`` keys and bad calls too."""
    from bloomdb.lsm import quickget

    o = small_options(background_compaction=False)
    with DB.open(tmp_path / "a", o) as db:
        model, deleted = _fill(db)
    import shutil

    shutil.copytree(tmp_path / "a", tmp_path / "b")
    probes = [b"k%06d" % i for i in range(3000)] + [b"k%06d." % i for i in range(300)]
    with DB.open(tmp_path / "a", o) as a, DB.open(tmp_path / "b", o) as b:
        assert quickget._broken is None and type(a.get).__name__ == "builtin_function_or_method"
        for rounds in range(2):
            got = [a.get(k, b"-") for k in probes]
            assert got == [DB.get(b, k, b"-") for k in probes]
            assert got == [model.get(k, b"-") for k in probes]
        def counts(db):
            s = db.stats()
            return [s[k] for k in ("table_lookups", "data_blocks_read", "filter_checks", "filter_positive", "true_positive")]

        ver = a._state[2]
        d = ver.refresh_probe()[0]
        for s in range(len(ver.slots)):  # no seek charges: a budget running out adds lookups
            d[layout.SLOTS + layout.STRIDE * s + layout.S_SEEKS] = 0
        d[layout.SEEK_DUE] = 0
        c0 = counts(a)  # warm now: a pass through the builtin counts as a pass through DB.get
        [a.get(k) for k in probes]
        c1 = counts(a)
        [DB.get(a, k) for k in probes]
        c2 = counts(a)
        assert [y - x for x, y in zip(c0, c1)] == [y - x for x, y in zip(c1, c2)] and c1[0] > c0[0]
        a.put(b"k000001", b"mem")
        a.delete(b"k000002")
        assert a.get(b"k000001") == b"mem" and a.get(b"k000002") is None and a.get(b"k000002", 3) == 3
        snap = a.snapshot()
        a.put(b"k000001", b"mem2")
        assert a.get(b"k000001") == b"mem2" and snap.get(b"k000001") == b"mem"
        assert a.get(b"k000001", snapshot=snap) == b"mem" and a.get(key=b"k000001") == b"mem2"
        snap.close()
        assert a.get("k000001") == b"mem2"
        v = a.get(b"k000001")  # the memtable's own value
        n = sys.getrefcount(v)
        del v
        v = DB.get(a, b"k000001")
        assert sys.getrefcount(v) == n
        v = a.get(b"k000004")  # a table's value: a new bytes object
        assert v == model[b"k000004"] and sys.getrefcount(v) == 2
        n0 = sys.getrefcount(None)
        for _ in range(50_000):
            a.get(b"k000002")
            a.get(b"k000005.")
            a.get(b"k000005")
        assert abs(sys.getrefcount(None) - n0) < 100
        for bad in (7, None, 1.5):
            with pytest.raises(TypeError):
                a.get(bad)
        with pytest.raises(TypeError):
            a.get()
        with pytest.raises(TypeError):
            a.get(b"k", None, None, None)


def test_a_store_whose_class_overrides_get_keeps_its_own(tmp_path):
    class Mine(DB):
        def get(self, key, default=None, snapshot=None):
            return b"mine"

    with Mine.open(tmp_path / "db", small_options()) as db:
        db.put(b"a", b"b")
        assert db.get(b"a") == b"mine"


def test_the_builtin_get_of_a_dropped_store_raises(tmp_path):
    import gc

    from bloomdb.errors import StoreClosed

    db = DB.open(tmp_path / "db", small_options())
    db.put(b"a", b"b")
    get = db.get
    assert get(b"a") == b"b"
    db.close()
    gone = weakref.ref(db)
    del db
    gc.collect()
    assert gone() is None  # the builtin holds the store weakly
    with pytest.raises(StoreClosed):
        get(b"a")
