"""plyvel's API beyond get/put/iterator, against LevelDB itself (plyvel) as the oracle:
``raw_iterator``, ``prefixed_db`` (its get/put/delete/write_batch/iterator/snapshot), snapshots'
``release``/``raw_iterator`` and what a released snapshot does, ``WriteBatch.append`` /
``approximate_size``, ``approximate_sizes``, ``closed``, ``name``. The same random operations
go to both stores (some flushed into tables, some left in the memtable)."""

from __future__ import annotations

import itertools
import random

import pytest

from bloomdb.errors import InvalidArgument, IteratorInvalidError, KeyTypeError, StoreClosed
from bloomdb.lsm import DB, WriteBatch
from bloomdb.lsm import wal

from lsm_helpers import small_options

plyvel = pytest.importorskip("plyvel")

ALPHABET = b"ab\x00\xff"


def _key(rng: random.Random) -> bytes:
    return bytes(rng.choice(ALPHABET) for _ in range(rng.randint(0, 4)))


@pytest.fixture
def pair(tmp_path):
    """``(bloomdb store, LevelDB store)``, both empty; closed at the end."""
    db = DB.open(str(tmp_path / "b"), small_options())
    ldb = plyvel.DB(str(tmp_path / "l"), create_if_missing=True)
    yield db, ldb
    db.close()
    ldb.close()


def _fill(db, ldb, rng: random.Random, n: int) -> None:
    """``n`` random puts and deletes into both stores, a flush in the middle (tables and a memtable)."""
    for i in range(n):
        k = _key(rng)
        if rng.random() < 0.25:
            db.delete(k)
            ldb.delete(k)
        else:
            v = b"v%d" % i
            db.put(k, v)
            ldb.put(k, v)
        if i == n // 2:
            db.flush()


def _call(obj, op: str, arg):
    """``obj.op(arg)`` as ``("ok", result)`` or ``("raises", kind)`` (both libraries' invalid-
    iterator errors are one kind)."""
    try:
        return "ok", getattr(obj, op)(*(() if arg is None else (arg,)))
    except (IteratorInvalidError, plyvel.IteratorInvalidError):
        return "raises", "invalid"


RAW_OPS = ("seek_to_first", "seek_to_last", "seek", "next", "prev", "key", "value", "item", "valid")


@pytest.mark.parametrize("seed", range(8))
def test_raw_iterator_walks_like_leveldb(pair, seed):
    db, ldb = pair
    rng = random.Random(seed)
    _fill(db, ldb, rng, rng.choice([0, 1, 5, 60, 400]))
    snap, lsnap = db.snapshot(), ldb.snapshot()
    _fill(db, ldb, rng, 30)  # writes after the snapshot: its raw iterator does not see them
    for mine, theirs in ((db.raw_iterator(), ldb.raw_iterator()),
                         (snap.raw_iterator(), lsnap.raw_iterator()),
                         (db.raw_iterator(snapshot=snap), lsnap.raw_iterator())):  # plyvel: no snapshot= here
        with mine:
            for step in range(300):
                op = rng.choice(RAW_OPS)
                arg = _key(rng) if op == "seek" else None
                assert _call(mine, op, arg) == _call(theirs, op, arg), (seed, step, op, arg)
        theirs.close()
        with pytest.raises(RuntimeError):  # closed: plyvel raises RuntimeError, bloomdb StoreClosed (one)
            mine.valid()
        with pytest.raises(StoreClosed):
            mine.seek_to_first()


def test_a_new_raw_iterator_is_invalid_and_the_store_close_closes_it(pair):
    db, _ = pair
    db.put(b"a", b"1")
    it = db.raw_iterator()
    assert not it.valid()
    with pytest.raises(IteratorInvalidError):
        it.key()
    it.seek_to_first()
    assert it.item() == (b"a", b"1") and it.next() is None and not it.valid()
    db.close()
    with pytest.raises(StoreClosed):
        it.valid()


PREFIXES = (b"", b"a", b"ab", b"\xff", b"a\xff", b"\x00")


def _iterator_forms(rng: random.Random):
    """Random keyword sets of plyvel's iterator."""
    for _ in range(40):
        kw = {}
        if rng.random() < 0.2:
            kw["prefix"] = _key(rng)[:2]
        else:
            if rng.random() < 0.6:
                kw["start"] = _key(rng)
                kw["include_start"] = rng.random() < 0.5
            if rng.random() < 0.6:
                kw["stop"] = _key(rng)
                kw["include_stop"] = rng.random() < 0.5
        kw["include_key"] = rng.random() < 0.85
        kw["include_value"] = rng.random() < 0.85
        yield kw


