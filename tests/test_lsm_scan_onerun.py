"""A scan round with one source that is its own output (:func:`bloomdb.lsm._scan_kernels.all_visible`:
values only, none newer than the snapshot, no key twice) skips the merge and the gather. Pinned
to a dict model over one-level stores (``compact_range``), with snapshots (older versions kept),
deletions, reverse and bounded scans, keys only; and the kernel's answer to its own rules."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bloomdb.lsm import DB
from bloomdb.lsm._scan_kernels import all_visible
from bloomdb.lsm.sstable.builder import pack_bytes

from lsm_helpers import small_options

_op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 299), st.integers(0, 9)),
    st.tuples(st.just("del"), st.integers(0, 299)),
    st.tuples(st.just("puts"), st.integers(0, 299), st.integers(1, 150)),
    st.sampled_from([("compact",), ("snap",), ("flush",)]),
)


def _key(i: int) -> bytes:
    return b"k%03d" % i


def _expect(model, lo, hi, reverse):
    ks = sorted(k for k in model if (lo is None or k >= lo) and (hi is None or k < hi))
    return [(k, model[k]) for k in (reversed(ks) if reverse else ks)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=40), lo=st.none() | st.integers(0, 300), span=st.none() | st.integers(0, 300))
def test_scans_of_one_level_stores_match_a_dict(tmp_path_factory, ops, lo, span):
    model, snaps = {}, []
    with DB.open(tmp_path_factory.mktemp("scan") / "db", small_options(background_compaction=False)) as db:
        for op in ops + [("compact",)]:  # ends on one level: every round has one source
            if op[0] == "put":
                model[_key(op[1])] = v = b"v%d" % op[2]
                db.put(_key(op[1]), v)
            elif op[0] == "puts":
                for i in range(op[1], min(300, op[1] + op[2])):
                    model[_key(i)] = v = b"p%d" % i
                    db.put(_key(i), v)
            elif op[0] == "del":
                model.pop(_key(op[1]), None)
                db.delete(_key(op[1]))
            elif op[0] == "flush":
                db.flush()
            elif op[0] == "compact":
                db.compact_range()
            else:
                snaps.append((db.snapshot(), dict(model)))
        a = None if lo is None else _key(lo)
        b = None if span is None or lo is None else _key(lo + span)
        for rev in (False, True):
            assert list(db.scan(a, b, reverse=rev)) == _expect(model, a, b, rev)
            for s, m in snaps:
                assert list(db.scan(a, b, reverse=rev, snapshot=s)) == _expect(m, a, b, rev)
        assert list(db.iterator(include_value=False)) == sorted(model)
        for s, _ in snaps:
            s.close()


def test_all_visible_rules():
    kd, ko = pack_bytes([b"a", b"ab", b"b", b"ba"])
    tr = np.array([(5 << 8) | 1, (6 << 8) | 1, (2 << 8) | 1, (9 << 8) | 1], np.uint64)
    assert all_visible(kd, ko, tr, 9)
    assert not all_visible(kd, ko, tr, 8)  # an entry newer than the snapshot
    tr2 = tr.copy()
    tr2[2] = 2 << 8  # a deletion
    assert not all_visible(kd, ko, tr2, 9)
    kd, ko = pack_bytes([b"a", b"ab", b"ab", b"b"])  # two versions of one key
    assert not all_visible(kd, ko, tr, 9)
    kd, ko = pack_bytes([b"ab", b"bb"])  # same length, differ in the first byte only
    assert all_visible(kd, ko, tr[:2], 9)
    assert all_visible(np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.uint64), 0)
