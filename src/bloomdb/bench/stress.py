"""db_stress: the store against a dict under random operations, and under SIGKILL.

* :func:`model_check`: random put/delete/batch/get/multi_get/scan/snapshot ops with tiny memtables
  (flushes and compactions all the time), each read compared with a dict; returns the number of
  divergences (0 is the only correct answer) and raises nothing on a mismatch so the tool can
  report them all.
* :func:`kill_check`: a forked child writes batches (puts, a delete, a range delete) with ``sync=True`` and reports each
  acknowledged batch through a pipe; it is killed with SIGKILL after a random delay; the parent
  reopens the store and checks every acknowledged batch is present and the in-flight one is
  all-or-nothing. POSIX only (``os.fork``).
"""

from __future__ import annotations

import os
import random
import signal
import struct
import time

from ..lsm import DB, Options, WriteBatch
from ..lsm.fs import RealFS


def stress_options(**kw) -> Options:
    base = dict(memtable_bytes=4096, table_bytes=4096, level1_bytes=12000, level_ratio=4, block_size=256,
                level0_trigger=3, level0_stop=6)
    base.update(kw)
    return Options(**base)


def model_check(path: str, ops: int, seed: int = 0, report=print, options: Options | None = None, tick=None) -> int:
    """Run ``ops`` random operations against a dict; returns the number of divergences.

    The op mix: puts, deletes, range deletes (alone and in batches), write batches, gets, multi_gets, forward/reverse range scans,
    snapshots (gets and scans against frozen copies of the dict), flushes and close/reopen; at the
    end a full scan, ``compact_range``, another full scan and a ``multi_get`` of every key.
    ``options`` defaults to :func:`stress_options` (tiny memtables: constant flushes/compactions).
    ``tick(n)``, if given, is called after every 1,000 operations with the count done since.
    """
    rng = random.Random(seed)
    model: dict[bytes, bytes] = {}
    snaps: list = []  # (snapshot, frozen model)
    bad = 0
    opts = options or stress_options(fs=RealFS(fsync=False))
    db = DB.open(path, opts)
    nkeys = max(50, ops // 8)

    def key():
        return b"k%06d" % rng.randrange(nkeys) + (b"x" * rng.randrange(3))

    def span():
        i = rng.randrange(nkeys)
        return b"k%06d" % i, b"k%06d" % (i + rng.randrange(1, 80))

    def check(ok, what):
        nonlocal bad
        if not ok:
            bad += 1
            report(f"divergence: {what}")

    try:
        for i in range(ops):
            if tick is not None and i and i % 1000 == 0:
                tick(1000)
            r = rng.random()
            if r < 0.45:
                k, v = key(), rng.randbytes(rng.randrange(40))
                db.put(k, v)
                model[k] = v
            elif r < 0.535:
                k = key()
                db.delete(k)
                model.pop(k, None)
            elif r < 0.55:
                a, b2 = span()
                db.delete_range(a, b2)
                _drop_range(model, a, b2)
            elif r < 0.62:
                b = WriteBatch()
                for _ in range(rng.randrange(1, 6)):
                    k = key()
                    x = rng.random()
                    if x < 0.65:
                        v = rng.randbytes(8)
                        b.put(k, v)
                        model[k] = v
                    elif x < 0.9:
                        b.delete(k)
                        model.pop(k, None)
                    else:
                        a, b2 = span()
                        b.delete_range(a, b2)
                        _drop_range(model, a, b2)
                db.write(b)
            elif r < 0.85:
                k = key()
                check(db.get(k) == model.get(k), f"op {i}: get {k!r}")
            elif r < 0.90:
                ks = [key() for _ in range(rng.randrange(1, 30))]
                check(db.multi_get(ks) == [model.get(k) for k in ks], f"op {i}: multi_get")
            elif r < 0.91:  # a prefix iteration (prefix filters skip tables when the store has an extractor)
                p = key()[: rng.randrange(1, 9)]
                rev = rng.random() < 0.5
                want = sorted(((k, v) for k, v in model.items() if k.startswith(p)), reverse=rev)
                check(list(db.iterator(prefix=p, reverse=rev)) == want, f"op {i}: iterator(prefix={p!r}, reverse={rev})")
            elif r < 0.93:
                a, b2 = span()
                rev = rng.random() < 0.5
                want = sorted(((k, v) for k, v in model.items() if a <= k < b2), reverse=rev)
                check(list(db.scan(a, b2, reverse=rev)) == want, f"op {i}: scan {a!r}..{b2!r} reverse={rev}")
            elif r < 0.95:
                if len(snaps) < 4:
                    snaps.append((db.snapshot(), dict(model)))
                else:
                    snaps.pop(0)[0].close()
            elif r < 0.99 and snaps:
                s, frozen = rng.choice(snaps)
                k = key()
                check(db.get(k, snapshot=s) == frozen.get(k), f"op {i}: snapshot get {k!r}")
                if rng.random() < 0.2:
                    a, b2 = span()
                    want = sorted((k, v) for k, v in frozen.items() if a <= k < b2)
                    check(list(db.scan(a, b2, snapshot=s)) == want, f"op {i}: snapshot scan")
            elif rng.random() < 0.8:
                db.flush()
            else:
                db.close()
                for s, _ in snaps:
                    s.close()
                snaps.clear()
                db = DB.open(path, opts)
        check(list(db.scan()) == sorted(model.items()), "final full scan")
        db.compact_range()
        check(list(db.scan()) == sorted(model.items()), "full scan after compact_range")
        check(db.multi_get(sorted(model)) == [model[k] for k in sorted(model)], "final multi_get")
        if ops >= 1000:
            check(db.stats()["compactions"] > 0, "no compaction ran (the stress options should force many)")
    finally:
        for s, _ in snaps:
            s.close()
        db.close()
    return bad


def _drop_range(model: dict, a: bytes, b: bytes) -> None:
    for k in [k for k in model if a <= k < b]:
        del model[k]


def _key(c: int, j: int, m: int) -> bytes:
    return b"c%05d-b%06d-%d" % (c, j, m)


def _child(path: str, cycle: int, wfd: int) -> None:
    try:
        db = DB.open(path, stress_options(memtable_bytes=3000, table_bytes=3000, level0_trigger=2, level0_stop=4))
        j = 0
        while True:
            b = WriteBatch()
            for m in range(4):
                b.put(_key(cycle, j, m), b"v%d" % j * 8)
            if j:
                b.delete(_key(cycle, j - 1, 0))
                b.delete_range(_key(cycle, j - 1, 3), _key(cycle, j - 1, 4))  # a range tombstone
            db.write(b, sync=True)
            os.write(wfd, struct.pack("<I", j))
            j += 1
    finally:
        os._exit(0)


def verify_cycle(db, cycle: int, acked: int) -> list[str]:
    """Problems found for a killed cycle: lost acknowledged batches, half-applied batches."""
    problems = []
    applied = []
    for j in range(acked + 3):
        present = [db.get(_key(cycle, j, m)) is not None for m in (1, 2)]
        if present[0] != present[1]:
            problems.append(f"cycle {cycle}: batch {j} half-applied")
        applied.append(present[0])
    for j in range(acked + 1):
        if not applied[j]:
            problems.append(f"cycle {cycle}: acknowledged batch {j} lost")
        if (db.get(_key(cycle, j, 0)) is None) != applied[j + 1]:
            problems.append(f"cycle {cycle}: batch {j + 1} applied partially (its delete)")
        if (db.get(_key(cycle, j, 3)) is None) != applied[j + 1]:
            problems.append(f"cycle {cycle}: batch {j + 1} applied partially (its range delete)")
    if applied[acked + 2]:
        problems.append(f"cycle {cycle}: a batch never started is present")
    return problems


def run_and_kill(child, seconds: float) -> bytes:
    """Fork a child that runs ``child(write_fd)`` (it must never return: ``os._exit``), SIGKILL it
    after ``seconds`` and return everything it wrote to the pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        os.close(r)
        child(w)
    os.close(w)
    time.sleep(seconds)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    return data


def kill_check(path: str, kills: int, kill_every: float = 0.25, seed: int = 0, report=print, tick=None) -> int:
    """Kill a writing child ``kills`` times (after 0.02..``kill_every`` s); returns problems found.
    ``tick(1)``, if given, is called after every cycle."""
    rng = random.Random(seed)
    DB.open(path, stress_options()).close()
    bad = 0
    acked_cycles: list[tuple[int, int]] = []
    for cycle in range(kills):
        data = run_and_kill(lambda w: _child(path, cycle, w), rng.uniform(0.02, max(0.03, kill_every)))
        acked = struct.unpack_from("<I", data, (len(data) // 4 - 1) * 4)[0] if len(data) >= 4 else -1
        with DB.open(path, stress_options()) as db:
            if acked >= 0:
                for p in verify_cycle(db, cycle, acked):
                    bad += 1
                    report(p)
                acked_cycles.append((cycle, acked))
            if acked_cycles:  # an earlier cycle's batches survive the later kills too
                c, a = rng.choice(acked_cycles)
                if db.get(_key(c, a, 1)) is None or db.get(_key(c, 0, 1)) is None:
                    bad += 1
                    report(f"cycle {cycle}: acknowledged batches of earlier cycle {c} lost")
        if tick is not None:
            tick(1)
    return bad
