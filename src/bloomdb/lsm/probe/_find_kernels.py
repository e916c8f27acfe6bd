"""A plain ``get``'s lookup as a C function with CPython's ``METH_O`` signature,
``PyObject *find(PyObject *self, PyObject *key)``, compiled by numba (``@cfunc``, cached): no
argument tuple, no unboxing wrapper (:mod:`.find` makes it a builtin method).

``self`` is a Python ``int``, the address of a probe directory array (read with
``PyLong_AsSsize_t``); ``key`` must be ``bytes`` (``PyBytes_AsStringAndSize``, which sets
``TypeError`` for anything else). It runs :func:`._get_kernels.lookup_newest`'s lookup and returns
a NEW reference to the same answer: the value (``bytes``), ``None``, or the 4-tuple
``(status, slot, offset, length)`` to finish in Python (:class:`._get_kernels.Answer`); NULL
with the Python error set when the key is not ``bytes`` or an object cannot be allocated. Only
CPython's C-API functions are called (no struct field is read by offset), resolved by name as
numba's own boxing code resolves them.

A ``cfunc`` cannot propagate a numba exception (its wrapper prints it as "unraisable" and
returns whatever it has), so ``find`` calls the lookup through :func:`guarded`: numba's
exceptions in it -- none is reachable for a store's own directory (a view of the directory as
narrower words, a block reader's scratch allocation, a hash's table index) -- become the
Python error and ``find`` returns NULL; ``find`` itself raises nothing (its optimised wrapper has
no error branch left: LLVM IR read at numba 0.68). The caller holds the GIL (a builtin called
by the interpreter; the lookup is compiled without ``nogil``, as :func:`._get_kernels.lookup_newest`)
and keeps the directory array referenced for the whole call, as for :func:`.lookup.newest`.
Cost: a missing key's call ~145-155 ns against ~190-210 ns through numba's entry (thread CPU,
1M keys, loaded machine); loaded from numba's cache in a fresh process (~25-40 ms, as the entry).
"""

from __future__ import annotations

from llvmlite import ir
from numba import cfunc, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..._intrinsics import u8_view
from ._get_kernels import DELETED, MISSING, VALUE, newest_answer


def _capi(builder, name, ret, args, var_arg=False):
    """The C-API function ``name`` declared in the module being built (resolved by name at load)."""
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, args, var_arg=var_arg), name)


_i8p = ir.IntType(8).as_pointer()
_i64 = ir.IntType(64)


@intrinsic
def _address_of(typingctx, obj):
    """``PyLong_AsSsize_t(obj)``; -1 with an error set when ``obj`` is not an ``int`` that fits."""
    if obj != types.voidptr:
        return None

    def codegen(context, builder, signature, args):
        return builder.call(_capi(builder, "PyLong_AsSsize_t", _i64, [_i8p]), [args[0]])

    return types.int64(obj), codegen


@intrinsic
def _error_set(typingctx):
    """True when a Python error is set (``PyErr_Occurred``)."""

    def codegen(context, builder, signature, args):
        err = builder.call(_capi(builder, "PyErr_Occurred", _i8p, []), [])
        return cgutils.is_not_null(builder, err)

    return types.boolean(), codegen


@intrinsic
def _bytes_of(typingctx, obj):
    """``(data address, length)`` of a ``bytes`` object (``PyBytes_AsStringAndSize``); length -1
    with ``TypeError`` set for anything else."""
    if obj != types.voidptr:
        return None
    sig = types.UniTuple(types.int64, 2)(obj)

    def codegen(context, builder, signature, args):
        pbuf = cgutils.alloca_once(builder, _i8p)
        plen = cgutils.alloca_once(builder, _i64)
        fn = _capi(builder, "PyBytes_AsStringAndSize", ir.IntType(32), [_i8p, _i8p.as_pointer(), _i64.as_pointer()])
        rc = builder.call(fn, [args[0], pbuf, plen])
        n = builder.select(builder.icmp_signed("<", rc, rc.type(0)), _i64(-1), builder.load(plen))
        return context.make_tuple(builder, signature.return_type, [builder.ptrtoint(builder.load(pbuf), _i64), n])

    return sig, codegen


@intrinsic
def _null(typingctx):
    """The NULL object pointer: "an error is set" to the interpreter."""

    def codegen(context, builder, signature, args):
        return ir.Constant(_i8p, None)

    return types.voidptr(), codegen


