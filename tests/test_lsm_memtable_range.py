"""``MemTable.range_packed`` (an iterator's memtable run) against the per-key model: for each
key of the range in order, ``MemTable.get(key, snap)`` -- the newest version the snapshot may
see (``None``: the key is not here at ``snap``) -- with fast-path writes (no recorded sequence,
``base`` reported), recorded writes, deletions, history kept for snapshots, and bounds."""

from __future__ import annotations

import gc
import random

import numpy as np
import pytest

from bloomdb.lsm.memtable import MemTable


def _model(mem: MemTable, start, end, snap):
    out = []
    for k in sorted(mem.latest):
        if (start is None or k >= start) and (end is None or k < end):
            e = mem.get(k, snap)
            if e is not None:
                out.append((k, e[0], e[1]))
    return out


def _unpack(p):
    if p is None:
        return []
    kd, ko, trs, vd, vo = p
    assert kd.dtype == np.uint8 and vd.dtype == np.uint8 and trs.dtype == np.uint64
    assert ko.dtype == np.int64 and vo.dtype == np.int64
    assert kd.flags.writeable and vd.flags.writeable  # the scan kernels see one array type
    assert len(ko) == len(vo) == len(trs) + 1 and ko[0] == 0 and vo[0] == 0
    out = []
    for i in range(len(trs)):
        t = int(trs[i])
        v = bytes(vd[vo[i] : vo[i + 1]])
        assert t & 0xFF in (0, 1) and (t & 0xFF or v == b"")
        out.append((bytes(kd[ko[i] : ko[i + 1]]), t >> 8, v if t & 0xFF else None))
    return out


def _fill(rng: random.Random, base: int, n: int):
    """A memtable written the ways the store writes one: fast-path puts (``latest`` only, as
    ``DB.put`` inlines them), recorded puts and deletions, some while a snapshot is live
    (``keep_old``). Returns it, its last sequence and the snapshots taken."""
    mem = MemTable(1, base)
    seq = base - 1
    snaps = []
    live = False
    for _ in range(n):
        seq += 1
        k = b"k%03d" % rng.randrange(300)
        r = rng.random()
        if r < 0.02:
            snaps.append(seq - 1)
            live = True
        if not live and r < 0.5:  # the fast path: no sequence recorded (the store takes it only without snapshots)
            v = rng.randbytes(rng.randrange(0, 20))
            mem.latest[k] = v
            mem.bytes += len(k) + len(v)
        elif r < 0.7:
            mem.add(seq, k, None, live)
        else:
            mem.add(seq, k, rng.randbytes(rng.randrange(0, 20)), live)
    return mem, seq, snaps


@pytest.mark.parametrize("seed", range(8))
def test_range_packed_matches_the_per_key_model(seed):
    rng = random.Random(seed)
    base = rng.choice([1, 1000])
    mem, last, snaps = _fill(rng, base, rng.choice([50, 400, 3000]))
    bounds = [(None, None), (b"k100", None), (None, b"k200"), (b"k050", b"k051"), (b"k2", b"k1"), (b"z", None),
              (b"k1", b"k150\x00")]
    for snap in [last, (1 << 56) - 1, base - 1, 0] + snaps:
        for start, end in bounds:
            assert _unpack(mem.range_packed(start, end, snap)) == _model(mem, start, end, snap), (snap, start, end)


def test_range_packed_empty_and_keys_added_after_a_call():
    mem = MemTable(1, 5)
    assert mem.range_packed(None, None, 10) is None
    mem.latest[b"b"] = b"2"
    assert _unpack(mem.range_packed(None, None, 10)) == [(b"b", 5, b"2")]
    mem.latest[b"a"] = b"1"  # added since the last call: merged into the sorted keys by the next
    mem.add(9, b"c", None, False)
    assert _unpack(mem.range_packed(None, None, 10)) == [(b"a", 5, b"1"), (b"b", 5, b"2"), (b"c", 9, None)]
    assert _unpack(mem.range_packed(None, None, 8)) == [(b"a", 5, b"1"), (b"b", 5, b"2")]
    assert mem.range_packed(b"c\x00", None, 10) is None
    assert mem.range_packed(None, None, 4) is None  # a snapshot older than every write here


def test_range_packed_makes_no_tracked_object_per_entry():
    """A scan of a large memtable must not feed the collector per entry (a tuple per entry set off
    young collections and promoted objects into a full pass)."""
    mem = MemTable(1, 1)
    for i in range(20000):
        mem.latest[b"%08d" % i] = b"v" * 10
    mem.range_packed(None, None, 10)  # sorts the keys in (the SortedList's own nodes)
    gc.collect()
    gc.disable()  # the young generation's count then only grows: it counts tracked objects made
    try:
        before = gc.get_count()[0]
        p = mem.range_packed(None, None, 10)
        made = gc.get_count()[0] - before
        before = gc.get_count()[0]
        per_key = _model(mem, None, None, 10)  # the tuple-per-entry form, for scale
        made_model = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert made < 100 and made_model > 10000
    assert _unpack(p) == per_key
