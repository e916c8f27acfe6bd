"""bloomdb.hashing against the reference ``xxhash`` package."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomdb import hashing as H
from bloomdb.errors import InvalidArgument, KeyTypeError
from bloomdb.hashing import _kernels as K
from bloomdb.keys import KeyBatch, to_batches

MAX_LEN = 4096
SEEDS = [0, 1, 2**32 + 7, 2**63, 2**64 - 1]
U64 = (1 << 64) - 1


def ref3(b: bytes) -> int:
    return xxhash.xxh3_64_intdigest(b)


def ref64(b: bytes, seed: int = 0) -> int:
    return xxhash.xxh64_intdigest(b, seed=seed)


def le8(v: int) -> bytes:
    return (v & U64).to_bytes(8, "little")


@pytest.fixture(scope="module", autouse=True)
def _warm():
    H.warmup()


@pytest.fixture(scope="module")
def buf() -> np.ndarray:
    # one buffer; key of length n is buf[n : 2n] so starts vary (and are mostly unaligned)
    return np.random.default_rng(20240607).integers(0, 256, 2 * MAX_LEN + 64, dtype=np.uint8)


@pytest.fixture(scope="module")
def all_lengths(buf):
    """Every length 0..MAX_LEN, as (bytes list, data, int64 offsets) for the batch kernels."""
    keys = [buf[n : 2 * n].tobytes() for n in range(MAX_LEN + 1)]
    offsets = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k in keys], out=offsets[1:])
    data = np.frombuffer(b"".join(keys), np.uint8)
    return keys, data, offsets


# --------------------------------------------------------------------------------------------
# every length, every path
# --------------------------------------------------------------------------------------------


def test_xxh3_every_length_scalar_kernel_and_api(buf, all_lengths):
    keys = all_lengths[0]
    for n, k in enumerate(keys):
        want = ref3(k)
        assert K.xxh3_64_bytes(buf, n, n) == want, n
        assert H.xxh3_64(k) == want, n


def test_xxh3_every_length_batch(all_lengths):
    keys, data, offsets = all_lengths
    want = np.array([ref3(k) for k in keys], np.uint64)
    np.testing.assert_array_equal(H.hash_batch(KeyBatch(data=data, offsets=offsets)), want)
    np.testing.assert_array_equal(
        H.hash_batch(KeyBatch(data=data, offsets=offsets.astype(np.int32))), want
    )
    np.testing.assert_array_equal(H.xxh3_64_many(keys), want)
    np.testing.assert_array_equal(H.xxh3_64_many(pa.array(keys, pa.binary())), want)


@pytest.mark.parametrize("seed", [0, 1, 2**64 - 1])
def test_xxh64_every_length(buf, all_lengths, seed):
    keys, data, offsets = all_lengths
    want = np.array([ref64(k, seed) for k in keys], np.uint64)
    sd = np.uint64(seed)
    got = np.array([K.xxh64_bytes(buf, n, n, sd) for n in range(MAX_LEN + 1)], np.uint64)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(H.xxh64_many(keys, seed=seed), want)
    batch = KeyBatch(data=data, offsets=offsets.astype(np.int32))
    np.testing.assert_array_equal(H.hash_batch_xxh64(batch, seed), want)
    assert all(H.xxh64(k, seed=seed) == want[n] for n, k in enumerate(keys))


def test_path_boundaries_at_odd_offsets():
    """Keys at every start 0..15 in a buffer, for lengths around each path boundary."""
    raw = np.random.default_rng(5).integers(0, 256, 3000, dtype=np.uint8)
    for n in (0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 96, 97, 128, 129, 240, 241, 1024,
              1025, 2048, 2049):  # fmt: skip
        for start in range(16):
            b = raw[start : start + n].tobytes()
            assert K.xxh3_64_bytes(raw, start, n) == ref3(b), (n, start)
            assert K.xxh64_bytes(raw, start, n, np.uint64(3)) == ref64(b, 3), (n, start)


def test_long_keys_beyond_4096():
    rng = np.random.default_rng(9)
    for n in (5000, 65536, 100_003):
        b = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert H.xxh3_64(b) == ref3(b)
        assert H.xxh64(b, 12345) == ref64(b, 12345)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.integers(0, U64))
def test_property_arbitrary_bytes_and_seeds(b, seed):
    assert H.xxh3_64(b) == ref3(b)
    assert H.xxh64(b, seed=seed) == ref64(b, seed)
    assert H.xxh3_64_many([b, b"x" + b])[0] == ref3(b)
    assert H.xxh64_many([b], seed=seed)[0] == ref64(b, seed)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**63), U64), st.integers(0, U64))
def test_property_ints(v, seed):
    assert H.xxh3_64(v) == ref3(le8(v))
    assert K.xxh3_64_u64(np.uint64(v & U64)) == ref3(le8(v))
    assert H.xxh64(v, seed) == ref64(le8(v), seed)


# --------------------------------------------------------------------------------------------
# integers
# --------------------------------------------------------------------------------------------

INTS = [0, 1, -1, 5, 255, 256, -(2**63), 2**63 - 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF]


@pytest.mark.parametrize("v", INTS)
def test_int_key_is_its_8_byte_encoding(v):
    assert H.xxh3_64(v) == ref3(le8(v)) == H.hash64(le8(v))
    assert H.xxh64(v) == ref64(le8(v))
    assert H.xxh64(v, seed=2**64 - 1) == ref64(le8(v), 2**64 - 1)
    assert H.xxh3_64(np.uint64(v & U64)) == ref3(le8(v))


def test_negative_and_unsigned_alias():
    assert H.xxh3_64(-1) == H.xxh3_64(2**64 - 1)
    assert H.xxh3_64(-(2**63)) == H.xxh3_64(2**63)


def test_int_arrays():
    vals = np.array(
        [v for v in INTS if -(2**63) <= v < 2**63] + list(range(-50, 50)), dtype=np.int64
    )
    want = np.array([ref3(le8(int(v))) for v in vals], np.uint64)
    np.testing.assert_array_equal(H.xxh3_64_many(vals), want)
    np.testing.assert_array_equal(H.xxh3_64_many(vals.view(np.uint64)), want)
    np.testing.assert_array_equal(H.xxh3_64_many(list(int(v) for v in vals)), want)
    small = np.arange(-100, 100, dtype=np.int32)
    np.testing.assert_array_equal(
        H.xxh3_64_many(small), np.array([ref3(le8(int(v))) for v in small], np.uint64)
    )
    np.testing.assert_array_equal(
        H.xxh64_many(small, seed=9), np.array([ref64(le8(int(v)), 9) for v in small], np.uint64)
    )
    u = np.array([0, 2**63, 2**64 - 1, 12345], np.uint64)
    np.testing.assert_array_equal(
        H.xxh3_64_many(u), np.array([ref3(le8(int(v))) for v in u], np.uint64)
    )
    np.testing.assert_array_equal(
        H.xxh3_64_many(pa.array([1, -2, 3], pa.int64())),
        np.array([ref3(le8(v)) for v in (1, -2, 3)], np.uint64),
    )
    # strided input
    np.testing.assert_array_equal(H.xxh3_64_many(vals[::2]), want[::2])


def test_big_int_batch_matches_scalar_kernel():
    ints = np.random.default_rng(3).integers(0, 2**64, 10_000, dtype=np.uint64)
    got = H.xxh3_64_many(ints)
    sample = range(0, 10_000, 97)
    assert all(got[i] == ref3(le8(int(ints[i]))) for i in sample)
    got64 = H.xxh64_many(ints, seed=2**64 - 1)
    assert all(got64[i] == ref64(le8(int(ints[i])), 2**64 - 1) for i in sample)


# --------------------------------------------------------------------------------------------
# strings, Arrow, mixed lists
# --------------------------------------------------------------------------------------------

STRS = ["", "a", "héllo", "日本語のキー", "x" * 17, "y" * 130, "z" * 241, "key:000000000001"]


def _want_strs(strs, seed=None):
    enc = [s.encode() for s in strs]
    if seed is None:
        return np.array([ref3(b) for b in enc], np.uint64)
    return np.array([ref64(b, seed) for b in enc], np.uint64)


def test_str_scalar_is_utf8():
    for s in STRS:
        assert H.xxh3_64(s) == ref3(s.encode()) == H.xxh3_64(s.encode())
        assert H.xxh64(s, 77) == ref64(s.encode(), 77)
    assert H.xxh3_64(bytearray(b"abc")) == H.xxh3_64(memoryview(b"abc")) == ref3(b"abc")


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string()])
def test_arrow_strings_incl_slices(typ):
    arr = pa.array(STRS * 3, type=typ)
    want = _want_strs(STRS * 3)
    np.testing.assert_array_equal(H.xxh3_64_many(arr), want)
    np.testing.assert_array_equal(H.xxh64_many(arr, seed=5), _want_strs(STRS * 3, 5))
    sl = arr.slice(5, 11)  # offset != 0
    assert sl.offset == 5
    np.testing.assert_array_equal(H.xxh3_64_many(sl), want[5:16])
    want64 = _want_strs(STRS * 3, 2**64 - 1)
    np.testing.assert_array_equal(H.xxh64_many(sl, seed=2**64 - 1), want64[5:16])
    np.testing.assert_array_equal(H.xxh3_64_many(arr.slice(len(arr))), np.zeros(0, np.uint64))


@pytest.mark.parametrize("typ", [pa.binary(), pa.large_binary()])
def test_arrow_binary(typ):
    keys = [b"", b"\x00", b"\x00\x01\x02", bytes(range(256)) * 3]
    arr = pa.array(keys, type=typ)
    want = np.array([ref3(k) for k in keys], np.uint64)
    np.testing.assert_array_equal(H.xxh3_64_many(arr), want)
    np.testing.assert_array_equal(H.xxh3_64_many(arr.slice(1)), want[1:])


def test_chunked_arrays_concatenate_in_order():
    chunks = [STRS[:3], STRS[3:4], [], STRS[4:]]
    ch = pa.chunked_array([pa.array(c, pa.string()) for c in chunks], type=pa.string())
    np.testing.assert_array_equal(H.xxh3_64_many(ch), _want_strs(STRS))
    np.testing.assert_array_equal(H.xxh64_many(ch, seed=1), _want_strs(STRS, 1))
    # a chunk that is itself a slice
    big = pa.array(STRS * 2, pa.large_string())
    ch2 = pa.chunked_array([big.slice(2, 5), big.slice(9)])
    want = _want_strs(STRS * 2)
    np.testing.assert_array_equal(H.xxh3_64_many(ch2), np.concatenate([want[2:7], want[9:]]))
    empty = pa.chunked_array([], type=pa.string())
    assert H.xxh3_64_many(empty).shape == (0,)


def test_mixed_list_and_numpy_string_arrays():
    keys = ["abc", b"abc", 7, -7, "", b"\xff" * 20, 2**64 - 1]
    want = np.array(
        [ref3(b"abc"), ref3(b"abc"), ref3(le8(7)), ref3(le8(-7)), ref3(b""), ref3(b"\xff" * 20),
         ref3(le8(2**64 - 1))],
        np.uint64,
    )  # fmt: skip
    np.testing.assert_array_equal(H.xxh3_64_many(keys), want)
    np.testing.assert_array_equal(H.xxh3_64_many(tuple(keys)), want)
    np.testing.assert_array_equal(
        H.xxh64_many(keys, seed=3), np.array([ref64(x, 3) for x in _as_bytes(keys)], np.uint64)
    )
    np.testing.assert_array_equal(H.xxh3_64_many(np.array(STRS)), _want_strs(STRS))
    varr = np.frombuffer(b"ab\0c\0\0", dtype="V3")  # fixed width: NULs are part of the key
    np.testing.assert_array_equal(H.xxh3_64_many(varr), [ref3(b"ab\0"), ref3(b"c\0\0")])
    assert H.xxh3_64_many([]).shape == (0,)


def _as_bytes(keys):
    out = []
    for k in keys:
        out.append(k.encode() if isinstance(k, str) else le8(k) if isinstance(k, int) else k)
    return out


def test_hash_batch_out_and_kernels_with_writable_arrays():
    (batch,) = to_batches(["a", "bb", "ccc"])
    out = np.full(3, 7, np.uint64)
    assert H.hash_batch(batch, out=out) is out
    np.testing.assert_array_equal(out, [ref3(b"a"), ref3(b"bb"), ref3(b"ccc")])
    with pytest.raises(InvalidArgument):
        H.hash_batch(batch, out=np.empty(2, np.uint64))
    with pytest.raises(InvalidArgument):
        H.hash_batch(batch, out=np.empty(3, np.int64))
    # direct kernel calls with writable arrays (another numba specialisation) agree
    data = np.frombuffer(b"abbccc", np.uint8).copy()
    offs = np.array([0, 1, 3, 6], np.int64)
    o = np.empty(3, np.uint64)
    K.xxh3_64_batch_bytes(data, offs, o)
    np.testing.assert_array_equal(o, out)


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


def test_errors():
    with pytest.raises(KeyTypeError):
        H.xxh3_64(1.5)
    with pytest.raises(TypeError):
        H.xxh64(1.5)
    with pytest.raises(KeyTypeError):
        H.xxh3_64_many([1.5, 2.5])
    with pytest.raises(KeyTypeError):
        H.xxh3_64_many("abc")  # a single string is not a batch
    with pytest.raises(ValueError):
        H.xxh3_64(2**64)
    with pytest.raises(InvalidArgument):
        H.xxh3_64(-(2**63) - 1)
    with pytest.raises(ValueError):
        H.xxh3_64_many([1, 2**64])
    for bad in (-1, 2**64, 1.0, "0", None, True):
        with pytest.raises(InvalidArgument):
            H.xxh64(b"x", seed=bad)
        with pytest.raises(InvalidArgument):
            H.xxh64_many([b"x"], seed=bad)
    assert H.xxh64(b"x", seed=np.uint64(2**64 - 1)) == ref64(b"x", 2**64 - 1)
