"""``DB.iterator`` against LevelDB (plyvel) and a sorted-list cursor model.

The same random puts, deletes, range deletes, batches, snapshots and reopens go to bloomdb (tiny memtables and
tables, so entries are spread over the memtable and several levels) and to LevelDB (which has
no range delete: there it is a batch deleting the keys the model holds in the range). Then every
iterator form (bounds, inclusive flags, prefix, reverse, keys/values only, at a snapshot) is
driven through a random walk of ``next``/``prev``/``seek``/``seek_to_start``/``seek_to_stop``.
bloomdb must match the model at every step; plyvel must match it too, except at the three steps
where plyvel 1.5.1 leaves its own range (documented in :mod:`bloomdb.lsm.iterator`): there the
plyvel cursor is re-synchronised and the walk goes on.
"""

from __future__ import annotations

import random
from bisect import bisect_left

import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.lsm import DB, iterator as lsm_iterator
from bloomdb.lsm.prefix import CappedPrefix, FixedPrefix

from lsm_helpers import small_options

plyvel = pytest.importorskip("plyvel")

_STOP = "StopIteration"


def _random_key(rng: random.Random) -> bytes:
    """Short keys over a tiny alphabet: shared prefixes, 0x00 and 0xff edges, many collisions."""
    return b"".join(rng.choice((b"\x00", b"a", b"b", b"\xff")) for _ in range(rng.randint(1, 4)))


class Cursor:
    """The intended semantics: a cursor between the entries of the in-range items."""

    def __init__(self, model: dict, lo, hi, reverse: bool, ik: bool, iv: bool):
        self.items = sorted((k, v) for k, v in model.items() if (lo is None or k >= lo) and (hi is None or k < hi))
        self.keys = [k for k, _ in self.items]
        self.reverse, self.ik, self.iv = reverse, ik, iv
        self.pos = len(self.items) if reverse else 0

    def out(self, i):
        k, v = self.items[i]
        return (k, v) if self.ik and self.iv else k if self.ik else v if self.iv else None

    def step(self, forward: bool):
        if forward:
            if self.pos == len(self.items):
                return _STOP
            self.pos += 1
            return self.out(self.pos - 1)
        if self.pos == 0:
            return _STOP
        self.pos -= 1
        return self.out(self.pos)

    def do(self, op, arg=None):
        if op == "next":
            return self.step(not self.reverse)
        if op == "prev":
            return self.step(self.reverse)
        self.pos = {"seek": lambda: bisect_left(self.keys, arg), "seek_to_start": lambda: 0,
                    "seek_to_stop": lambda: len(self.items)}[op]()
        return None


def _apply(it, op, arg=None):
    try:
        if op == "next":
            return next(it)
        if op == "prev":
            return it.prev()
        if op == "seek":
            return it.seek(arg)
        return getattr(it, op)()
    except StopIteration:
        return _STOP


def _key_of(out, model: Cursor):
    return out[0] if model.ik and model.iv else out if model.ik else None


def _plyvel_defect(model: Cursor, op: str, got, want, seeked, form: dict) -> bool:
    """Whether plyvel's differing answer is one of its known range defects (``seeked``: the
    previous step was ``seek(seeked)``)."""
    backward = (op == "prev") != model.reverse
    lo = form.get("start") if form.get("prefix") is None else form["prefix"]
    stop = form.get("stop")
    if not model.ik:
        return seeked is not None or (backward and got == _STOP)  # cannot see keys; the defects' shapes
    if backward and got == _STOP and want != _STOP and _key_of(want, model) == lo:
        return True  # reverse step from the end refuses the entry equal to `start`
    if seeked is None:
        return False
    if stop is not None and form.get("include_stop") and seeked > stop:
        # a seek beyond an inclusive `stop` lands before `stop`, not after it
        if (got != _STOP and _key_of(got, model) == stop) or (want != _STOP and _key_of(want, model) == stop):
            return True
    if got != _STOP and lo is not None:  # a seek below `start`, then a step leaves the range
        k = _key_of(got, model)
        return k < lo or (k == lo and not form.get("include_start", True))
    return False


def _resync(pit, model: Cursor) -> None:
    if model.pos == 0:
        pit.seek_to_start()
    elif model.pos == len(model.items):
        pit.seek_to_stop()
    else:
        pit.seek(model.keys[model.pos])


