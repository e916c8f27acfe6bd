"""Chunked scans (:mod:`bloomdb.lsm.scan`): the store against a dict model with chunks of one or
a few blocks, so every round boundary, range cut, reverse step and snapshot meets many sources."""

from __future__ import annotations

import pytest

from bloomdb.bench import stress
from bloomdb.lsm import DB, scan

from lsm_helpers import small_options


@pytest.mark.parametrize("chunk", [1, 3])
def test_model_with_tiny_chunks(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(scan, "CHUNK_BLOCKS", chunk)
    monkeypatch.setattr(scan, "CURSOR_CHUNK_BLOCKS", chunk)
    problems: list[str] = []
    bad = stress.model_check(str(tmp_path / "db"), 6000, 20 + chunk, report=problems.append,
                             options=small_options(background_compaction=False))
    assert bad == 0, problems[:10]


def test_overlapping_levels_versions_and_deletes(tmp_path, monkeypatch):
    """Keys rewritten and deleted across memtable, L0 and deeper levels; every range, both
    directions, at a snapshot and now."""
    monkeypatch.setattr(scan, "CHUNK_BLOCKS", 1)
    monkeypatch.setattr(scan, "CURSOR_CHUNK_BLOCKS", 1)
    model: dict[bytes, bytes] = {}
    with DB.open(str(tmp_path / "db"), small_options(background_compaction=False)) as db:
        for rnd in range(6):
            for i in range(0, 400, 1 + rnd % 3):
                k = b"k%05d" % ((i * 7919 + rnd) % 400)
                if (i + rnd) % 5 == 0:
                    db.delete(k)
                    model.pop(k, None)
                else:
                    v = b"v%d-%d" % (rnd, i) * (1 + i % 4)
                    db.put(k, v)
                    model[k] = v
            if rnd == 2:
                snap = db.snapshot()
                frozen = dict(model)
            if rnd % 2 and rnd < 5:  # the last round stays in the memtable
                db.flush()
        st = db.stats()
        assert sum(st["tables_per_level"]) > 1 and st["memtable_entries"] > 0
        bounds = [None, b"k00000", b"k00100", b"k00199x", b"k00399", b"z"]
        for a in bounds:
            for b in bounds:
                for rev in (False, True):
                    want = sorted(((k, v) for k, v in model.items()
                                   if (a is None or k >= a) and (b is None or k < b)), reverse=rev)
                    assert list(db.scan(a, b, reverse=rev)) == want, (a, b, rev)
                    old = sorted(((k, v) for k, v in frozen.items()
                                  if (a is None or k >= a) and (b is None or k < b)), reverse=rev)
                    assert list(db.scan(a, b, reverse=rev, snapshot=snap)) == old, (a, b, rev, "snapshot")
        snap.close()


def test_sort_and_merge_kernels_match_python_on_awkward_keys():
    """Keys with zero bytes, shared prefixes and lengths around the 8- and 16-byte prefix words."""
    import random

    import numpy as np

    from bloomdb.lsm import _scan_kernels as SK
    from bloomdb.lsm.sstable import _table_kernels as TK
    from bloomdb.lsm.sstable.builder import pack_bytes

    rng = random.Random(5)
    alphabet = [b"\x00", b"\x01", b"a", b"\xff"]
    keys = list({b"".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 24])))
                 for _ in range(3000)})
    kd, ko = pack_bytes(keys)
    order = TK.argsort_packed(kd, ko)
    assert [keys[i] for i in order] == sorted(keys)
    # three sorted runs sharing keys; versions with sequences, some deletions, a snapshot
    runs = [sorted(rng.sample(keys, 800)) for _ in range(3)]
    entries, seq = [], 1
    for r in runs:
        for k in r:
            entries.append((k, seq, rng.random() < 0.2))
            seq += 1
    kd, ko = pack_bytes([k for k, _, _ in entries])
    tr = np.array([(s << 8) | (0 if dead else 1) for _, s, dead in entries], np.uint64)
    starts = np.array([0, 800, 1600, 2400], np.int64)
    for snap in (seq, 1200):
        newest: dict[bytes, tuple[int, bool]] = {}
        for k, s, dead in entries:
            if s <= snap and (k not in newest or s > newest[k][0]):
                newest[k] = (s, dead)
        want = sorted(k for k, (_, dead) in newest.items() if not dead)
        for rev in (False, True):
            got = [entries[i][0] for i in SK.merge_visible(kd, ko, tr, starts, snap, rev)]
            assert got == (want[::-1] if rev else want)


