"""numba kernel of CRC32C over many byte ranges of one buffer in one call (the first read of a
table's data blocks checks every block's CRC: one call per block from Python cost more than the
CRC itself, ~1 us each, 27K blocks per million entries).

The CRC is the SSE4.2 ``crc32`` instruction (LLVM ``llvm.x86.sse42.crc32.*``: the Castagnoli
polynomial, the same CRC32C as the ``crc32c`` library), 8 bytes per instruction. Only built on an
x86-64 host with SSE4.2 (:data:`bloomdb.checksum.HW_RANGES`); elsewhere the checksum module
loops over the library's function. numba's cache stamps the host CPU, so a cached kernel never
runs on a CPU without the instruction.

Three streams at once: one ``crc32`` depends on the one before it (3 cycles of latency, one
issued per cycle), so a long range is cut into chunks of three equal parts whose CRCs run
interleaved, then joined -- ``crc(A B C) = shift(shift(crc(A)) ^ crc(B)) ^ crc(C)``, ``shift``
being the state after ``L`` zero bytes: a carry-less product with the constant ``x^(8L)``
(:data:`K_LONG`, :data:`K_SHORT`: ``tests/test_checksum.py`` derives them again) reduced by one
more ``crc32``. The product is one ``PCLMULQDQ`` where the host has it (:data:`HW_CLMUL`), else
32 shift-and-xor steps (then only the long chunks pay). Measured (thread CPU, loaded machine):
a 20 KB filter block 4.7 -> 1.1 us, a 14 KB index block 4.8 -> 1.3 us, a 4 KB data block
1.1 -> 0.75 us per call.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._intrinsics import load_u64


def _has_clmul() -> bool:
    try:
        from llvmlite import binding

        return bool(binding.get_host_cpu_features().get("pclmul", False))
    except Exception:  # no feature list: the shift-and-xor product is always right
        return False


#: whether the chunks' join uses the ``PCLMULQDQ`` instruction (else a 32-step product)
HW_CLMUL = _has_clmul()
#: the three parts of a chunk: 3 x 2048 bytes, and (with ``PCLMULQDQ`` only) 3 x 512 bytes
LONG = 2048
SHORT = 512 if HW_CLMUL else 1 << 40
#: ``K`` such that ``crc32_u64(0, clmul(c, K))`` is the CRC state ``c`` after ``LONG`` (``SHORT``)
#: zero bytes (reflected CRC32C; derived in ``tests/test_checksum.py``)
K_LONG = 0xA51B6135
K_SHORT = 0xDD7E3B0C


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


@intrinsic
def _pclmul(typingctx, a, b):
    """The carry-less product of two uint64 below 2**32: one ``PCLMULQDQ``."""
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
        return None
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i64, i32 = ir.IntType(64), ir.IntType(32)
        v2 = ir.VectorType(i64, 2)
        zero = ir.Constant(v2, None)
        va = builder.insert_element(zero, args[0], i32(0))
        vb = builder.insert_element(zero, args[1], i32(0))
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v2, [v2, v2, ir.IntType(8)]),
                                            "llvm.x86.pclmulqdq")
        return builder.extract_element(builder.call(fn, [va, vb, ir.IntType(8)(0)]), i32(0))

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def _clmul_sw(a, b):
    """The carry-less product of two uint64 below 2**32 (32 shift-and-xor steps)."""
    r = np.uint64(0)
    for i in range(32):
        r ^= (b << np.uint64(i)) & (np.uint64(0) - ((a >> np.uint64(i)) & np.uint64(1)))
    return r


_clmul = _pclmul if HW_CLMUL else _clmul_sw


@njit(cache=True, nogil=True, inline="always")
def _three(c, buf, p, n, k):
    """The CRC state after state ``c`` and the ``3 * n`` bytes from ``p`` (``n`` a multiple of 8,
    ``k`` the shift constant of ``n`` bytes): three interleaved chains joined."""
    c1 = np.uint64(0)
    c2 = np.uint64(0)
    q = p
    end = p + n
    while q < end:
        c = _crc_u64(c, load_u64(buf, q))
        c1 = _crc_u64(c1, load_u64(buf, q + n))
        c2 = _crc_u64(c2, load_u64(buf, q + 2 * n))
        q += 8
    c = _crc_u64(np.uint64(0), _clmul(c, np.uint64(k))) ^ c1
    return _crc_u64(np.uint64(0), _clmul(c, np.uint64(k))) ^ c2


@njit(cache=True, nogil=True)
def crc32c_extend(crc, buf, p, e):
    """CRC32C of the bytes whose CRC32C is ``crc`` followed by ``buf[p:e]`` (``crc`` 0: of
    ``buf[p:e]`` alone, as :func:`crc32c_range`): a checksum over ranges that are not adjacent
    (a filter envelope's header covers its first 36 bytes and then its parameter block)."""
    m = np.uint64(0xFFFFFFFF)
    c = np.uint64(crc) ^ m
    while p + 3 * LONG <= e:
        c = _three(c, buf, p, LONG, K_LONG)
        p += 3 * LONG
    while p + 3 * SHORT <= e:
        c = _three(c, buf, p, SHORT, K_SHORT)
        p += 3 * SHORT
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
    Cost: one instruction per 8 bytes, three issued at once in ranges of 1.5 KB and more."""
    return crc32c_extend(0, buf, p, e)


@njit(cache=True, nogil=True)
def crc32c_ranges(buf, starts, ends, out):
    """``out[j]`` = CRC32C of ``buf[starts[j]:ends[j]]`` (as :func:`crc32c_range`)."""
    for j in range(starts.shape[0]):
        out[j] = crc32c_range(buf, starts[j], ends[j])
