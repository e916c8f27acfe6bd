"""numba kernel of CRC32C over many byte ranges of one buffer in one call (the first read of a
table's data blocks checks every block's CRC: one call per block from Python cost more than the
CRC itself, ~1 us each, 27K blocks per million entries).

The CRC is the SSE4.2 ``crc32`` instruction (LLVM ``llvm.x86.sse42.crc32.*``: the Castagnoli
polynomial, the same CRC32C as the ``crc32c`` library), 8 bytes per instruction. Only built on an
x86-64 host with SSE4.2 (:data:`bloomdb.checksum.HW_RANGES`); elsewhere the checksum module
loops over the library's function. numba's cache stamps the host CPU, so a cached kernel never
runs on a CPU without the instruction.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._intrinsics import load_u64


def _crc_step(width: int):
    """An intrinsic ``(crc uint64, data) -> uint64``: one ``crc32`` instruction over ``width``
    bits of ``data`` (8: one byte; 64: eight bytes, little-endian)."""

    @intrinsic
    def step(typingctx, crc, data):
        if not (isinstance(crc, types.Integer) and isinstance(data, types.Integer)):
            return None
        sig = types.uint64(types.uint64, types.uint64 if width == 64 else types.uint8)

        def codegen(context, builder, signature, args):
            acc, arg = ir.IntType(64 if width == 64 else 32), ir.IntType(width)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(acc, [acc, arg]),
                                                f"llvm.x86.sse42.crc32.{acc.width}.{width}")
            c = builder.call(fn, [builder.trunc(args[0], acc) if width != 64 else args[0], args[1]])
            return c if width == 64 else builder.zext(c, ir.IntType(64))

        return sig, codegen

    return step


_crc_u64 = _crc_step(64)
_crc_u8 = _crc_step(8)


@njit(cache=True, nogil=True)
def crc32c_extend(crc, buf, p, e):
    """CRC32C of the bytes whose CRC32C is ``crc`` followed by ``buf[p:e]`` (``crc`` 0: of
    ``buf[p:e]`` alone, as :func:`crc32c_range`): a checksum over ranges that are not adjacent
    (a filter envelope's header covers its first 36 bytes and then its parameter block)."""
    m = np.uint64(0xFFFFFFFF)
    c = np.uint64(crc) ^ m
    while p + 8 <= e:
        c = _crc_u64(c, load_u64(buf, p))
        p += 8
    while p < e:
        c = _crc_u8(c, buf[p])
        p += 1
    return c ^ m


@njit(cache=True, nogil=True)
def crc32c_range(buf, p, e):
    """CRC32C of ``buf[p:e]`` (uint8 buffer; the caller checked ``0 <= p <= e <= len(buf)``).
    Cost: one instruction per 8 bytes."""
    return crc32c_extend(0, buf, p, e)


@njit(cache=True, nogil=True)
def crc32c_ranges(buf, starts, ends, out):
    """``out[j]`` = CRC32C of ``buf[starts[j]:ends[j]]`` (as :func:`crc32c_range`)."""
    for j in range(starts.shape[0]):
        out[j] = crc32c_range(buf, starts[j], ends[j])
