"""numba intrinsics that view memory by address: how the lookup kernel (:mod:`._get_kernels`)
reaches every table's mapped file, index and checked-block flags from the one directory array
(arrays of many tables cannot be passed to one kernel call without a container whose unboxing
costs more than the lookup).

Contract: an address must come from ``ndarray.ctypes.data`` of an array that the caller keeps
referenced for as long as a kernel may read it (:class:`.directory.Directory` holds them), with
the length given here no larger than that array's. Nothing is checked: a wrong address is a
crash, so only the directory writes them.
"""

from __future__ import annotations

from numba import carray, njit, types
from numba.extending import intrinsic


def _pointer_intrinsic(dtype):
    @intrinsic
    def as_pointer(typingctx, addr):
        if not isinstance(addr, types.Integer):
            return None
        ptr = types.CPointer(dtype)
        sig = ptr(addr)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(ptr))

        return sig, codegen

    return as_pointer


_u8_pointer = _pointer_intrinsic(types.uint8)
_i64_pointer = _pointer_intrinsic(types.int64)


@njit(cache=True, nogil=True, inline="always")
def u8_view(addr, n):
    """``n`` bytes at ``addr`` as a uint8 array (no copy, no owner)."""
    return carray(_u8_pointer(addr), n)


@njit(cache=True, nogil=True, inline="always")
def i64_view(addr, n):
    """``n`` int64 words at ``addr`` as an int64 array (no copy, no owner)."""
    return carray(_i64_pointer(addr), n)
