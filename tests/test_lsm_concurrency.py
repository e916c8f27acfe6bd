"""Readers in threads while a writer and background compaction run; scans see one point in time."""

from __future__ import annotations

import threading

from bloomdb.lsm import DB, WriteBatch

from lsm_helpers import small_options


def test_readers_writer_compaction(tmp_path):
    db = DB.open(str(tmp_path / "db"), small_options(background_compaction=True))
    nkeys = 300
    rounds = 150
    errors = []
    done = threading.Event()
    # every key k%04d holds b"r%05d" for the round that last wrote it; a round rewrites all keys
    # in one batch, so a consistent scan sees one round value everywhere
    b = WriteBatch()
    for i in range(nkeys):
        b.put(b"k%04d" % i, b"r%05d" % 0)
    db.write(b)

    def writer():
        try:
            for r in range(1, rounds):
                b = WriteBatch()
                for i in range(nkeys):
                    b.put(b"k%04d" % i, b"r%05d" % r)
                db.write(b)
                db.put(b"extra%05d" % r, b"x")
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()

    def reader(seed):
        try:
            import random

            rng = random.Random(seed)
            last = 0
            while not done.is_set():
                if rng.random() < 0.3:
                    rows = [v for k, v in db.scan(b"k", b"l")]
                    assert len(rows) == nkeys and len(set(rows)) == 1, "scan saw two rounds"
                    r = int(rows[0][1:])
                    assert r >= last
                    last = r
                else:
                    with db.snapshot() as s:
                        ks = [b"k%04d" % rng.randrange(nkeys) for _ in range(20)]
                        vals = db.multi_get(ks, snapshot=s)
                        assert len(set(vals)) == 1 and None not in vals, "snapshot saw two rounds"
                        assert db.get(ks[0], snapshot=s) == vals[0]
                    v = db.get(b"k%04d" % rng.randrange(nkeys))
                    assert v is not None and int(v[1:]) >= last
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    db.wait_for_compactions()
    assert db.stats()["compactions"] > 0
    assert all(v == b"r%05d" % (rounds - 1) for _, v in db.scan(b"k", b"l"))
    db.close()
