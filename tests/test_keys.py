"""Key conversion: every accepted form, zero-copy where promised, clear errors otherwise."""

from __future__ import annotations

import array

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bloomdb import errors, filters
from bloomdb.keys import encode_key, to_batches


def as_bytes(keys):
    out = []
    for b in to_batches(keys):
        out.extend(b.as_bytes_list())
    return out


def test_encode_key():
    assert encode_key(b"ab") == b"ab"
    assert encode_key("é") == "é".encode()
    assert encode_key(-1) == 2**64 - 1
    assert encode_key(np.int32(-2)) == 2**64 - 2
    assert encode_key(bytearray(b"x")) == b"x"
    assert encode_key(memoryview(b"xy")) == b"xy"
    for bad in (1.0, None, True, np.bool_(True), object(), [1]):
        with pytest.raises(errors.KeyTypeError):
            encode_key(bad)
    for bad in (2**64, -(2**63) - 1):
        with pytest.raises(errors.InvalidArgument):
            encode_key(bad)


def test_int_arrays_are_views():
    a = np.arange(10, dtype=np.int64)
    (b,) = to_batches(a)
    assert b.is_int and np.shares_memory(b.ints, a)
    u = np.arange(10, dtype=np.uint64)
    assert np.shares_memory(to_batches(u)[0].ints, u)
    small = np.array([-1, 2], dtype=np.int8)
    assert to_batches(small)[0].ints.tolist() == [2**64 - 1, 2]


def test_int_lists():
    (b,) = to_batches([1, 2, 3])
    assert b.is_int and b.ints.tolist() == [1, 2, 3]
    assert to_batches([2**64 - 1, 5])[0].ints.tolist() == [2**64 - 1, 5]
    assert to_batches([-1, 2**63])[0].ints.tolist() == [2**64 - 1, 2**63]
    with pytest.raises(errors.KeyTypeError):
        to_batches([1, 2.0])
    with pytest.raises(errors.KeyTypeError):
        to_batches([1, True])
    with pytest.raises(errors.InvalidArgument):
        to_batches([1, 2**64])


def test_string_forms_agree():
    words = ["", "a", "héllo", "x" * 50]
    expect = [w.encode() for w in words]
    assert as_bytes(words) == expect
    assert as_bytes(tuple(words)) == expect
    assert as_bytes(np.array(words)) == expect
    assert as_bytes(np.array(words, dtype=object)) == expect
    assert as_bytes(pa.array(words)) == expect
    assert as_bytes(pa.array(words, type=pa.large_string())) == expect
    assert as_bytes(pa.array(expect, type=pa.binary())) == expect
    assert as_bytes(pa.array(expect, type=pa.large_binary())) == expect
    assert as_bytes(pa.chunked_array([words[:2], words[2:]])) == expect
    assert as_bytes(pa.array(words)[1:3]) == expect[1:3]
    assert as_bytes(np.frombuffer(b"ab\0c\0\0", dtype="V3")) == [b"ab\0", b"c\0\0"]
    with pytest.raises(errors.KeyTypeError, match="NUL"):  # numpy strips trailing NULs of S items
        to_batches(np.array([b"ab", b"c"]))


def test_arrow_strings_are_zero_copy():
    arr = pa.array(["alpha", "beta"] * 100)
    (b,) = to_batches(arr)
    assert b.data.ctypes.data == arr.buffers()[2].address
    assert b.offsets.dtype == np.int32


def test_mixed_list():
    keys = ["a", b"b", 5, -1]
    assert as_bytes(keys) == [b"a", b"b", (5).to_bytes(8, "little"), b"\xff" * 8]


def test_bad_batches():
    for bad in ("abc", b"abc", 5):
        with pytest.raises(errors.KeyTypeError):
            to_batches(bad)
    with pytest.raises(errors.KeyTypeError):
        to_batches(np.array([1.5]))
    with pytest.raises(errors.KeyTypeError):
        to_batches(pa.array([1.5]))
    with pytest.raises(errors.InvalidArgument):
        to_batches(pa.array(["a", None]))
    with pytest.raises(errors.KeyTypeError):
        to_batches(["a", None])
    with pytest.raises(errors.KeyTypeError):
        to_batches(object())


