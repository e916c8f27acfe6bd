"""The one checksum module (:mod:`bloomdb.checksum`): ``crc32c_ranges`` -- many ranges of one
buffer in one call (a table's data blocks on their first read) -- against the ``crc32c``
library, on the kernel path and the library loop alike."""

from __future__ import annotations

import numpy as np
import pytest
from crc32c import crc32c as lib

from bloomdb import checksum


@pytest.mark.parametrize("hw", [True, False])
def test_crc32c_ranges_match_the_library(monkeypatch, hw):
    if hw and not checksum.HW_RANGES:
        pytest.skip("no SSE4.2 on this host: the kernel path is not used")
    monkeypatch.setattr(checksum, "HW_RANGES", hw)
    rng = np.random.default_rng(7)
    buf = rng.integers(0, 256, 70_000, dtype=np.uint8)
    starts, ends = [], []
    for n in list(range(0, 40)) + [4095, 4096, 4097, 65_536]:  # every tail length, unaligned starts
        a = int(rng.integers(0, buf.shape[0] - n))
        starts.append(a)
        ends.append(a + n)
    starts.append(buf.shape[0] - 3)  # a range ending at the buffer's end
    ends.append(buf.shape[0])
    got = checksum.crc32c_ranges(buf, np.array(starts, np.int64), np.array(ends, np.int64))
    assert got.dtype == np.uint32
    assert got.tolist() == [lib(buf[a:b].tobytes()) for a, b in zip(starts, ends)]
    assert checksum.crc32c_ranges(buf, np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0,)


# -- the three-stream kernel (:mod:`bloomdb._checksum_kernels`) -------------------------------------


def _raw(state: int, data: bytes) -> int:
    """The CRC32C register after ``data`` from register ``state`` (no pre/post inversion)."""
    return ~lib(data, ~state & 0xFFFFFFFF) & 0xFFFFFFFF


def _shift_constant(nbytes: int) -> int:
    """The 32-bit ``K`` with ``crc32_u64(0, clmul(c, K))`` == the register ``c`` after ``nbytes``
    zero bytes, solved over GF(2) from the library alone (the instruction's step on a 64-bit
    word ``v`` from register 0 is ``_raw(0, v as 8 little-endian bytes)``)."""
    step = [_raw(0, (1 << i).to_bytes(8, "little")) for i in range(32)]  # column i: K = 1 << i
    basis: dict[int, tuple[int, int]] = {}
    for i, v in enumerate(step):
        comb = 1 << i
        for bit in sorted(basis, reverse=True):
            if v >> bit & 1:
                v, comb = v ^ basis[bit][0], comb ^ basis[bit][1]
        if v:
            basis[v.bit_length() - 1] = (v, comb)
    v, k = _raw(1, bytes(nbytes)), 0  # clmul(1, K) == K
    for bit in sorted(basis, reverse=True):
        if v >> bit & 1:
            v, k = v ^ basis[bit][0], k ^ basis[bit][1]
    assert v == 0
    return k


def _clmul_py(a: int, b: int) -> int:
    r = 0
    for i in range(32):
        if a >> i & 1:
            r ^= b << i
    return r


def test_the_join_constants_are_the_shifts_of_their_chunk_parts():
    from bloomdb import _checksum_kernels as CK

    assert CK.K_LONG == _shift_constant(CK.LONG)
    assert CK.K_SHORT == _shift_constant(512)
    rng = np.random.default_rng(3)
    for c in rng.integers(0, 1 << 32, 20, dtype=np.uint64).tolist():  # the join itself, in Python
        assert _raw(0, _clmul_py(c, CK.K_LONG).to_bytes(8, "little")) == _raw(c, bytes(CK.LONG))


def test_both_carry_less_products_agree_with_the_definition():
    from numba import njit

    from bloomdb import _checksum_kernels as CK

    sw = njit(lambda a, b: CK._clmul_sw(a, b))
    kinds = [sw] + ([njit(lambda a, b: CK._pclmul(a, b))] if CK.HW_CLMUL else [])
    rng = np.random.default_rng(5)
    pairs = [(0, 0), (0xFFFFFFFF, 0xFFFFFFFF), (1, 0x80000000)]
    pairs += [tuple(x) for x in rng.integers(0, 1 << 32, (50, 2), dtype=np.uint64).tolist()]
    for f in kinds:
        for a, b in pairs:
            assert int(f(np.uint64(a), np.uint64(b))) == _clmul_py(a, b)


def test_the_three_stream_kernel_matches_the_library_at_every_chunk_edge():
    if not checksum.HW_RANGES:
        pytest.skip("no SSE4.2 on this host: the kernel is not used")
    from bloomdb import _checksum_kernels as CK

    rng = np.random.default_rng(11)
    buf = rng.integers(0, 256, 3 * 3 * CK.LONG + 3000, dtype=np.uint8)
    edges = [3 * 512, 3 * CK.LONG, 2 * 3 * CK.LONG, 3 * CK.LONG + 3 * 512]
    lengths = list(range(0, 24)) + [e + d for e in edges for d in (-9, -8, -1, 0, 1, 7, 8, 9)]
    lengths += rng.integers(0, buf.shape[0] - 8, 60).tolist()
    for n in lengths:
        a = int(rng.integers(0, buf.shape[0] - n + 1))
        want = lib(buf[a : a + n].tobytes())
        assert int(CK.crc32c_range(buf, a, a + n)) == want, n
        cut = a + int(rng.integers(0, n + 1))  # a running checksum continued over a second range
        assert int(CK.crc32c_extend(CK.crc32c_range(buf, a, cut), buf, cut, a + n)) == want, n
