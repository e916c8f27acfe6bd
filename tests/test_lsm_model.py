"""Model-based tests: the store against a dict, with tiny memtables so flushes and compactions
happen constantly; snapshots against frozen copies of the dict; scans against sorted items."""

from __future__ import annotations

import random

import pytest

from bloomdb.lsm import DB, WriteBatch

from lsm_helpers import small_options


def _run_model(path, ops, seed, **opt):
    rng = random.Random(seed)
    model: dict[bytes, bytes] = {}
    snaps = []  # (snapshot, frozen model)
    db = DB.open(path, small_options(**opt))
    nkeys = max(50, ops // 8)

    def key():
        return b"k%06d" % rng.randrange(nkeys) + (b"x" * rng.randrange(3))

    def span():
        i = rng.randrange(nkeys)
        return b"k%06d" % i, b"k%06d" % (i + rng.randrange(1, 80))

    try:
        for i in range(ops):
            r = rng.random()
            if r < 0.45:
                k, v = key(), rng.randbytes(rng.randrange(40))
                db.put(k, v)
                model[k] = v
            elif r < 0.55:
                k = key()
                db.delete(k)
                model.pop(k, None)
            elif r < 0.62:
                b = WriteBatch()
                for _ in range(rng.randrange(1, 6)):
                    k = key()
                    if rng.random() < 0.7:
                        v = rng.randbytes(8)
                        b.put(k, v)
                        model[k] = v
                    else:
                        b.delete(k)
                        model.pop(k, None)
                db.write(b)
            elif r < 0.85:
                k = key()
                assert db.get(k) == model.get(k), (i, k)
            elif r < 0.90:
                ks = [key() for _ in range(rng.randrange(1, 30))]
                assert db.multi_get(ks) == [model.get(k) for k in ks], i
            elif r < 0.93:
                a, b2 = span()
                rev = rng.random() < 0.5
                want = sorted(((k, v) for k, v in model.items() if a <= k < b2), reverse=rev)
                assert list(db.scan(a, b2, reverse=rev)) == want, i
            elif r < 0.95:
                if len(snaps) < 4:
                    snaps.append((db.snapshot(), dict(model)))
                else:
                    s, _ = snaps.pop(0)
                    s.close()
            elif r < 0.99 and snaps:
                s, frozen = rng.choice(snaps)
                k = key()
                assert db.get(k, snapshot=s) == frozen.get(k), (i, k, "snapshot")
                if rng.random() < 0.2:
                    a, b2 = span()
                    want = sorted((k, v) for k, v in frozen.items() if a <= k < b2)
                    assert list(db.scan(a, b2, snapshot=s)) == want, (i, "snapshot scan")
            elif rng.random() < 0.8:
                db.flush()
            else:
                db.close()
                for s, _ in snaps:
                    s.close()
                snaps.clear()
                db = DB.open(path, small_options(**opt))
        assert list(db.scan()) == sorted(model.items())
        db.compact_range()
        assert list(db.scan()) == sorted(model.items())
        assert db.multi_get(sorted(model)) == [model[k] for k in sorted(model)]
        st = db.stats()
        assert st["compactions"] > 0
    finally:
        db.close()
    return model


@pytest.mark.parametrize("bg", [False, True])
def test_model_small(tmp_path, bg):
    _run_model(str(tmp_path / "db"), 15000, seed=7 + bg, background_compaction=bg)


def test_model_compressed_and_other_filters(tmp_path):
    _run_model(str(tmp_path / "z"), 2500, seed=3, compression="zstd", block_cache_bytes=4096,
               background_compaction=False)
    _run_model(str(tmp_path / "l"), 2500, seed=4, compression="lz4", filter="standard:8",
               filter_per_level={0: "blocked:16", 2: None}, optimize_filters_for_hits=True)
    _run_model(str(tmp_path / "n"), 1500, seed=5, filter=None)
    _run_model(str(tmp_path / "p"), 3000, seed=6, partitioned_filters=True, filter_partition_blocks=2,
               background_compaction=False)


@pytest.mark.slow
def test_model_large(tmp_path):
    _run_model(str(tmp_path / "db"), 50000, seed=11)