def _model_items(model: dict, p: bytes, kw: dict, reverse: bool) -> list:
    """What a view's iterator yields, from a dict of the store."""
    keys = sorted(k[len(p):] for k in model if k.startswith(p))
    if "prefix" in kw:
        keys = [k for k in keys if k.startswith(kw["prefix"])]
    if "start" in kw:
        keys = [k for k in keys if k > kw["start"] or (kw["include_start"] and k == kw["start"])]
    if "stop" in kw:
        keys = [k for k in keys if k < kw["stop"] or (kw["include_stop"] and k == kw["stop"])]
    if reverse:
        keys.reverse()
    ik, iv = kw["include_key"], kw["include_value"]
    return [(k, model[p + k]) if ik and iv else k if ik else model[p + k] if iv else None for k in keys]


@pytest.mark.parametrize("seed", range(4))
def test_prefixed_views_read_like_leveldbs(pair, seed):
    """Gets and every iterator form of views at several prefixes (nested views too), now and
    at a snapshot: equal to LevelDB's forward answers and to a dict model in both directions
    (plyvel's reverse iterators have range defects, see :mod:`bloomdb.lsm.iterator`)."""
    db, ldb = pair
    rng = random.Random(100 + seed)
    _fill(db, ldb, rng, 300)
    model = dict(ldb.iterator())
    assert dict(db.scan()) == model
    snap, lsnap = db.snapshot(), ldb.snapshot()
    snap_model = dict(model)
    _fill(db, ldb, rng, 40)
    model = dict(ldb.iterator())
    for p in PREFIXES:
        views = [(db.prefixed_db(p), ldb.prefixed_db(p))]
        if p:  # the same view, made in two steps
            views.append((db.prefixed_db(p[:1]).prefixed_db(p[1:]), ldb.prefixed_db(p[:1]).prefixed_db(p[1:])))
        for view, lview in views:
            assert view.prefix == lview.prefix == p and view.db is db
            for k in (_key(rng) for _ in range(30)):
                assert view.get(k) == lview.get(k) == model.get(p + k)
                assert (k in view) == (p + k in model)
            sview, lsview = view.snapshot(), lview.snapshot()
            for kw in _iterator_forms(rng):
                for reverse in (False, True):
                    want = _model_items(model, p, kw, reverse)
                    assert list(view.iterator(reverse=reverse, **kw)) == want, (p, kw, reverse)
                    assert list(view.iterator(reverse=reverse, snapshot=snap, **kw)) == _model_items(
                        snap_model, p, kw, reverse), (p, kw, reverse)
                    assert list(sview.iterator(reverse=reverse, **kw)) == list(view.iterator(reverse=reverse, **kw))
                    if not reverse:
                        assert list(lview.iterator(**kw)) == want, (p, kw)  # the model is LevelDB's
            sview.release()
            lsview.close()
            assert list(view) == list(lview)
    snap.close()
    lsnap.close()


def test_prefixed_writes_and_batches_are_leveldbs(pair):
    db, ldb = pair
    for store in pair:
        v = store.prefixed_db(b"user:")
        v.put(b"1", b"ann")
        v.put(b"2", b"bob")
        v.delete(b"1")
        with v.write_batch() as wb:
            wb.put(b"3", b"cid")
            wb.delete(b"2")
        with pytest.raises(ZeroDivisionError):  # a transaction left by an exception writes nothing
            with v.write_batch(transaction=True) as wb:
                wb.put(b"4", b"dee")
                1 / 0
        v.prefixed_db(b"x").put(b"y", b"z")
        store.put(b"user;", b"next prefix")  # just past the view
    assert list(db.iterator()) == list(ldb.iterator())
    assert list(db.prefixed_db(b"user:")) == list(ldb.prefixed_db(b"user:")) == [(b"3", b"cid"), (b"xy", b"z")]
    v = db.prefixed_db(b"user:")
    assert v.multi_get([b"3", b"2", "xy"]) == [b"cid", None, b"z"]
    with pytest.raises(KeyTypeError):
        v.multi_get(b"3")
    with v.write_batch() as wb:
        wb.put_many([(b"5", b"e"), ("6", b"f")])
        wb.delete_range(b"5", b"6")
    v.delete_range(b"x", b"y")
    assert list(v) == [(b"3", b"cid"), (b"6", b"f")]
    with pytest.raises(KeyTypeError):
        v.write_batch().put_many([(b"7",)])
    it = v.iterator()
    it.seek(b"4")
    assert next(it) == (b"6", b"f") and it.prev() == (b"6", b"f") and it.prev() == (b"3", b"cid")
    it.close()
    assert it.closed


