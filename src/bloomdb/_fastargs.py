"""Arguments a hot kernel entry takes for less than numba's own unboxing costs.

numba unboxes a ``bytes`` or ``ndarray`` argument into an array struct that owns a new NRT
meminfo (a ``malloc`` and a ``free``, a reference taken and dropped on the Python object), and
every view and call of that array inside the kernel then takes and drops a reference on the
meminfo with an atomic add (``lock xadd``: ~20 cycles each). For a point lookup called once per
key (:func:`bloomdb.lsm.probe._get_kernels.lookup_newest`) that was ~80-100 ns of a ~390 ns
missing-key call (1M-key store, thread CPU, loaded machine: docs/benchmarks.md, "Per-call
cost of a get").

:data:`key_bytes` (numba type :class:`KeyBytes`) is a ``bytes`` argument unboxed as its data
pointer and length (``PyBytes_AsStringAndSize``: no meminfo, no reference); :func:`key_view`
views it in the kernel as a uint8 array without an owner. An array passed by its address (a
plain ``int``, ``ndarray.ctypes.data``) is viewed with :func:`bloomdb._intrinsics.i64_view`;
:data:`address` (numba type :class:`Address`) unboxes that ``int`` with ``PyLong_AsSsize_t``
(numba's ``int64`` goes through ``PyNumber_Long`` and ``PyLong_AsLongLong``, whose generic
byte conversion of a two-digit ``int`` -- every address above 2**30 -- cost ~4% of a missing
get: ~20 ns), and :func:`address_value` reads it in the kernel.

Contract: both views have no owner, so the caller keeps the ``bytes`` object (and the array
whose address it passes) referenced for the whole call -- a local variable of the calling
Python frame does. A kernel must never keep such a view beyond its return. Passing anything but
``bytes`` (``bytearray``, ``str``, ``memoryview``) for a :data:`key_bytes` argument raises
``TypeError`` ("expected bytes") in the unboxing, before the kernel runs.

A kernel taking a key this way is compiled for :data:`key_bytes` by an explicit signature
(:func:`bloomdb.lsm.probe.fastcall.direct` with ``types=``); :func:`key_view` also accepts a
plain numba ``bytes`` or uint8 array (it returns it), and :func:`address_value` a plain integer,
so the same kernel called through its dispatcher with ``bytes`` and ``int`` compiles and runs as
before. Anything but an ``int`` for an :data:`address` argument raises ``TypeError``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.core import cgutils
from numba.extending import NativeValue, intrinsic, make_attribute_wrapper, models, overload, register_model, unbox


class KeyBytes(types.Type):
    """numba type of a ``bytes`` argument unboxed as ``(ptr, n)``: its data and length."""

    def __init__(self):
        super().__init__(name="KeyBytes")


#: the numba type to put in an entry's signature for a ``bytes`` key (:func:`key_view` in the kernel)
key_bytes = KeyBytes()


@register_model(KeyBytes)
class _KeyBytesModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("ptr", types.CPointer(types.uint8)), ("n", types.intp)])


make_attribute_wrapper(KeyBytes, "ptr", "ptr")
make_attribute_wrapper(KeyBytes, "n", "n")


@unbox(KeyBytes)
def _unbox_key_bytes(typ, obj, c):
    """``PyBytes_AsStringAndSize``: the object's own buffer and size; for anything but ``bytes``
    it sets ``TypeError`` and the entry raises it."""
    pbuf = cgutils.alloca_once(c.builder, c.pyapi.cstring)
    plen = cgutils.alloca_once(c.builder, c.pyapi.py_ssize_t)
    ok = c.pyapi.bytes_as_string_and_size(obj, pbuf, plen)
    st = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    st.ptr = c.builder.bitcast(c.builder.load(pbuf), c.context.get_value_type(types.CPointer(types.uint8)))
    st.n = c.builder.load(plen)
    return NativeValue(st._getvalue(), is_error=c.builder.not_(ok))


def key_view(key):
    """The bytes of ``key`` as a uint8 array (no copy). In a kernel: a :data:`key_bytes` argument
    viewed without an owner; a ``bytes`` or uint8 array argument returned as it is."""
    return np.frombuffer(key, np.uint8)


@overload(key_view, inline="always")
def _key_view(key):
    if isinstance(key, KeyBytes):
        return lambda key: carray(key.ptr, key.n)
    if isinstance(key, types.Buffer) and key.dtype == types.uint8 and key.ndim == 1:  # bytes, uint8 arrays
        return lambda key: key
    return None


class Address(types.Type):
    """numba type of an ``int`` address argument unboxed with ``PyLong_AsSsize_t``."""

    def __init__(self):
        super().__init__(name="Address")


#: the numba type to put in an entry's signature for an address (:func:`address_value` in the kernel)
address = Address()


@register_model(Address)
class _AddressModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.IntType(64))


@unbox(Address)
def _unbox_address(typ, obj, c):
    """``PyLong_AsSsize_t``: a digit loop; -1 with an error set (not an ``int``, too big) raises."""
    fnty = ir.FunctionType(c.pyapi.py_ssize_t, [c.pyapi.pyobj])
    val = c.builder.call(c.pyapi._get_function(fnty, name="PyLong_AsSsize_t"), [obj])
    failed = c.builder.and_(c.builder.icmp_signed("==", val, val.type(-1)), c.pyapi.c_api_error())
    return NativeValue(val, is_error=failed)


@intrinsic
def _address_int(typingctx, a):
    if not isinstance(a, Address):
        return None

    def codegen(context, builder, signature, args):
        return args[0]

    return types.int64(a), codegen


def address_value(a):
    """The address ``a`` as an integer. In a kernel: an :data:`address` argument's value; an
    integer argument returned as it is."""
    return int(a)


@overload(address_value, inline="always")
def _address_value(a):
    if isinstance(a, Address):
        return lambda a: _address_int(a)
    if isinstance(a, types.Integer):
        return lambda a: a
    return None
