"""The ``leveldb`` family: LevelDB's hash and filter byte for byte, and LevelDB's bloom_test."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from bloomdb import errors, filters
from bloomdb.filters import _leveldb_kernels as K
from bloomdb.filters.leveldb import LevelDBBloom, bloom_hashes, leveldb_hash
from bloomdb.keys import to_batches


@pytest.fixture(scope="module")
def vectors():
    from conftest import VECTORS

    path = VECTORS / "leveldb_bloom.json"
    if not path.is_file():
        pytest.skip(f"reference vectors not found at {path}")
    return json.loads(path.read_text())


def test_hash_vectors(vectors):
    assert vectors["hash_seed"] == 0xBC9F1D34
    keys = [bytes.fromhex(v["key_hex"]) for v in vectors["hash"]]
    want = [int(v["hash"]) for v in vectors["hash"]]
    assert len(keys) > 150
    assert [leveldb_hash(k) for k in keys] == want
    assert bloom_hashes(to_batches(keys)[0]).tolist() == want


def test_hash_test_cc_vectors():
    # leveldb util/hash_test.cc (unsigned tail bytes since LevelDB 1.18)
    assert leveldb_hash(b"") == 0xBC9F1D34
    assert leveldb_hash(b"\x62") == 0xEF1345C4
    assert leveldb_hash(b"\xc3\x97") == 0x5B663814
    assert leveldb_hash(b"\xe2\x99\xa5") == 0x323C078F
    assert leveldb_hash(b"\xe1\x80\xb9\x32") == 0xED21633A
    data = bytes([0x01, 0xC0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x14, 0, 0, 0, 0, 0, 0x04, 0,
                  0, 0, 0, 0x14, 0, 0, 0, 0x18, 0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0])
    assert leveldb_hash(data, seed=0x12345678) == 0xF333DABB
    # integer keys hash as their 8 little-endian bytes
    assert leveldb_hash(123456789) == leveldb_hash((123456789).to_bytes(8, "little"))


def test_filter_vectors(vectors):
    cases = vectors["filters"]
    assert len(cases) >= 50
    absent = [f"absent{i:06d}".encode() for i in range(200)]
    for case in cases:
        keys = [bytes.fromhex(k) for k in case["keys"]]
        want = bytes.fromhex(case["filter_hex"])
        f = LevelDBBloom.build(keys, case["bits_per_key"])
        assert f.to_leveldb_bytes() == want, (case["bits_per_key"], len(keys))
        g = LevelDBBloom.from_leveldb_bytes(want)
        verdicts = [int(x) for x in g.might_contain_many(absent)]
        assert verdicts == [int(x) for x in case["absent_probe_results"]], (case["bits_per_key"], len(keys))
        if keys:
            assert g.might_contain_many(keys).all()


def test_reserved_and_short_filters():
    for raw in (b"", b"\x07"):
        f = LevelDBBloom.from_leveldb_bytes(raw)
        assert not f.might_contain_many(["a", "b", 1]).any()
        assert f.to_leveldb_bytes() == raw
    for k in (31, 200, 255):
        f = LevelDBBloom.from_leveldb_bytes(b"\x00" * 8 + bytes([k]))
        assert f.might_contain_many(["a", "b", 1]).all() and f.estimated_fpr() == 1.0
    # and through the envelope
    f = LevelDBBloom.from_leveldb_bytes(b"")
    assert filters.from_bytes(f.to_bytes()).to_leveldb_bytes() == b""


def test_static():
    f = filters.build("leveldb:10", ["a", "b"])
    with pytest.raises(errors.StaticFilterError):
        f.add("c")
    with pytest.raises(errors.StaticFilterError):
        f.add_many(["c"])
    with pytest.raises(errors.StaticFilterError):
        filters.create("leveldb:10", capacity=10)
    for bad in (0, -1, 2.5, "x", True):
        with pytest.raises(errors.InvalidArgument):
            LevelDBBloom.build(["a"], bad)
    assert f.num_probes == 6 and LevelDBBloom.build(["a"], 44).num_probes == 30


def test_kernel_level_probe():
    f = LevelDBBloom.build([f"k{i}" for i in range(100)], 10)
    h = bloom_hashes(to_batches([f"k{i}" for i in range(300)])[0])
    single = np.array([K.key_may_match(f.kernel_args, x) for x in h])
    assert np.array_equal(single, f.might_contain_hashes(h))
    assert single[:100].all()


# ---- port of leveldb util/bloom_test.cc (policy = NewBloomFilterPolicy(10)) -------------------


def _key(i: int) -> bytes:
    return struct.pack("<I", i)  # EncodeFixed32


def _fp_rate(f: LevelDBBloom) -> float:
    probes = [_key(i + 1_000_000_000) for i in range(10_000)]
    return float(f.might_contain_many(probes).mean())


def test_bloom_test_empty_filter():
    f = LevelDBBloom.from_leveldb_bytes(b"")  # BloomTest with no keys never builds: filter_ is ""
    assert not f.might_contain("hello") and not f.might_contain("world")


def test_bloom_test_small():
    f = LevelDBBloom.build([b"hello", b"world"], 10)
    assert f.might_contain(b"hello") and f.might_contain(b"world")
    assert not f.might_contain(b"x") and not f.might_contain(b"foo")


def _next_length(length: int) -> int:
    if length < 10:
        return length + 1
    if length < 100:
        return length + 10
    if length < 1000:
        return length + 100
    return length + 1000


def test_bloom_test_varying_lengths():
    mediocre = good = 0
    lengths = []
    length = 1
    while length <= 10_000:
        lengths.append(length)
        keys = [_key(i) for i in range(length)]
        f = LevelDBBloom.build(keys, 10)
        assert len(f.to_leveldb_bytes()) <= (length * 10 // 8) + 40, length
        assert f.might_contain_many(keys).all(), length
        rate = _fp_rate(f)
        assert rate <= 0.02, (length, rate)
        if rate > 0.0125:
            mediocre += 1
        else:
            good += 1
        length = _next_length(length)
    assert len(lengths) == 37
    assert mediocre <= good // 5, (good, mediocre)
