"""Low-level numba intrinsics shared by the kernels (no Python-level state).

``prefetch(arr, i)`` asks the CPU to start loading the cache line holding ``arr[i]`` (LLVM's
``llvm.prefetch``, read, high locality); it never faults, even for an index past the end.
``load_u64`` / ``store_u64`` move 8 bytes of a uint8 array at any offset in one unaligned access
(the Parquet page kernels' Snappy copies and bit unpacking); ``load_be64`` reads them big-endian
(bytewise-ordered words: the LSM scan merge's key comparisons). ``copy_bytes`` is a ``memmove``
between uint8 arrays (the LSM's block decode and scan merge).
``atomic_or`` / ``atomic_add`` are LLVM ``atomicrmw`` on one element of an integer array: the
filters' kernels use them so that writers on many threads (the kernels release the GIL) never lose
an update to a shared word.
``stack_i64(n)`` is an int64 array of ``n`` (a constant) words on the calling kernel's stack:
scratch that costs no allocation, valid until that kernel returns (never return or keep it).
``u8_view(addr, n)`` / ``i64_view(addr, n)`` view memory by address as a uint8 / int64 array (no
copy, no owner): how the LSM's lookup, cursor and compaction kernels reach every table's mapped
file, index and checked-block flags from one directory or plan array (arrays of many tables cannot
be passed to one kernel call without a container whose unboxing costs more than the lookup).
Contract: an address comes from ``ndarray.ctypes.data`` of an array the caller keeps referenced
for as long as a kernel may read it, with ``n`` no larger than that array's length. Nothing is
checked: a wrong address is a crash, so only the store's own directory and plans write them.
"""

from __future__ import annotations

from llvmlite import ir
import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, idx):
    """Prefetch the cache line of ``arr[idx]`` for reading. No-op semantics; never faults."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        arr_v, idx_v = args
        ary = context.make_array(signature.args[0])(context, builder, arr_v)
        ptr = builder.gep(ary.data, [idx_v])
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        i32 = ir.IntType(32)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits of a 64-bit unsigned integer (LLVM ``llvm.ctpop.i64``: one POPCNT)."""
    if not isinstance(x, types.Integer) or x.bitwidth != 64:
        return None
    sig = types.uint64(x)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.ctpop.i64")
        return builder.call(fn, [args[0]])

    return sig, codegen


def _byte_ptr(context, builder, arr_type, arr_v, idx_v, width):
    ary = context.make_array(arr_type)(context, builder, arr_v)
    ptr = builder.gep(ary.data, [idx_v])
    return builder.bitcast(ptr, ir.IntType(width).as_pointer())


@intrinsic
def load_u64(typingctx, arr, idx):
    """The 8 bytes ``arr[idx:idx+8]`` of a uint8 array as a little-endian uint64, read with one
    unaligned load (numba has none: a byte loop costs eight indexed loads with wraparound checks).
    No bounds check: the caller guarantees ``0 <= idx`` and ``idx + 8 <= len(arr)``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(idx, types.Integer)):
        return None
    sig = types.uint64(arr, idx)

    def codegen(context, builder, signature, args):
        ptr = _byte_ptr(context, builder, signature.args[0], args[0], args[1], 64)
        return builder.load(ptr, align=1)

    return sig, codegen


@intrinsic
def load_be64(typingctx, arr, idx):
    """The 8 bytes ``arr[idx:idx+8]`` of a uint8 array as a big-endian uint64 (one unaligned load
    and a byte swap): comparing two such words orders their bytes bytewise. No bounds check: the
    caller guarantees ``0 <= idx`` and ``idx + 8 <= len(arr)``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(idx, types.Integer)):
        return None
    sig = types.uint64(arr, idx)

    def codegen(context, builder, signature, args):
        ptr = _byte_ptr(context, builder, signature.args[0], args[0], args[1], 64)
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64]), "llvm.bswap.i64")
        return builder.call(fn, [builder.load(ptr, align=1)])

    return sig, codegen


