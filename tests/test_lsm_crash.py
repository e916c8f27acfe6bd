"""Crash safety: a forked child writes batches with ``sync=True`` and is killed with SIGKILL at
random moments (while flushes and compactions run in its background thread). After every kill
the store reopens with every acknowledged batch present and no batch half-applied."""

from __future__ import annotations

import os
import random
import signal
import struct
import time

import pytest

from bloomdb.lsm import DB, Options, WriteBatch


def _opts():
    return Options(memtable_bytes=3000, table_bytes=3000, level1_bytes=9000, level_ratio=3,
                   block_size=256, level0_trigger=2, level0_stop=4)


def _k(c, j, m):
    return b"c%03d-b%05d-%d" % (c, j, m)


def _child(path, cycle, wfd):
    try:
        db = DB.open(path, _opts())
        j = 0
        while True:
            b = WriteBatch()
            for m in range(3):
                b.put(_k(cycle, j, m), b"v%d" % j * 8)
            if j:
                b.delete(_k(cycle, j - 1, 0))
            db.write(b, sync=True)
            os.write(wfd, struct.pack("<I", j))  # acknowledged
            j += 1
    finally:
        os._exit(0)


def _check(db, cycle, acked):
    """Batches 0..acked are applied; batch acked+1 is all-or-nothing; later ones absent."""
    applied = []
    for j in range(acked + 3):
        present = [db.get(_k(cycle, j, m)) is not None for m in (1, 2)]
        assert present[0] == present[1], f"batch {j} half-applied"
        applied.append(present[0])
    for j in range(acked + 1):
        assert applied[j], f"acknowledged batch {j} of {acked} lost"
        zero = db.get(_k(cycle, j, 0))
        nxt = j + 1 < len(applied) and applied[j + 1]
        assert (zero is None) == nxt, f"batch {j}: key 0 {'present' if zero else 'absent'}, next applied={nxt}"
    assert not applied[acked + 2], "a batch the child never started is present"


def _cycles(tmp_path, n, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "db")
    DB.open(path, _opts()).close()
    kills = 0
    acked_cycles = []
    for cycle in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _child(path, cycle, w)
        os.close(w)
        time.sleep(rng.uniform(0.02, 0.25))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        kills += 1
        data = b""
        while chunk := os.read(r, 1 << 16):
            data += chunk
        os.close(r)
        acked = struct.unpack_from("<I", data, len(data) - 4 - len(data) % 4)[0] if len(data) >= 4 else -1
        with DB.open(path, _opts()) as db:
            if acked >= 0:
                _check(db, cycle, acked)
                acked_cycles.append((cycle, acked))
            # earlier cycles stay intact too
            if acked_cycles:
                c, a = rng.choice(acked_cycles)
                assert db.get(_k(c, a, 1)) is not None and db.get(_k(c, 0, 1)) is not None
    return kills


def test_sigkill_crash_50(tmp_path):
    assert _cycles(tmp_path, 50, seed=1) == 50


@pytest.mark.slow
def test_sigkill_crash_many(tmp_path):
    assert _cycles(tmp_path, 150, seed=2) == 150
