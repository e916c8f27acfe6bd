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
