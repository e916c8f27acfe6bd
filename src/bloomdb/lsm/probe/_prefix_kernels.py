"""numba kernel of the prefix-filter check: several tables' prefix filters asked for one prefix
in one call (:mod:`.prefixes` lays the records out). Each filter is checked by its own family's
``check_hash`` through :func:`._probe_kernels._check`, on the family's own hash of the prefix
(XXH3-64 computed once here; ``sbbf``/``leveldb`` hash inside ``_check``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...hashing._kernels import xxh3_64_bytes
from ._probe_kernels import _check


@njit(cache=True, nogil=True)
def check_records(buf, recs, key, out):
    """``out[i]`` = filter record ``recs[i]`` of ``buf`` (word index; offsets in the record are
    absolute byte offsets into ``buf``) may contain ``key`` (uint8 array). Cost: one hash, one
    family check per record."""
    u64 = buf.view(np.uint64)
    w32 = buf.view(np.uint32)
    u16 = buf.view(np.uint16)
    u8 = buf.view(np.uint8)
    n = key.shape[0]
    h = xxh3_64_bytes(key, 0, n)
    for i in range(recs.shape[0]):
        out[i] = _check(buf, u64, w32, u16, u8, recs[i], h, key, 0, n)