def test_empty_batches():
    assert sum(len(b) for b in to_batches([])) == 0
    assert sum(len(b) for b in to_batches(np.array([], dtype=np.int64))) == 0
    assert sum(len(b) for b in to_batches(pa.array([], type=pa.string()))) == 0


# ---- one buffer is one bytes key everywhere ------------------------------------------------

_WRAPPERS = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview": memoryview,
    "array('B')": lambda b: array.array("B", b),
    "np.bytes_": np.bytes_,
    "pyarrow.Buffer": pa.py_buffer,
    "pyarrow scalar": lambda b: pa.scalar(b, pa.binary()),
    "0-d S array": lambda b: np.array(b, dtype=f"S{max(1, len(b))}"),
}
_MUTABLE = [i.name for i in filters.available() if not i.static]


@pytest.mark.parametrize("wrap", list(_WRAPPERS), ids=list(_WRAPPERS))
def test_a_buffer_is_one_bytes_key(wrap):
    key = _WRAPPERS[wrap](b"xyz")
    assert encode_key(key) == b"xyz"
    assert to_batches([key])[0].as_bytes_list() == [b"xyz"]
    with pytest.raises(errors.KeyTypeError):  # one key where a batch is expected: never its byte values
        to_batches(key)


@pytest.mark.parametrize("name", _MUTABLE)
@pytest.mark.parametrize("wrap", list(_WRAPPERS), ids=list(_WRAPPERS))
def test_add_add_many_and_queries_agree_on_buffers(name, wrap):
    make = _WRAPPERS[wrap]
    spec = filters.family(name).example_spec
    one = filters.create(spec, capacity=100)
    one.add(make(b"xyz"))
    many = filters.create(spec, capacity=100)
    many.add_many([make(b"xyz")])
    plain = filters.create(spec, capacity=100)
    plain.add(b"xyz")
    assert one.to_bytes() == many.to_bytes() == plain.to_bytes()
    assert one.might_contain(make(b"xyz")) and one.might_contain(b"xyz")
    assert one.might_contain_many([make(b"xyz"), b"xyz"]).all()
    before = one.to_bytes()
    for call in (one.add_many, one.might_contain_many):
        with pytest.raises(errors.KeyTypeError):
            call(make(b"xyz"))  # used to add / query the integers 120, 121, 122
    assert one.to_bytes() == before
    assert not one.might_contain_many([120, 121, 122]).all()


def test_numpy_arrays_stay_batches_and_zero_d_arrays_are_one_key():
    u8 = np.frombuffer(b"xyz", dtype=np.uint8)
    assert to_batches(u8)[0].ints.tolist() == [120, 121, 122]  # a uint8 array is integers
    with pytest.raises(errors.KeyTypeError):
        encode_key(u8)  # ... so never one bytes key
    assert encode_key(np.array(5)) == 5 == encode_key(pa.scalar(5))
    assert encode_key(np.array("héllo")) == "héllo".encode()
    for single in (np.array(5), pa.scalar(5), pa.scalar("a")):
        with pytest.raises(errors.KeyTypeError):
            to_batches(single)
    for bad in (np.float64(1.0), np.bool_(True), pa.scalar(None, pa.binary()), pa.scalar(1.5)):
        with pytest.raises(errors.KeyTypeError):
            encode_key(bad)


@given(data=st.binary(max_size=40), wrap=st.sampled_from(sorted(set(_WRAPPERS) - {"np.bytes_", "0-d S array"})))
def test_buffers_hash_as_their_bytes(data, wrap):
    # (numpy's S type drops trailing NUL bytes, so np.bytes_ / S arrays are left out here)
    f = filters.create("blocked:10", capacity=10)
    f.add(_WRAPPERS[wrap](data))
    assert f.might_contain(data)
    assert f.might_contain_many([_WRAPPERS[wrap](data)])[0]
