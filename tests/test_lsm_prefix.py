"""Prefix Bloom filters (``Options(prefix_extractor=...)``, :mod:`bloomdb.lsm.prefix`): tables
keep a filter over their keys' prefixes and ``iterator(prefix=)`` skips the tables it rules out
(counted by ``stats()``), with the same answers as without; a store reopened with another
extractor reads its old tables without their prefix filters. Random mixes: the model test
(``test_model_with_prefix_filters``) and the LevelDB differential
(``test_iterators_match_leveldb_with_prefix_filters``)."""

from __future__ import annotations

import pytest

from bloomdb import filters
from bloomdb.errors import InvalidArgument
from bloomdb.lsm import DB
from bloomdb.lsm import prefix
from bloomdb.lsm.prefix import CappedPrefix, FixedPrefix

from lsm_helpers import small_options


def _fill(path, **kw):
    """Every table stays in L0 (no compaction): each spans every prefix, so only the prefix
    filters can keep a table out of a prefix iteration."""
    db = DB.open(str(path), small_options(background_compaction=False, level0_trigger=1000, level0_stop=1000, **kw))
    for i in range(3000):
        db.put(b"p%02d-%05d" % (i % 50, i), b"v%d" % i)
    db.put(b"p", b"short")  # shorter than a FixedPrefix(3): outside its domain
    db.flush()
    return db


def _want(p: bytes):
    out = [(b"p%02d-%05d" % (i % 50, i), b"v%d" % i) for i in range(3000)] + [(b"p", b"short")]
    return sorted(kv for kv in out if kv[0].startswith(p))


@pytest.mark.parametrize("extractor", [FixedPrefix(3), CappedPrefix(3), lambda k: k[:3] if len(k) >= 3 else None])
def test_prefix_iteration_skips_tables_and_answers_the_same(tmp_path, extractor):
    db = _fill(tmp_path / "db", prefix_extractor=extractor)
    tables = sum(db.stats()["tables_per_level"])
    assert tables > 5
    for p in (b"p07", b"p07-0", b"p0:", b"p2:-", b"p99", b"q00", b"p0", b"p", b""):
        before = db.stats()["prefix_skips"]
        assert list(db.iterator(prefix=p)) == _want(p), p
        assert list(db.iterator(prefix=p, reverse=True)) == _want(p)[::-1], p
        skipped = db.stats()["prefix_skips"] - before
        if prefix.extractor(extractor).for_prefix(p) is None:  # a shorter prefix (longer, for a callable)
            assert skipped == 0, p  # no prefix filter can answer
        elif b":" in p:  # absent, inside every table's key range: (almost) every table is skipped
            assert skipped >= 2 * tables - 2, (p, skipped, tables)
    assert db.stats()["prefix_checks"] >= db.stats()["prefix_skips"] > 0
    db.close()


def test_another_extractor_on_reopen_reads_old_tables_without_their_prefix_filter(tmp_path):
    db = _fill(tmp_path / "db", prefix_extractor=FixedPrefix(3))
    db.close()
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=False, prefix_extractor=FixedPrefix(2),
                                                     level0_trigger=1000, level0_stop=1000))
    for p in (b"p07", b"p0", b"p99"):
        assert list(db.iterator(prefix=p)) == _want(p)
    old = [r.table for r in db._version.all_refs() if r.table.meta.prefix_name == "fixed:3"]
    assert old and all(t.prefix_may_match("fixed:2", b"zz") for t in old)  # never asked under fixed:2
    assert not all(t.prefix_may_match("fixed:3", b"zz") for t in old)  # (they would rule "zz" out)
    db.close()
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=False))  # no extractor
    assert list(db.iterator(prefix=b"p07")) == _want(b"p07") and db.stats()["prefix_checks"] == 0
    db.close()


def test_whole_key_filtering_off_keeps_gets_right(tmp_path):
    db = _fill(tmp_path / "db", prefix_extractor=FixedPrefix(3), whole_key_filtering=False)
    assert db.get(b"p07-00007") == b"v7" and db.get(b"p07-00008") is None and db.get(b"p") == b"short"
    assert db.stats()["filter_checks"] == 0  # no whole-key filter was there to ask
    assert list(db.iterator(prefix=b"p07")) == _want(b"p07")
    db.close()


def test_bad_extractors_are_refused(tmp_path):
    for bad in (FixedPrefix, 3, "fixed:3"):
        with pytest.raises(InvalidArgument):
            DB.open(str(tmp_path / "x"), small_options(prefix_extractor=bad if bad is not FixedPrefix else object()))
    with pytest.raises(InvalidArgument):
        FixedPrefix(0)
    with pytest.raises(InvalidArgument):
        CappedPrefix(True)
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


PREFIX_SPECS = [filters.family(i.name).example_spec or i.name for i in filters.available()]


@pytest.mark.parametrize("spec", PREFIX_SPECS)
def test_prefix_filters_are_asked_in_one_kernel_call_like_the_family(tmp_path, spec):
    """The version's prefix-filter layout (:mod:`bloomdb.lsm.probe.prefixes`) answers exactly as
    each table's own prefix filter, and every family with a probe descriptor (all but
    ``scalable``) is checked in-kernel, not through the generic single-key ``might_contain``."""
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=False, level0_trigger=1000,
                                                     level0_stop=1000, filter=spec, prefix_extractor=FixedPrefix(3)))
    for i in range(600):
        db.put(b"p%02d-%05d" % (i % 40, i), b"v")
    db.flush()
    ver = db._state[2]
    tables = [r.table for r in ver.slots]
    assert len(tables) > 2
    pf = ver.prefix_filters("fixed:3")
    in_kernel = [type(pf.where[t.number]) is int for t in tables]
    assert all(in_kernel) == (not spec.startswith("scalable")), (spec, in_kernel)
    for p in [b"p%02d" % i for i in range(60)] + [b"\x00\x00\x00", b"zzz"]:
        want = [t.prefix_may_match("fixed:3", p) for t in tables]
        assert pf.may_match(tables, p) == want, (spec, p)
        assert pf.may_match(tables[::-1], p) == want[::-1], (spec, p)
        assert list(db.iterator(prefix=p)) == [(k, b"v") for k in sorted(b"p%02d-%05d" % (i % 40, i) for i in range(600)) if k.startswith(p)]
    db.close()
