"""Pickle: protocol 5 ships a filter's payload out of band, referencing the filter's own memory
(no copy for multiprocessing / Dask), checked against its CRC on arrival; protocols < 5 keep
working; ``on_full`` survives pickle and the byte envelope."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from bloomdb import filters
from bloomdb.errors import CorruptionError

from filter_families import all_families, make_filled

KEYS = [f"k{i}" for i in range(3000)]


@pytest.mark.parametrize("name", all_families())
def test_out_of_band_buffers_reference_the_filters_memory(name):
    f = make_filled(name, KEYS, capacity=3000)
    bufs: list[pickle.PickleBuffer] = []
    data = pickle.dumps(f, protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1
    raw = bufs[0].raw()
    assert raw.nbytes == f.size_bytes and len(data) < 1024  # the payload is not in the stream
    if name != "scalable":  # its levels are separate arrays: one copy joins them
        assert np.frombuffer(raw, np.uint8).ctypes.data == f._payload().ctypes.data
    g = pickle.loads(data, buffers=bufs)
    assert g == f and g.might_contain_many(KEYS).all() and g.count == f.count


@pytest.mark.parametrize("name", all_families())
@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_every_protocol_round_trips(name, protocol):
    f = make_filled(name, KEYS, capacity=3000)
    g = pickle.loads(pickle.dumps(f, protocol=protocol))
    assert g == f and g.to_bytes() == f.to_bytes()
    if not f.static:
        g.add("new")  # an independent, writable copy
        assert g.might_contain("new") and g.count == f.count + 1


def test_a_torn_buffer_is_refused_on_arrival():
    f = make_filled("blocked", KEYS, capacity=3000)
    bufs: list[pickle.PickleBuffer] = []
    data = pickle.dumps(f, protocol=5, buffer_callback=bufs.append)
    torn = bytearray(bufs[0].raw())
    torn[100] ^= 0xFF
    with pytest.raises(CorruptionError, match="checksum"):
        pickle.loads(data, buffers=[torn])
    with pytest.raises(CorruptionError, match="payload is"):
        pickle.loads(data, buffers=[bytes(torn[:-64])])


def test_misaligned_or_read_only_buffers_are_copied_once():
    f = make_filled("blocked", KEYS, capacity=3000)
    bufs: list[pickle.PickleBuffer] = []
    data = pickle.dumps(f, protocol=5, buffer_callback=bufs.append)
    for buf in (bytes(bufs[0].raw()), memoryview(bytearray(b"x" + bytes(bufs[0].raw())))[1:]):
        g = pickle.loads(data, buffers=[buf])
        assert g == f and g._payload().ctypes.data % 64 == 0
        g.add("more")  # writable, and its own memory
        assert g.might_contain("more") and g.count == f.count + 1 and f.count == len(KEYS)


def test_multiprocessing_round_trip():
    import multiprocessing as mp

    f = make_filled("blocked", KEYS, capacity=3000)
    with mp.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_count_hits, (f, KEYS[:100])) == 100


def _count_hits(f, keys):
    return int(f.might_contain_many(keys).sum())


@pytest.mark.parametrize("name", [n for n in all_families() if not filters.family(n).static])
@pytest.mark.parametrize("mode", ["raise", "ignore"])
def test_on_full_survives_bytes_files_and_pickle(name, mode, tmp_path):
    f = make_filled(name, KEYS, capacity=3000)
    f.on_full = mode
    path = tmp_path / "f.blm"
    f.save(path)
    for g in (filters.from_bytes(f.to_bytes()), filters.open(path), filters.open(path, mmap=False),
              pickle.loads(pickle.dumps(f, protocol=4)), pickle.loads(pickle.dumps(f, protocol=5)), f.copy()):
        assert g.on_full == mode


def test_old_envelopes_read_as_warn_and_the_byte_is_covered_by_the_checksum():
    f = make_filled("blocked", KEYS, capacity=3000)
    data = bytearray(f.to_bytes())
    assert data[5] == 0  # "warn" writes what the reserved byte always held: old files are unchanged
    assert filters.from_bytes(bytes(data)).on_full == "warn"
    data[5] = 1
    with pytest.raises(CorruptionError, match="header checksum"):
        filters.from_bytes(bytes(data))
