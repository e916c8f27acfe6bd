"""bloomdb.recycled: arrays on recycled memory never share bytes with a live array (or with any
view numpy or Arrow made of one), and memory of dead arrays is reused."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pyarrow as pa
import pytest

from bloomdb import recycled
from bloomdb.errors import InvalidArgument

BIG = recycled.MIN_BYTES // 8 * 3  # int64 items of a request the pool serves (not np.empty)


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_small_requests_are_plain_numpy():
    a = recycled.empty(10, np.int32)
    assert a.shape == (10,) and a.dtype == np.int32 and a.flags.writeable and a.flags.c_contiguous


def test_live_arrays_never_overlap_and_keep_their_values():
    live = []
    for i in range(200):
        n = BIG + (i * 7919) % 50_000
        a = recycled.empty(n, np.int64)
        assert a.shape == (n,) and a.flags.writeable and a.flags.c_contiguous
        a[:] = i
        if i % 3:
            live.append((i, a))  # the others die at once and their memory is carved again
    for i, a in live:
        assert (a == i).all()
    spans = sorted((_addr(a), _addr(a) + a.nbytes) for _, a in live)
    assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:]))


def test_views_keep_the_memory_alive():
    a = recycled.empty(BIG, np.int64)
    a[:] = np.arange(BIG)
    arrow = pa.Array.from_buffers(pa.int64(), BIG, [None, pa.py_buffer(a[:])])
    shifted = a.view(np.uint64)[5:]
    del a
    gc.collect()
    others = [recycled.empty(BIG, np.int64) for _ in range(40)]
    for o in others:
        o[:] = -1
    assert arrow.to_numpy()[-1] == BIG - 1 and (arrow.to_numpy() == np.arange(BIG)).all()
    assert shifted[0] == 5 and shifted[-1] == BIG - 1


def test_dead_arrays_memory_is_reused_and_released():
    recycled.release()
    first = recycled.empty(recycled.SLAB_BYTES // 8, np.int64)  # its own map (above half a slab)
    addr = _addr(first)
    del first
    again = recycled.empty(recycled.SLAB_BYTES // 8, np.int64)
    assert _addr(again) == addr  # the same map, not a new one
    del again
    assert recycled.stats()["free_bytes"] >= recycled.SLAB_BYTES
    assert recycled.release() >= recycled.SLAB_BYTES
    assert recycled.stats() == {"free_bytes": 0, "free_slabs": 0}


def test_retain_cap():
    old = recycled.retain_bytes
    try:
        recycled.set_retain_bytes(0)
        a = recycled.empty(recycled.SLAB_BYTES // 4, np.int64)
        del a
        assert recycled.stats()["free_bytes"] == 0
        with pytest.raises(InvalidArgument):
            recycled.set_retain_bytes(-1)
        with pytest.raises(InvalidArgument):
            recycled.set_retain_bytes(True)
    finally:
        recycled.set_retain_bytes(old)


def test_threads():
    errors = []

    def work(t):
        try:
            for i in range(150):
                a = recycled.empty(BIG + t, np.int64)
                a[:] = t * 1000 + i
                b = recycled.empty(BIG, np.int32)
                b[:] = t
                assert (a == t * 1000 + i).all() and (b == t).all()
        except AssertionError as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