def _random_form(rng: random.Random) -> dict:
    form: dict = {}
    if rng.random() < 0.25:
        form["prefix"] = _random_key(rng)[: rng.randint(1, 2)]
    else:
        if rng.random() < 0.6:
            form["start"] = _random_key(rng)
        if rng.random() < 0.6:
            form["stop"] = _random_key(rng)
        form["include_start"] = rng.random() < 0.5
        form["include_stop"] = rng.random() < 0.5
    form["reverse"] = rng.random() < 0.4
    r = rng.random()
    if r < 0.2:
        form["include_value"] = False
    elif r < 0.3:
        form["include_key"] = False
    return form


def _bounds(form: dict):
    if form.get("prefix") is not None:
        return lsm_iterator.half_open(None, None, True, False, form["prefix"])
    return lsm_iterator.half_open(form.get("start"), form.get("stop"), form.get("include_start", True),
                                  form.get("include_stop", False), None)


def _walk(rng, ours, theirs, model: Cursor, form: dict, steps: int) -> None:
    seeked = None
    for n in range(steps):
        op = rng.choice(("next", "next", "prev", "seek", "seek_to_start", "seek_to_stop"))
        arg = _random_key(rng) if op == "seek" else None
        want = model.do(op, arg)
        got = _apply(ours, op, arg)
        assert got == want, (form, n, op, arg)
        theirs_got = _apply(theirs, op, arg)
        if theirs_got != want:
            assert _plyvel_defect(model, op, theirs_got, want, seeked, form), (form, n, op, arg, theirs_got, want)
            _resync(theirs, model)
        seeked = arg if op == "seek" else None


def _check_iterators(rng, db, ldb, model: dict, snaps, count: int, steps: int) -> None:
    for _ in range(count):
        form = _random_form(rng)
        lo, hi = _bounds(form)
        view, src, psrc = model, db, ldb
        if snaps and rng.random() < 0.3:
            ours_s, theirs_s, frozen = rng.choice(snaps)
            view, src, psrc = frozen, ours_s, theirs_s
        cur = Cursor(view, lo, hi, form.get("reverse", False), form.get("include_key", True),
                     form.get("include_value", True))
        with src.iterator(**form) as ours:
            theirs = psrc.iterator(**form)
            if rng.random() < 0.3:  # the whole iteration in one go, both ways
                want = [cur.out(i) for i in range(len(cur.items))]
                want = want[::-1] if cur.reverse else want
                assert list(ours) == want, form
                continue
            _walk(rng, ours, theirs, cur, form, steps)


def _delete_range(lb, model: dict, a: bytes, b: bytes) -> None:
    """LevelDB's stand-in for a range delete: delete (in batch ``lb``) the model's keys in ``[a, b)``."""
    for k in [k for k in model if a <= k < b]:
        lb.delete(k)
        del model[k]


def _differential(path, seed: int, rounds: int, ops: int, iterators: int, steps: int, **opt) -> None:
    rng = random.Random(seed)
    opts = small_options(background_compaction=False, **opt)
    db = DB.open(str(path / "ours"), opts)
    ldb = plyvel.DB(str(path / "leveldb"), create_if_missing=True)
    model: dict[bytes, bytes] = {}
    snaps: list = []
    try:
        for rnd in range(rounds):
            for i in range(ops):
                r = rng.random()
                k = _random_key(rng)
                if r < 0.55:
                    v = b"v%d.%d" % (rnd, i) * rng.randint(1, 20)
                    db.put(k, v)
                    ldb.put(k, v)
                    model[k] = v
                elif r < 0.72:
                    db.delete(k)
                    ldb.delete(k)
                    model.pop(k, None)
                elif r < 0.77:
                    a, b = sorted((k, _random_key(rng)))
                    db.delete_range(a, b)
                    with ldb.write_batch() as lb:
                        _delete_range(lb, model, a, b)
                else:
                    batch = []
                    for j in range(rng.randint(1, 6)):  # unique values: a values-only walk tells them apart
                        k = _random_key(rng)
                        x = rng.random()
                        batch.append((k, None if x < 0.25 else sorted((k, _random_key(rng))) if x < 0.35 else b"b%d.%d.%d" % (rnd, i, j)))
                    from bloomdb.lsm import WriteBatch

                    wb = WriteBatch()
                    with ldb.write_batch() as lb:
                        for k, v in batch:
                            if type(v) is list:
                                wb.delete_range(*v)
                                _delete_range(lb, model, *v)
                            elif v is None:
                                wb.delete(k)
                                lb.delete(k)
                                model.pop(k, None)
                            else:
                                wb.put(k, v)
                                lb.put(k, v)
                                model[k] = v
                    db.write(wb)
                if rng.random() < 0.01:
                    db.flush()
            if rng.random() < 0.5:
                snaps.append((db.snapshot(), ldb.snapshot(), dict(model)))
            _check_iterators(rng, db, ldb, model, snaps, iterators, steps)
            if rng.random() < 0.25:  # reopen both (snapshots end with the process's handles)
                for s, _, _ in snaps:
                    s.close()
                snaps.clear()
                db.close()
                ldb.close()
                db = DB.open(str(path / "ours"), opts)
                ldb = plyvel.DB(str(path / "leveldb"))
        assert sum(db.stats()["tables_per_level"]) > 1  # the walk met tables, not only the memtable
    finally:
        db.close()
        ldb.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_iterators_match_leveldb(tmp_path, seed):
    _differential(tmp_path, seed, rounds=6, ops=400, iterators=25, steps=30)


