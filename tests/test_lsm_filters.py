"""The probe directory's filters: read lazily on a table's first lookup, then checked in the
kernel -- whole-table and partitioned filters alike, with the same answers and statistics as
asking each table's filters one by one."""

from __future__ import annotations

import numpy as np

from bloomdb.hashing import hash64
from bloomdb.lsm import DB
from bloomdb.lsm.probe import layout as K
from bloomdb.lsm.probe.directory import Directory
from bloomdb.lsm.sstable import MISSING

from lsm_helpers import small_options


def _opts(**kw):
    base = dict(background_compaction=False, memtable_bytes=1 << 20, level0_trigger=8, level0_stop=12)
    base.update(kw)
    return small_options(**base)


def _fill(path, tables=4, per=300, **kw):
    with DB.open(path, _opts(**kw)) as db:
        for t in range(tables):
            for i in range(per):
                db.put(b"t%d-%05d" % (t, i), b"v" * 20)
            db.flush()


def test_a_tables_filter_is_read_on_its_first_lookup_and_kept(tmp_path):
    path = str(tmp_path / "db")
    _fill(path)
    with DB.open(path, _opts()) as db:
        ver = db._state[2]
        assert len(ver.slots) == 4 and not any(r.table.filter_loaded for r in ver.slots)
        assert db.get(b"zzz") is None and db.multi_get([b"a", b"zz"]) == [None, None]  # outside every table
        assert not any(r.table.filter_loaded for r in ver.slots)
        assert db.get(b"t2-00007") == b"v" * 20
        assert [r.info.min_key[:2] for r in ver.slots if r.table.filter_loaded] == [b"t2"]
        before = db.stats()
        assert all(db.get(b"t1-%05dx" % i) is None for i in range(200))
        st = db.stats()
        assert st["filter_checks"] - before["filter_checks"] == 200
        assert st["filter_useful"] - before["filter_useful"] >= 190
        assert sorted(r.info.min_key[:2] for r in ver.slots if r.table.filter_loaded) == [b"t1", b"t2"]
        # loaded filters live in the directory now: the kernel checks them itself
        kinds = {r.info.min_key[:2]: int(ver.probe()[0][K.SLOTS + K.STRIDE * s]) for s, r in enumerate(ver.slots)}
        assert kinds == {b"t0": K.LAZY, b"t1": K.FILTER, b"t2": K.FILTER, b"t3": K.LAZY}


def _reference(ver, key):
    """Ask each candidate table's own filters in probe order: (checks, useful, positives, found)."""
    checks = useful = positive = 0
    cands = [r for r in ver.levels[0] if r.info.min_key <= key <= r.info.max_key]
    cands += [r for lvl in ver.levels[1:] for r in lvl if r.info.min_key <= key <= r.info.max_key]
    h = np.array([hash64(key)], np.uint64)
    for r in cands:
        t = r.table
        checks += 1
        i = t.partition_for(key) if t.partitions is not None else 0
        f = None if i is None else (t.partition_filter(i) if t.partitions is not None else t.filter())
        if f is None or not f.might_contain_hashes(h)[0]:
            useful += 1
            continue
        positive += 1
        if t.get(key, 1 << 55) is not MISSING:
            return checks, useful, positive, True
    return checks, useful, positive, False


def test_partitioned_filters_are_checked_in_the_kernel_with_the_same_answers_and_stats(tmp_path, monkeypatch):
    path = str(tmp_path / "db")
    _fill(path, tables=5, per=400, partitioned_filters=True, filter_partition_blocks=2)
    present = [b"t%d-%05d" % (t, i) for t in range(5) for i in range(0, 400, 7)]
    keys = present + [k + b"x" for k in present] + [b"t9", b"a", b"t3-99999"]
    calls = []
    orig = Directory.check_many
    monkeypatch.setattr(Directory, "check_many", lambda self, s, keys: calls.append(s) or orig(self, s, keys))
    with DB.open(path, _opts(partitioned_filters=True, filter_partition_blocks=2)) as db:
        ver = db._state[2]
        assert all(r.table.partitions is None and not r.table.filter_loaded for r in ver.slots)
        first = [db.get(k) for k in keys]
        st1 = db.stats()
        assert calls  # the first lookups read the partitions (in Python, once each)
        assert any(int(ver.probe()[0][K.SLOTS + K.STRIDE * s]) == K.PARTITIONED for s in range(len(ver.slots)))
        calls.clear()
        second = [db.get(k) for k in keys]
        many = db.multi_get(keys)
        st2 = db.stats()
        assert calls == []  # every partition now lives in the directory: the kernel decides
        assert first == second == many == [b"v" * 20] * len(present) + [None] * (len(keys) - len(present))
        ref = np.array([_reference(ver, k)[:3] for k in keys]).sum(axis=0)
        for name, want in zip(("filter_checks", "filter_useful", "filter_positive"), ref):
            assert st1[name] == want
            assert st2[name] - st1[name] == 2 * want  # get and multi_get: the same checks again
