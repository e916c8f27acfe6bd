"""Kernels of the fills' background work (issue 14, twelfth session) against Python models:
the compaction's k-way merge compares 8-byte prefix words instead of bytes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bloomdb.lsm.compaction import _merge_kernels as MK
from bloomdb.lsm.sstable.builder import pack_bytes


def _awkward_keys(rng: random.Random, n: int) -> list[bytes]:
    """Keys with zero and 0xff bytes, shared prefixes and lengths around the 8- and 16-byte words."""
    alphabet = [b"\x00", b"\x01", b"a", b"\xff"]
    return list({b"".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 18, 24, 40])))
                 for _ in range(n)})


def _model(entries, snap: int, bottom: bool) -> list[int]:
    """The kept entries' indexes by the drop rules (``executor``'s docstring), merged order."""
    order = sorted(range(len(entries)), key=lambda i: (entries[i][0], -entries[i][1]))
    out, last, last_seq = [], None, 0
    for i in order:
        k, s, dead = entries[i]
        same = last is not None and k == last
        drop = same and last_seq <= snap
        if not drop and bottom and dead and s <= snap:
            drop = True
        last, last_seq = k, s
        if not drop:
            out.append(i)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_merge_runs_keeps_what_the_drop_rules_keep_on_awkward_keys(seed):
    rng = random.Random(seed)
    keys = _awkward_keys(rng, 600)
    nruns = rng.choice([1, 2, 3, 9, 13])
    seqs = rng.sample(range(1, 100_000), 4000)
    entries, starts = [], [0]
    for _ in range(nruns):
        size = rng.choice([0, 1, 50, 300])  # empty runs too
        run = []
        for k in rng.sample(keys, min(size, len(keys))):
            for _ in range(rng.choice([1, 1, 2, 3])):  # a run may hold several versions of a key
                run.append((k, seqs.pop(), rng.random() < 0.25))
        run.sort(key=lambda e: (e[0], -e[1]))
        entries += run
        starts.append(len(entries))
    kd, ko = pack_bytes([k for k, _, _ in entries])
    tr = np.array([(s << 8) | (0 if dead else 1) for _, s, dead in entries], np.uint64)
    st = np.array(starts, np.int64)
    for snap in (10 ** 9, 50_000, 0):
        for bottom in (False, True):
            got = MK.merge_runs(kd, ko, tr, st, snap, bottom).tolist()
            assert got == _model(entries, snap, bottom), (nruns, snap, bottom)


@pytest.mark.parametrize("seed,n", [(0, 100), (1, 600), (2, 5000), (3, 20000)])
def test_argsort_packed_is_a_stable_bytewise_sort(seed, n):
    """The flush's sort (radix passes over the prefix words from ``RADIX_MIN`` items, then the
    groups of equal words sorted by their full keys) against Python's stable sort: repeated keys
    keep their input order, keys equal in their first 16 bytes (zero padding, longer tails) are
    ordered by the rest."""
    from bloomdb.lsm.sstable import _table_kernels as TK

    rng = random.Random(seed)
    base = _awkward_keys(rng, max(8, n // 4))
    base += [b"0000000000%06d" % rng.randrange(10 ** 6) for _ in range(n // 4)]  # db-bench's shape
    base += [b"p" * 16 + bytes([rng.randrange(3)]) * rng.randrange(3) for _ in range(8)]  # equal words, tails
    keys = [rng.choice(base) for _ in range(n)]  # repeats: stability shows
    kd, ko = pack_bytes(keys)
    got = TK.argsort_packed(kd, ko).tolist()
    assert got == sorted(range(n), key=lambda i: keys[i])
    if n >= TK.RADIX_MIN:  # the words alone in radix order: stable by (p0, p1)
        p0, p1 = TK._prefix_words(kd, ko, 0), TK._prefix_words(kd, ko, 8)
        want = sorted(range(n), key=lambda i: (int(p0[i]), int(p1[i])))
        assert TK._radix_order(p0, p1).tolist() == want