@pytest.mark.parametrize("extractor", [FixedPrefix(2), CappedPrefix(1), lambda k: k[:1]])
def test_iterators_match_leveldb_with_prefix_filters(tmp_path, extractor):
    """Prefix filters (tables skipped by ``iterator(prefix=)``) change no answer."""
    _differential(tmp_path, 4, rounds=5, ops=400, iterators=25, steps=30, prefix_extractor=extractor)


@pytest.mark.slow
def test_iterators_match_leveldb_long(tmp_path):
    _differential(tmp_path, 99, rounds=30, ops=1500, iterators=40, steps=60)


def _filled(path, n=3000, **kw):
    db = DB.open(str(path), small_options(background_compaction=False, **kw))
    for i in range(n):
        db.put(b"k%05d" % i, b"v%05d" % i * 3)
    return db


def test_cursor_across_windows_and_directions(tmp_path, monkeypatch):
    """Walks long enough to leave the window in both directions, after seeks and turns."""
    monkeypatch.setattr(lsm_iterator, "WINDOW", 7)
    with _filled(tmp_path / "db") as db:
        keys = [b"k%05d" % i for i in range(3000)]
        with db.iterator(include_value=False) as it:
            assert [next(it) for _ in range(2000)] == keys[:2000]
            assert [it.prev() for _ in range(1500)] == keys[500:2000][::-1]
            assert [next(it) for _ in range(10)] == keys[500:510]
            it.seek(b"k02500x")
            assert it.prev() == b"k02500" and next(it) == b"k02500" and next(it) == b"k02501"
            it.seek_to_stop()
            assert [it.prev() for _ in range(600)] == keys[2400:][::-1]
            assert list(it) == keys[2400:]
        assert list(db.iterator(reverse=True, include_value=False, start=b"k00010", stop=b"k00020",
                                include_stop=True)) == keys[10:21][::-1]


def test_tables_stay_readable_after_compaction_and_snapshot_is_held(tmp_path):
    with _filled(tmp_path / "db") as db:
        db.flush()
        it = db.iterator(start=b"k01000")
        assert next(it) == (b"k01000", b"v01000" * 3)
        for i in range(3000):
            db.put(b"k%05d" % i, b"new")
        db.delete(b"k01001")
        db.compact_range()
        assert db.get(b"k01002") == b"new"
        assert [next(it) for _ in range(3)] == [(b"k%05d" % i, b"v%05d" % i * 3) for i in (1001, 1002, 1003)]
        assert it.prev() == (b"k01003", b"v01003" * 3)
        it.close()
        assert db.stats()["last_sequence"] > 0 and not db._snapshots  # the implicit snapshot is released


def test_errors_and_close(tmp_path):
    with _filled(tmp_path / "db", 10) as db:
        with pytest.raises(InvalidArgument):
            db.iterator(prefix=b"k", start=b"a")
        it = db.iterator()
        with db.iterator() as it2:
            next(it2)
        with pytest.raises(lsm_iterator.IteratorClosed):
            next(it2)
        assert next(it) == (b"k00000", b"v00000" * 3)
        snap = db.snapshot()
        db.put(b"k00000", b"changed")
        assert snap.get(b"k00000") == b"v00000" * 3
        assert next(snap.iterator(include_key=False)) == b"v00000" * 3
        assert list(db.iterator(include_key=False, include_value=False, stop=b"k00002")) == [None, None]
    with pytest.raises(lsm_iterator.IteratorClosed):
        next(it)  # closing the store closes its iterators (plyvel raises RuntimeError here too)
    with pytest.raises(RuntimeError):
        it.prev()


def test_prefix_end():
    assert lsm_iterator.prefix_end(b"ab") == b"ac"
    assert lsm_iterator.prefix_end(b"a\xff\xff") == b"b"
    assert lsm_iterator.prefix_end(b"\xff") is None and lsm_iterator.prefix_end(b"") is None
