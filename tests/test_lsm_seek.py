"""The short first round of a cursor (:mod:`bloomdb.lsm.seek`) against LevelDB (plyvel): prefix
iterators, seeks and bounded ranges over a store of many tables in several levels (overlapping L0
tables, deletions, overwrites, range deletes), read a few entries and read to the end, as of now
and as of a snapshot, with and without a prefix extractor, and with the cache_bytes route (the
short round hands over to the general merge there)."""

from __future__ import annotations

import random

import pytest

from bloomdb.lsm import DB, FixedPrefix
from bloomdb.lsm import seek as S

from lsm_helpers import check_cursors_like_plyvel, small_options

plyvel = pytest.importorskip("plyvel")


def _apply(db, ldb, rng, n_ops: int):
    for i in range(n_ops):
        k = b"p%03d/%04d" % (rng.randrange(60), rng.randrange(200))
        r = rng.random()
        if r < 0.15:
            db.delete(k)
            ldb.delete(k)
        elif r < 0.17:
            a, b = sorted((k, b"p%03d/%04d" % (rng.randrange(60), rng.randrange(200))))
            db.delete_range(a, b)
            for key, _ in list(ldb.iterator(start=a, stop=b)):
                ldb.delete(key)
        else:
            v = b"v%d" % i * rng.randrange(1, 6)
            db.put(k, v)
            ldb.put(k, v)


def _probes(rng):
    out = [b"p%03d/" % rng.randrange(62) for _ in range(40)] + [b"p%03d" % rng.randrange(62) for _ in range(10)]
    return out + [b"p0", b"p", b"q", b"p%03d/01" % rng.randrange(60)]


@pytest.mark.parametrize("opts", [{}, {"prefix_extractor": FixedPrefix(5)}, {"cache_bytes": 1 << 20}],
                         ids=["plain", "prefix-extractor", "cache-bytes"])
def test_short_rounds_match_plyvel(tmp_path, opts, monkeypatch):
    monkeypatch.setattr(S, "LIMIT", 5)  # rounds end early: the hand-over to the general merge is exercised
    rng = random.Random(15)
    o = small_options(background_compaction=False, **opts)
    ldb = plyvel.DB(str(tmp_path / "ldb"), create_if_missing=True)
    with DB.open(tmp_path / "db", o) as db:
        _apply(db, ldb, rng, 8000)
        levels = db.stats()["tables_per_level"]
        assert sum(1 for n in levels if n) >= 2, levels
        snap, lsnap = db.snapshot(), ldb.snapshot()
        _apply(db, ldb, rng, 1500)  # some in the memtable, some flushed over the snapshot's versions
        for p in _probes(rng):
            check_cursors_like_plyvel(db, ldb, p, snap, lsnap)
        snap.close()
    ldb.close()
