"""The filters-first screen of a lookup from slot 0 (:func:`bloomdb.lsm.probe._probe_kernels.prescreen`),
pinned to an obvious model of the tables a key meets (L0 tables whose range holds it, newest
first, then per level the one table whose range holds it) and to the probe loop it stands in
front of (:func:`._probe_kernels.probe`: the first table whose filter may hold the key, and the
checks it counted before it), on stores with L0 tables over several levels, keys that tie on
their 16-byte prefix words, shorter keys, filters that say "may contain" often (``blocked:2``)
and a family the screen does not read (``leveldb``: it stops at the first table)."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

from bloomdb.hashing import xxh3_64
from bloomdb.lsm import DB
from bloomdb.lsm.probe import _probe_kernels as P
from bloomdb.lsm.probe.layout import COUNTERS

from lsm_helpers import small_options

HEAD = b"sixteen-byte-hd!"


def _keys() -> list[bytes]:
    return [HEAD + b"%05d" % i for i in range(0, 3000, 2)] + [b"k%04d" % i for i in range(0, 900, 3)]


def _met(ver, key: bytes) -> list[int]:
    """The slots a lookup from slot 0 meets by range: L0 newest first, then one per level."""
    out, s = [], 0
    for level, refs in enumerate(ver.levels):
        if level == 0:
            out += [s + i for i, r in enumerate(refs) if r.info.min_key <= key <= r.info.max_key]
        elif refs:
            i = bisect.bisect_left([r.info.max_key for r in refs], key)
            if i < len(refs) and refs[i].info.min_key <= key:
                out.append(s + i)
        s += len(refs)
    return out


@pytest.mark.parametrize("spec", ["blocked:10", "blocked:2", "leveldb:10"])
def test_prescreen_meets_the_tables_the_probe_meets(tmp_path, spec):
    keys = _keys()
    with DB.open(tmp_path / "db", small_options(filter=spec, background_compaction=False)) as db:
        for n, k in enumerate(keys):
            db.put(k, b"v%d" % n)
        db.compact_range()
        for r in range(3):  # overlapping tables over the levels
            for k in keys[r::5]:
                db.put(k, b"w%d" % r)
            db.flush()
        assert db.stats()["tables_per_level"][0] >= 1
        queries = [HEAD, HEAD[:-1], b"", b"zz"] + [q for k in keys for q in (k, k + b".", k[:-1], k + b"\0")]
        db.multi_get(queries)  # every filter read by the lookups: the screen reads loaded ones only
        ver = db._state[2]
        d = ver.probe()[0]
        u64, u8 = d.view(np.uint64), d.view(np.uint8)
        blocked = spec.startswith("blocked")
        stops = 0
        for q in queries:
            met = _met(ver, q)
            done, stop, first = P.prescreen(d, u64, u8, np.uint64(xxh3_64(q)), q, 0, len(q))
            assert first == (met[0] if met else -1), q
            c0 = d[COUNTERS].copy()
            s = P.probe(d, q, 0)  # the probe loop alone: counts its checks, charges nothing
            useful = d[COUNTERS][1] - c0[1]
            if not blocked:  # another family: the screen leaves every table to the probe
                assert (done, stop) == ((0, met[0]) if met else (0, -1)), q
                continue
            if s == -1:
                assert (done, stop) == (len(met), -1) and useful == len(met), q
            else:
                stops += 1
                assert stop == (s if s >= 0 else -s - 2) and stop in met, q
                assert done == met.index(stop) == useful, q
        assert not blocked or stops > 0  # some filter said "may contain": the stop was tried


@pytest.mark.parametrize("spec", ["blocked:10", "blocked:2"])
def test_a_lookup_answers_counts_and_charges_as_the_probe_loop_and_table_reads(tmp_path, spec):
    """:func:`._get_kernels.lookup` reads the table the screen stopped at without probing it again
    (its filter said "may contain"): pinned to the probe loop alone (:func:`._probe_kernels.probe`,
    which counts checks and positives as a lookup does) followed by Python's read of each table it
    lets through -- same answer and slot, same counters, and the first table met charged exactly
    when a second one is met. ``blocked:2``: many false positives, so lookups go on past a read."""
    from bloomdb.lsm.probe import _get_kernels as G
    from bloomdb.lsm.probe.layout import C_BLOCKS, C_CHECKS, C_FOUND, C_LOOKUPS, C_POSITIVE, C_USEFUL
    from bloomdb.lsm.rangedel import MAX_SEQ
    from bloomdb.lsm.sstable import DELETED, MISSING

    keys = _keys()
    with DB.open(tmp_path / "db", small_options(filter=spec, background_compaction=False)) as db:
        for n, k in enumerate(keys):
            db.put(k, b"v%d" % n)
        db.compact_range()
        for r in range(3):
            for k in keys[r::5]:
                db.put(k, b"w%d" % r)
            for k in keys[r + 1::11]:
                db.delete(k)
            db.flush()
        queries = [HEAD, b"", b"zz"] + [q for k in keys for q in (k, k + b".", k[:-1])]
        db.multi_get(queries)
        for q in queries:  # every filter loaded and every block checked: the kernel answers alone
            db.get(q)
        ver = db._state[2]
        d = ver.probe()[0]
        budgets = [r.table.seek_budget for r in ver.slots]
        kinds = {G.VALUE: 0, G.DELETED: 0, G.MISSING: 0}
        for q in queries:
            b0 = [int(b[0]) if b is not None and len(b) else None for b in budgets]
            c0 = d.copy()
            st, s, a, n = G.lookup(d, q, MAX_SEQ, 0)
            st &= ~G.SEEK
            got = d[:C_FOUND + 1] - c0[:C_FOUND + 1]
            charged = [i for i, b in enumerate(budgets) if b0[i] is not None and int(b[0]) != b0[i]]
            d[:] = c0  # the reference from the same state
            want, start, blocks, meets = MISSING, 0, 0, []
            while True:
                c1 = d[COUNTERS].copy()
                p = P.probe(d, q, start)
                assert p >= -1, q  # no hand-over: every filter is loaded
                if p == -1:
                    break
                blocks += 1
                r = ver.slots[p].table.get(q, MAX_SEQ)
                if r is not MISSING:
                    want = r
                    break
                start = p + 1
            probe_counts = d[:C_FOUND + 1] - c0[:C_FOUND + 1]
            d[:] = c0
            for w in (C_CHECKS, C_USEFUL, C_POSITIVE):
                assert got[w] == probe_counts[w], (q, w)
            assert got[C_LOOKUPS] == 1 and got[C_BLOCKS] == blocks, q
            assert got[C_FOUND] == (want is not MISSING), q
            if want is MISSING:
                assert st == G.MISSING, q
            elif want is DELETED:
                assert (st, s) == (G.DELETED, p), q
            else:
                assert (st, s) == (G.VALUE, p) and ver.probe()[1][s][a : a + n] == want, q
            kinds[st] += 1
            met = _met(ver, q)
            upto = met if want is MISSING else met[: met.index(p) + 1]
            assert charged == (upto[:1] if len(upto) >= 2 else []), q
            for i in charged:  # put the budget back: the next query starts from the same state
                budgets[i][0] = b0[i]
        assert all(kinds.values()), kinds


@pytest.mark.parametrize("spec", ["blocked:10", "blocked:2"])
def test_prescreen_with_more_candidates_than_its_scratch_holds(tmp_path, spec):
    """More L0 tables holding a key than the screen notes at once (``_SCREEN``): its candidates
    are checked in rounds, and the answer is still the probe loop's (first table that may hold
    the key, the checks before it), the first table met still the model's."""
    n0 = P._SCREEN + 5
    opts = small_options(filter=spec, background_compaction=False, level0_trigger=100, level0_stop=200,
                         max_flush_level=0)
    keys = [b"key%05d" % i for i in range(0, 4000, 2)]
    with DB.open(tmp_path / "db", opts) as db:
        for r in range(n0):
            for k in keys[r::n0 + 1] + [keys[0], keys[-1]]:  # every table spans the whole key range
                db.put(k, b"v%d" % r)
            db.flush()
        assert db.stats()["tables_per_level"][0] >= n0
        queries = [q for k in keys[::3] for q in (k, k + b".", k[:-1] + b"x")] + [b"", b"zz"]
        db.multi_get(queries)  # every filter read
        ver = db._state[2]
        d = ver.probe()[0]
        u64, u8 = d.view(np.uint64), d.view(np.uint8)
        rounds = stops = 0
        for q in queries:
            met = _met(ver, q)
            rounds += len(met) > P._SCREEN
            done, stop, first = P.prescreen(d, u64, u8, np.uint64(xxh3_64(q)), q, 0, len(q))
            assert first == (met[0] if met else -1), q
            c0 = d[COUNTERS].copy()
            s = P.probe(d, q, 0)
            useful = d[COUNTERS][1] - c0[1]
            if s == -1:
                assert (done, stop) == (len(met), -1) and useful == len(met), q
            else:
                stops += 1
                assert stop == s and done == met.index(stop) == useful, q
        assert rounds > 0 and stops > 0