@intrinsic
def store_u64(typingctx, arr, idx, value):
    """Write ``value`` as 8 little-endian bytes at ``arr[idx:idx+8]`` of a uint8 array (one
    unaligned store). No bounds check: the caller guarantees ``0 <= idx`` and ``idx + 8 <= len(arr)``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(idx, types.Integer)
            and isinstance(value, types.Integer) and value.bitwidth == 64):
        return None
    sig = types.void(arr, idx, value)

    def codegen(context, builder, signature, args):
        ptr = _byte_ptr(context, builder, signature.args[0], args[0], args[1], 64)
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def copy_bytes(typingctx, dst, dpos, src, spos, n):
    """``dst[dpos:dpos+n] = src[spos:spos+n]`` for uint8 arrays as one ``memmove`` (numba's slice
    assignment copies element by element: measured ~9x slower for 100-byte values). No bounds
    check: the caller guarantees both ranges lie inside their arrays."""
    if not (isinstance(dst, types.Array) and dst.dtype == types.uint8 and isinstance(src, types.Array)
            and src.dtype == types.uint8 and all(isinstance(t, types.Integer) for t in (dpos, spos, n))):
        return None
    sig = types.void(dst, dpos, src, spos, n)

    def codegen(context, builder, signature, args):
        d = _byte_ptr(context, builder, signature.args[0], args[0], args[1], 8)
        s = _byte_ptr(context, builder, signature.args[2], args[2], args[3], 8)
        cgutils.raw_memmove(builder, d, s, args[4], 1)
        return context.get_dummy_value()

    return sig, codegen


def _atomic_rmw(op, ordering):
    """An intrinsic ``f(arr, idx, value) -> old`` doing ``atomicrmw op`` on ``arr[idx]``."""

    def impl(typingctx, arr, idx, value):
        if not (isinstance(arr, types.Array) and isinstance(arr.dtype, types.Integer)
                and isinstance(idx, types.Integer) and isinstance(value, types.Integer)):
            return None
        sig = arr.dtype(arr, idx, value)

        def codegen(context, builder, signature, args):
            arr_t = signature.args[0]
            ary = context.make_array(arr_t)(context, builder, args[0])
            ptr = builder.gep(ary.data, [args[1]])
            val = context.cast(builder, args[2], signature.args[2], arr_t.dtype)
            return builder.atomic_rmw(op, ptr, val, ordering)

        return sig, codegen

    impl.__name__ = f"atomic_{op}"
    return intrinsic(impl)


#: ``atomic_or(arr, idx, value)``: ``arr[idx] |= value`` as one atomic read-modify-write (relaxed
#: ordering: a bit once set stays set, so readers need no ordering with other words); returns the
#: old value. No bounds check: the caller guarantees ``0 <= idx < len(arr)``. Cost: one ``lock or``
#: on x86 (~20 cycles when the line is cached); callers skip it when the bits are already set.
atomic_or = _atomic_rmw("or", "monotonic")

#: ``atomic_add(arr, idx, value)``: ``arr[idx] += value`` atomically with sequentially consistent
#: ordering (a full fence); returns the old value. ``atomic_add(a, 0, 0)`` is a fenced read: the
#: sequence counters of the lock-based filters use it. No bounds check.
atomic_add = _atomic_rmw("add", "seq_cst")


@intrinsic
def fenced_load(typingctx, arr, idx):
    """``arr[idx]`` read after a sequentially consistent fence, as a seq_cst atomic load: no load
    before the call moves after it and none after it moves before it (the read side of a
    sequence counter). No bounds check. Cost: one ``mfence`` on x86."""
    if not (isinstance(arr, types.Array) and isinstance(arr.dtype, types.Integer) and isinstance(idx, types.Integer)):
        return None
    sig = arr.dtype(arr, idx)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        builder.fence("seq_cst")
        return builder.load_atomic(ptr, "seq_cst", signature.args[0].dtype.bitwidth // 8)

    return sig, codegen


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
_u32_pointer = _pointer_intrinsic(types.uint32)


@intrinsic
def _stack_words(typingctx, n):
    """A pointer to ``n`` (a compile-time constant) int64 words allocated in the entry block of
    the calling function (LLVM ``alloca``): freed when it returns."""
    if not isinstance(n, types.IntegerLiteral) or n.literal_value <= 0:
        return None
    count = n.literal_value
    ptr = types.CPointer(types.int64)
    sig = ptr(n)

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, ir.IntType(64), size=count)

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def stack_i64(n):
    """``n`` int64 words (``n`` a constant in the caller's source) on the calling kernel's stack,
    as an array (uninitialised, no owner): per-call scratch without a heap allocation. Valid only
    until the kernel that made it returns."""
    return carray(_stack_words(n), n)


@njit(cache=True, nogil=True, inline="always")
def u8_view(addr, n):
    """``n`` bytes at ``addr`` as a uint8 array (no copy, no owner)."""
    return carray(_u8_pointer(addr), n)


@njit(cache=True, nogil=True, inline="always")
def u32_view(addr, n):
    """``n`` uint32 words at ``addr`` as a uint32 array (no copy, no owner): cheaper than
    ``u8_view(addr, 4 * n).view(np.uint32)``, whose view checks cost ~10 ns in a hot loop."""
    return carray(_u32_pointer(addr), n)


@njit(cache=True, nogil=True, inline="always")
def i64_view(addr, n):
    """``n`` int64 words at ``addr`` as an int64 array (no copy, no owner)."""
    return carray(_i64_pointer(addr), n)


@njit(cache=True, nogil=True, inline="always")
def le_uint(b, p, width):
    """The ``width``-byte little-endian unsigned integer at ``b[p:]`` (uint8 array; the caller
    checked the bytes lie inside it), as uint64. Cost: ``width`` byte loads (file headers and
    footers, not hot loops)."""
    v = np.uint64(0)
    for t in range(width):
        v |= np.uint64(b[p + t]) << np.uint64(8 * t)
    return v