@pytest.mark.parametrize("nruns", [1, 2, 3, 5])
def test_merge_gather_writes_what_merge_visible_picks(nruns):
    """:func:`_scan_kernels.merge_gather` (runs as tuples, visible keys and values packed in scan
    order) against :func:`merge_visible` plus Python picking, on awkward keys (zero bytes,
    shared 16-byte prefixes, lengths around the prefix words), versions across runs and within
    a run, deletions, snapshots, empty runs, both directions, with and without values."""
    import random

    import numpy as np

    from bloomdb.lsm import _scan_kernels as SK
    from bloomdb.lsm.sstable.builder import pack_bytes

    rng = random.Random(nruns)
    alphabet = [b"\x00", b"\x01", b"a", b"\xff"]
    pool = sorted({b"".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 8, 15, 16, 17, 24])))
                   for _ in range(600)})
    runs, seq = [], 1
    for r in range(nruns):
        ks = [] if r == 1 else sorted(rng.sample(pool, 200))
        ents = []
        for k in ks:
            for _ in range(rng.choice([1, 1, 2])):  # a key's versions are adjacent, newest first
                ents.append((k, seq, rng.random() < 0.2, b"v%d" % seq * rng.randrange(0, 4)))
                seq += 1
        ents.sort(key=lambda e: (e[0], -e[1]))
        runs.append(ents)
    flat = [e for r in runs for e in r]
    packed = []
    for r in runs:
        kd, ko = pack_bytes([e[0] for e in r])
        vd, vo = pack_bytes([e[3] for e in r])
        tr = np.array([(e[1] << 8) | (0 if e[2] else 1) for e in r], np.uint64)
        packed.append((kd.copy(), ko, tr, vd.copy(), vo))
    kds, kos, trs, vds, vos = zip(*packed)
    kd, ko = pack_bytes([e[0] for e in flat])
    tr = np.array([(e[1] << 8) | (0 if e[2] else 1) for e in flat], np.uint64)
    starts = np.cumsum([0] + [len(r) for r in runs])
    for snap in (seq, seq // 2):
        for rev in (False, True):
            sel = SK.merge_visible(kd, ko, tr, starts, snap, rev)
            want = [(flat[i][0], flat[i][3]) for i in sel]
            assert want, (snap, rev)
            for values in (True, False):
                okd, oko, ovd, ovo, m = SK.merge_gather(kds, kos, trs, vds, vos, snap, rev, values)
                keys = [okd[oko[j] : oko[j + 1]].tobytes() for j in range(m)]
                assert keys == [k for k, _ in want]
                if values:
                    assert [ovd[ovo[j] : ovo[j + 1]].tobytes() for j in range(m)] == [v for _, v in want]


@pytest.mark.parametrize("shape", ["sparse", "dense", "blocks"])
def test_merge_by_stretches_against_a_model(shape):
    """:func:`_scan_kernels.merge_visible` merges by stretches (a run leads up to the next run's
    head, found by galloping): runs of very different density (a level and a sparse memtable),
    runs that interleave entry by entry, and runs whose keys come in long alternating blocks;
    several versions of a key inside a run and across runs, deletions, keys with shared 16-byte
    prefixes and lengths around the prefix words; checked against a dict model at several
    snapshots, both directions, and :func:`merge_gather`'s packed output against the same model."""
    import random

    import numpy as np

    from bloomdb.lsm import _scan_kernels as SK
    from bloomdb.lsm.sstable.builder import pack_bytes

    rng = random.Random(hash(shape) & 0xFFFF)
    stems = [b"", b"0123456789abcdef", b"\x00" * 15, b"k"]
    pool = sorted({rng.choice(stems) + b"%d" % rng.randrange(3000) + rng.choice([b"", b"\x00", b"zz"])
                   for _ in range(2500)})
    if shape == "sparse":  # one dense run, two sparse ones
        picks = [pool, rng.sample(pool, 15), rng.sample(pool, 3)]
    elif shape == "dense":
        picks = [pool[0::2], pool[1::2], rng.sample(pool, 800)]
    else:  # alternating blocks of 50 keys
        picks = [[k for i, k in enumerate(pool) if (i // 50) % 2 == 0], [k for i, k in enumerate(pool) if (i // 50) % 2]]
    runs, seq = [], 1
    for ks in picks:
        ents = []
        for k in ks:
            for _ in range(rng.choice([1, 1, 1, 2, 3])):  # a key's versions, adjacent, newest first
                ents.append((k, seq, rng.random() < 0.15, b"v%d" % seq * rng.randrange(0, 3)))
                seq += 1
        ents.sort(key=lambda e: (e[0], -e[1]))
        runs.append(ents)
    rng.shuffle(runs)  # the run order says nothing of age: sequences decide
    flat = [e for r in runs for e in r]
    kd, ko = pack_bytes([e[0] for e in flat])
    tr = np.array([(e[1] << 8) | (0 if e[2] else 1) for e in flat], np.uint64)
    starts = np.cumsum([0] + [len(r) for r in runs]).astype(np.int64)
    packed = []
    for r in runs:
        rk, rko = pack_bytes([e[0] for e in r])
        rv, rvo = pack_bytes([e[3] for e in r])
        packed.append((rk.copy(), rko, np.array([(e[1] << 8) | (0 if e[2] else 1) for e in r], np.uint64),
                       rv.copy(), rvo))
    kds, kos, trs, vds, vos = zip(*packed)
    for snap in (seq, seq // 2, seq // 5):
        newest: dict = {}
        for k, q, dead, v in flat:
            if q <= snap and (k not in newest or q > newest[k][0]):
                newest[k] = (q, dead, v)
        want = sorted((k, v) for k, (_, dead, v) in newest.items() if not dead)
        assert want
        for rev in (False, True):
            w = want[::-1] if rev else want
            got = [(flat[i][0], flat[i][3]) for i in SK.merge_visible(kd, ko, tr, starts, snap, rev)]
            assert got == w, (snap, rev)
            okd, oko, ovd, ovo, m = SK.merge_gather(kds, kos, trs, vds, vos, snap, rev, True)
            assert [(okd[oko[j] : oko[j + 1]].tobytes(), ovd[ovo[j] : ovo[j + 1]].tobytes()) for j in range(m)] == w


def test_prefix_words_order_keys_bytewise():
    """:func:`_scan_kernels.prefix_words` (two big-endian loads per key of 16 bytes or more)
    gives the words of :func:`key_words` for every key length, so word order then tail is
    bytewise order."""
    import random

    from bloomdb.lsm import _scan_kernels as SK
    from bloomdb.lsm.sstable._block_kernels import key_words
    from bloomdb.lsm.sstable.builder import pack_bytes

    rng = random.Random(3)
    keys = [bytes(rng.choice([0, 1, 0x7F, 0x80, 0xFF]) for _ in range(n)) for n in list(range(0, 40)) * 20]
    kd, ko = pack_bytes(keys)
    p0, p1 = SK.prefix_words(kd, ko)
    for i, k in enumerate(keys):
        assert (int(p0[i]), int(p1[i])) == tuple(int(w) for w in key_words(kd, int(ko[i]), len(k)))
    # keys in bytewise order have non-decreasing words (ties: the tail and length decide)
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    for a, b in zip(order, order[1:]):
        assert (int(p0[a]), int(p1[a])) <= (int(p0[b]), int(p1[b]))


def test_copy_bytes_is_a_memmove_between_uint8_arrays():
    """The decode and merge kernels copy keys and values with :func:`_intrinsics.copy_bytes`:
    any offsets, zero length, overlapping ranges of one array (memmove, not memcpy)."""
    import numpy as np
    from numba import njit

    from bloomdb._intrinsics import copy_bytes

    @njit
    def copy(dst, dpos, src, spos, n):
        copy_bytes(dst, dpos, src, spos, n)

    src = np.arange(200, dtype=np.uint8)
    for dpos, spos, n in ((0, 0, 0), (3, 17, 100), (0, 199, 1), (150, 0, 50)):
        dst = np.zeros(200, np.uint8)
        want = dst.copy()
        want[dpos : dpos + n] = src[spos : spos + n]
        copy(dst, dpos, src, spos, n)
        assert (dst == want).all()
    a = np.arange(64, dtype=np.uint8)
    want = a.copy()
    want[8:40] = a[0:32].copy()
    copy(a, 8, a, 0, 32)  # overlapping, forward
    assert (a == want).all()


def test_scans_run_few_compiled_merge_variants(tmp_path, monkeypatch):
    """A round's runs are padded to one of :data:`scan.GATHER_SIZES`, whatever the store's shape
    (memtable, 0 to 10 L0 tables, deeper levels), so a process loads at most that many variants
    of ``merge_gather`` (each a ~10 ms load from numba's cache, paid in a scan's first round);
    the answers stay the model's."""
    from bloomdb.lsm import _scan_kernels as SK

    sizes = set()
    kernel = SK.merge_gather

    def counting(kds, *rest):
        sizes.add(len(kds))
        return kernel(kds, *rest)

    monkeypatch.setattr(SK, "merge_gather", counting)
    model = {}
    with DB.open(str(tmp_path / "db"), small_options(background_compaction=False, level0_trigger=64,
                                                     level0_stop=64)) as db:
        for t in range(11):
            for i in range(t, 300, 3 + t % 4):
                k, v = b"k%04d" % i, b"v%d-%d" % (t, i)
                db.put(k, v)
                model[k] = v
            if t < 10:
                db.flush()
            want = sorted(model.items())
            assert list(db.scan()) == want
            assert list(db.scan(b"k0100", b"k0200", reverse=True)) == [kv for kv in want[::-1]
                                                                       if b"k0100" <= kv[0] < b"k0200"]
        assert db.stats()["tables_per_level"][0] >= 9
    assert sizes and sizes <= set(scan.GATHER_SIZES), sizes


def test_cursor_rounds_grow_to_their_own_cap(monkeypatch):
    """A stepped cursor's chunks double from ``first_blocks`` up to ``CURSOR_CHUNK_BLOCKS``; a
    scan's (``first_blocks=None``) are ``CHUNK_BLOCKS`` from the start; either way every block
    is read once, in order."""
    monkeypatch.setattr(scan, "CHUNK_BLOCKS", 8)
    monkeypatch.setattr(scan, "CURSOR_CHUNK_BLOCKS", 4)

    class T:
        def num_blocks(self):
            return 20

        def decode_arrays(self, i, j):
            return (i, j)

    assert list(scan.table_chunks([T()], None, None, False, 1)) == [(0, 0), (1, 2), (3, 6), (7, 10), (11, 14),
                                                                     (15, 18), (19, 19)]
    assert list(scan.table_chunks([T()], None, None, False)) == [(0, 7), (8, 15), (16, 19)]
    assert list(scan.table_chunks([T()], None, None, True, 1)) == [(19, 19), (17, 18), (13, 16), (9, 12), (5, 8),
                                                                    (1, 4), (0, 0)]
