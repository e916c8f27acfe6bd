"""``stack_i64`` (:mod:`bloomdb._intrinsics`): per-call scratch on a kernel's stack, as an array."""

from __future__ import annotations

import numpy as np
from numba import njit

from bloomdb._intrinsics import stack_i64


@njit
def _reversed_prefix_sums(values):
    scratch = stack_i64(32)
    n = min(values.shape[0], 32)
    acc = 0
    for i in range(n):
        acc += values[i]
        scratch[i] = acc
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = scratch[n - 1 - i]
    return out


@njit
def _nested(values):
    # each call has its own scratch: an inner call does not overwrite the caller's
    a = stack_i64(4)
    for i in range(4):
        a[i] = values[i]
    inner = _reversed_prefix_sums(values)
    return a[0] + a[1] + a[2] + a[3], inner[0]


def test_stack_scratch_holds_what_a_kernel_writes():
    v = np.arange(1, 41, dtype=np.int64)
    assert _reversed_prefix_sums(v).tolist() == np.cumsum(v[:32])[::-1].tolist()
    assert _reversed_prefix_sums(v[:5]).tolist() == [15, 10, 6, 3, 1]
    assert _nested(v) == (10, int(np.cumsum(v[:32])[-1]))
