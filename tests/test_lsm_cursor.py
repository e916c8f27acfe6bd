"""A cursor's first round in one kernel call (:mod:`bloomdb.lsm.cursor`) against LevelDB
(plyvel): prefix iterators, seeks and bounded ranges over a store of many tables in several levels
(overlapping L0 tables, deletions, overwrites, entries in the memtable), read a few entries and to
the end, now and at a snapshot; the kernel path is taken (counted), hands rounds back where it must
(the cache_bytes route), checks a block's CRC32C on its first read and raises on a damaged one."""

from __future__ import annotations

import itertools
import os
import random

import pytest

from bloomdb.checksum import HW_RANGES
from bloomdb.errors import CorruptionError
from bloomdb.lsm import DB, FixedPrefix
from bloomdb.lsm import _cursor_kernels as CK
from bloomdb.lsm import seek as S

from lsm_helpers import check_cursors_like_plyvel, small_options

plyvel = pytest.importorskip("plyvel")
pytestmark = pytest.mark.skipif(not HW_RANGES, reason="the one-call round runs where the SSE4.2 CRC32C kernel does")


def _apply(db, ldb, rng, n_ops: int):
    for i in range(n_ops):
        k = b"p%03d/%04d" % (rng.randrange(60), rng.randrange(200))
        if rng.random() < 0.15:
            db.delete(k)
            ldb.delete(k)
        else:
            v = b"v%d" % i * rng.randrange(1, 6)
            db.put(k, v)
            ldb.put(k, v)


def _count_statuses(monkeypatch) -> dict:
    seen = {CK.OK: 0, CK.CHECK: 0, CK.GENERAL: 0}
    kernel = CK.first_round

    def counting(*args):
        r = kernel(*args)
        seen[r[0]] += 1
        return r

    monkeypatch.setattr(CK, "first_round", counting)
    return seen


@pytest.mark.parametrize("opts", [{}, {"prefix_extractor": FixedPrefix(5)}, {"cache_bytes": 1 << 20}],
                         ids=["plain", "prefix-extractor", "cache-bytes"])
@pytest.mark.parametrize("limit", [3, 16])
def test_one_call_rounds_match_plyvel(tmp_path, opts, limit, monkeypatch):
    monkeypatch.setattr(S, "LIMIT", limit)  # small: rounds end early, the general merge takes over
    seen = _count_statuses(monkeypatch)
    rng = random.Random(limit)
    ldb = plyvel.DB(str(tmp_path / "ldb"), create_if_missing=True)
    with DB.open(tmp_path / "db", small_options(background_compaction=False, **opts)) as db:
        _apply(db, ldb, rng, 8000)
        assert sum(1 for n in db.stats()["tables_per_level"] if n) >= 2
        snap, lsnap = db.snapshot(), ldb.snapshot()
        _apply(db, ldb, rng, 1500)  # some in the memtable, some flushed over the snapshot's versions
        assert db.stats()["memtable_entries"] > 0
        probes = [b"p%03d/" % rng.randrange(62) for _ in range(40)] + [b"p%03d" % rng.randrange(62) for _ in range(10)]
        for p in probes + [b"p0", b"p", b"q", b"p%03d/01" % rng.randrange(60)]:
            check_cursors_like_plyvel(db, ldb, p, snap, lsnap, takes=(1, 3, 12, None))
        snap.close()
    ldb.close()
    if "cache_bytes" in opts:
        assert seen[CK.GENERAL] > 0  # a table without mapped bytes: the Python round reads it
    else:
        assert seen[CK.OK] > 100 and seen[CK.GENERAL] == 0, seen


def test_first_reads_check_crcs_and_damage_raises(tmp_path, monkeypatch):
    seen = _count_statuses(monkeypatch)
    path = tmp_path / "db"
    keys = [b"k%05d" % i for i in range(3000)]
    with DB.open(path, small_options(background_compaction=False, prefix_extractor=FixedPrefix(4))) as db:
        for k in keys:
            db.put(k, k * 3)
        db.flush()
    with DB.open(path, small_options(background_compaction=False, prefix_extractor=FixedPrefix(4))) as db:
        tables = [r.table for level in db._version.levels for r in level]
        assert not any(t._checked.any() for t in tables)  # a fresh open has checked no block
        for p in (b"k000", b"k012", b"k029"):
            assert list(db.iterator(prefix=p)) == [(k, k * 3) for k in keys if k.startswith(p)]
        assert any(t._checked.any() for t in tables)  # the kernel checked the blocks it read
    assert seen[CK.OK] > 0 and seen[CK.CHECK] == 0
    tables = sorted(f for f in os.listdir(path) if f.endswith(".sst"))
    with open(path / tables[0], "r+b") as fh:  # a byte inside the first data block
        fh.seek(40)
        b = fh.read(1)
        fh.seek(40)
        fh.write(bytes([b[0] ^ 0xFF]))
    with DB.open(path, small_options(background_compaction=False, prefix_extractor=FixedPrefix(4))) as db:
        with pytest.raises(CorruptionError):  # the kernel hands the block back, check_block names it
            for p in {k[:4] for k in keys}:
                list(itertools.islice(db.iterator(prefix=p), 2))


@pytest.mark.parametrize("seed", range(4))
def test_unpack_format_cuts_the_round_as_its_offsets_say(seed):
    """The kernel's ``struct`` format cuts ``out`` exactly as ``offs`` lays it out (keys, values,
    the bound), for lengths across digit counts and empty ones."""
    import struct

    import numpy as np

    rng = random.Random(seed)
    m = rng.randrange(0, 20)
    lens = [rng.choice([0, 1, 9, 10, 99, 100, 1000, 12345]) for _ in range(2 * m + 1)]
    parts = [rng.randbytes(n) for n in lens]
    offs = [0]
    for p in parts[:m]:
        offs.append(offs[-1] + len(p))
    offs.append(offs[-1])  # the keys' end repeated: the values' first offset
    for p in parts[m : 2 * m]:
        offs.append(offs[-1] + len(p))
    offs.append(offs[-1])
    offs.append(offs[-1] + len(parts[-1]))
    data = b"".join(parts)
    out = np.zeros(len(data) + 1 + 20 * (2 * m + 1), np.uint8)
    out[: len(data)] = np.frombuffer(data, np.uint8)
    f = CK._unpack_format(out, len(data), np.array(offs, np.int64), m)
    raw = out[:f].tobytes()
    assert list(struct.unpack_from(raw[len(data) :], raw)) == parts