@intrinsic
def _answer_object(typingctx, st, s, a, n, addr):
    """A new reference to the answer :class:`._get_kernels.Answer` boxes: ``bytes`` of ``n``
    bytes at ``addr + a`` for ``VALUE``, ``None`` for ``MISSING``/``DELETED``, else the tuple
    ``(st, s, a, n)``; NULL (error set) when an allocation fails."""
    if not all(isinstance(t, types.Integer) for t in (st, s, a, n, addr)):
        return None
    sig = types.voidptr(st, s, a, n, addr)

    def codegen(context, builder, signature, args):
        st, s, a, n, addr = [context.cast(builder, x, t, types.int64) for x, t in zip(args, signature.args)]
        pyapi = context.get_python_api(builder)
        out = cgutils.alloca_once(builder, _i8p)
        with builder.if_else(builder.icmp_signed("==", st, _i64(VALUE))) as (value, other):
            with value:
                ptr = builder.inttoptr(builder.add(addr, a), _i8p)
                builder.store(pyapi.bytes_from_string_and_size(ptr, n), out)
            with other:
                none = builder.or_(builder.icmp_signed("==", st, _i64(MISSING)), builder.icmp_signed("==", st, _i64(DELETED)))
                with builder.if_else(none) as (no_value, handed):
                    with no_value:
                        builder.store(pyapi.make_none(), out)
                    with handed:
                        builder.store(_pack(builder, pyapi, (st, s, a, n)), out)
        return builder.load(out)

    return sig, codegen


def _pack(builder, pyapi, values):
    """``(v0, v1, ...)`` of new ints, or NULL (error set) when one cannot be allocated."""
    items = [pyapi.long_from_longlong(v) for v in values]
    out = cgutils.alloca_once_value(builder, ir.Constant(_i8p, None))
    ok = cgutils.true_bit
    for x in items:
        ok = builder.and_(ok, cgutils.is_not_null(builder, x))
    with builder.if_then(ok, likely=True):
        builder.store(pyapi.tuple_pack(items), out)
    for x in items:
        pyapi.decref(x)  # Py_DecRef: NULL is a no-op
    return builder.load(out)


def guarded(impl, restype):
    """An intrinsic ``f(x, y, z)`` (three integers) answering ``(ok, *impl(x, y, z))``: it calls
    the numba function ``impl`` (compiled for ``restype``, a tuple type) without propagating
    its error status -- a numba exception in it is set as the Python error (numba's
    ``raise_error``, as its own wrappers do) and ``ok`` is False, so a ``cfunc`` calling it has
    no error path of its own (its wrapper could only print the exception as "unraisable")."""

    @intrinsic
    def call(typingctx, x, y, z):
        if not all(isinstance(t, types.Integer) for t in (x, y, z)):
            return None
        sig = types.Tuple((types.boolean,) + restype.types)(x, y, z)

        def codegen(context, builder, signature, args):
            isig = restype(*signature.args)
            cres = context.compile_subroutine(builder, impl, isig)
            status, res = context.call_internal_no_propagate(builder, cres.fndesc, isig, args)
            with builder.if_then(status.is_error, likely=False):
                context.call_conv.raise_error(builder, context.get_python_api(builder), status)
            vals = [builder.extract_value(res, i) for i in range(len(restype))]
            return context.make_tuple(builder, signature.return_type, [builder.not_(status.is_error)] + vals)

        return sig, codegen

    return call


def _newest(at, p, n):
    return newest_answer(at, u8_view(p, n))


#: ``(ok, status, slot, offset, length, address)`` of :func:`._get_kernels.newest_answer` for the
#: directory at ``at`` and the key's ``n`` bytes at ``p``; a numba exception in it (none is
#: reachable for a store's own directory: a view of the directory as narrower words, a block
#: reader's scratch allocation) is the Python error with ``ok`` False
_newest_or_raise = guarded(_newest, types.UniTuple(types.int64, 5))


@cfunc(types.voidptr(types.voidptr, types.voidptr), cache=True)
def find(self, key):
    """``lookup_newest(self, key)`` as a ``METH_O`` function (see the module docstring)."""
    at = _address_of(self)
    if at == -1 and _error_set():
        return _null()
    p, n = _bytes_of(key)
    if n < 0:
        return _null()
    ok, st, s, a, vl, addr = _newest_or_raise(at, p, n)
    if not ok:
        return _null()
    return _answer_object(st, s, a, vl, addr)


@intrinsic
def _is_null(typingctx, p):
    """True when the object pointer ``p`` is NULL."""
    if p != types.voidptr:
        return None

    def codegen(context, builder, signature, args):
        return cgutils.is_null(builder, args[0])

    return types.boolean(p), codegen