def test_a_released_snapshot_refuses_every_read(pair):
    """A released snapshot's versions may be compacted away: reading through it must raise
    (plyvel raises RuntimeError), never answer from newer data."""
    db, ldb = pair
    db.put(b"k", b"old")
    s = db.snapshot()
    db.put(b"k", b"new")
    db.delete(b"k")
    assert s.get(b"k") == b"old"
    s.release()
    db.compact_range()
    reads = [lambda: s.get(b"k"), lambda: db.get(b"k", snapshot=s), lambda: db.multi_get([b"k"], snapshot=s),
             lambda: list(s.iterator()), lambda: db.iterator(snapshot=s), lambda: s.raw_iterator(),
             lambda: list(db.scan(snapshot=s))]
    for read in reads:
        with pytest.raises(StoreClosed):
            read()
        with pytest.raises(RuntimeError):  # what code written for plyvel catches
            read()
    ls = ldb.snapshot()
    ls.release()
    with pytest.raises(RuntimeError):
        ls.get(b"k")


def test_a_snapshot_of_another_store_is_refused(pair, tmp_path):
    db, _ = pair
    with DB.open(str(tmp_path / "other")) as other:
        s = other.snapshot()
        with pytest.raises(InvalidArgument):
            db.get(b"k", snapshot=s)
        with pytest.raises(InvalidArgument):
            db.iterator(snapshot=s)


def test_write_batch_append_and_approximate_size(pair):
    db, ldb = pair
    for store in pair:
        a, b = store.write_batch(), store.write_batch()
        a.put(b"x", b"1")
        b.put(b"y", b"2")
        b.delete(b"x")
        a.append(b)
        a.put(b"z", b"3")
        a.write()
    assert list(db.iterator()) == list(ldb.iterator()) == [(b"y", b"2"), (b"z", b"3")]
    wb = WriteBatch()
    sizes = [wb.approximate_size()]
    for i in range(3):
        wb.put(b"k%d" % i, b"v" * 10)
        sizes.append(wb.approximate_size())
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    assert wb.approximate_size() == len(wal.encode_batch(0, wb.ops))
    with pytest.raises(InvalidArgument):
        wb.append([(b"k", b"v")])


def test_approximate_sizes_closed_and_name(pair, tmp_path):
    db, ldb = pair
    for i in range(2000):
        db.put(b"%06d" % i, b"v" * 100)
    db.flush()
    ranges = [(b"000000", b"001000"), (b"001000", b"999999"), (b"a", b"b")]
    assert db.approximate_sizes(*ranges) == [db.approximate_size(a, b) for a, b in ranges]
    assert db.approximate_sizes(*ranges)[0] > 0 and db.approximate_sizes(*ranges)[2] == 0
    assert db.name == str(tmp_path / "b") and not db.closed
    db.close()
    assert db.closed


def test_raw_iterator_steps_cost_no_rereads_inside_the_window(pair, monkeypatch):
    """``prev`` is three cursor steps: inside the iterator's window none reads the tables again
    (counted: the merge rounds the cursor asks for)."""
    from bloomdb.lsm.iterator import Iterator

    db, _ = pair
    for i in range(3000):
        db.put(b"%06d" % i, b"v")
    db.flush()
    rounds = []
    real = Iterator._round
    monkeypatch.setattr(Iterator, "_round", lambda self, forward: rounds.append(forward) or real(self, forward))
    it = db.raw_iterator()
    it.seek(b"001500")
    keys = []
    for _ in range(200):
        keys.append(it.key())
        it.prev()
    assert keys == [b"%06d" % i for i in range(1500, 1300, -1)]
    before = len(rounds)  # the window now holds 1300..1500: walking inside it reads nothing
    for _ in range(3):
        for _ in range(150):
            it.next()
        for _ in range(150):
            it.prev()
    assert len(rounds) == before and it.key() == b"001300"
    assert list(itertools.islice(iter(lambda: (it.next(), it.key())[1], None), 3)) == [b"001301", b"001302", b"001303"]
