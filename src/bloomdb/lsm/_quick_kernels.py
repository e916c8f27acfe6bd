"""``db.get`` as a C function of CPython's ``METH_FASTCALL | METH_KEYWORDS`` kind: the plain get's
quick path (the gate, the memtable's dict, the lookup) without a Python frame (:mod:`.quickget`
makes it the store's ``get``).

``self`` is the tuple ``(cell, db ref, DB.get, finish, dead, "_probe", find's address)``: ``cell[0]`` is the
store's gate (``DB._quick``: ``(memtable's dict, version)`` or None), ``db ref`` a weak reference
to the store. A call with one or two positional arguments, an exact ``bytes`` key and the gate
open reads the memtable's dict (``PyDict_GetItemWithError``: a hit is the answer), then calls
:func:`.probe._find_kernels.find` (its address, the tuple's last item, read at run time) on the
version's probe directory (``version._probe``, read with ``PyObject_GetAttr`` and held for the
call); a hand-over goes to ``finish(db, version, key, answer, default)``
(:meth:`.probe.lookup.Reads.finish`). Anything else -- keywords, a snapshot,
another key type, the gate shut, no probe directory yet -- calls ``DB.get`` bound to the store
(``PyMethod_New`` + ``PyObject_Vectorcall``), or ``dead`` when the store is gone. C-API functions
only, no struct field read by offset; every object used across a call back into Python is held.
"""

from __future__ import annotations

from llvmlite import ir
from numba import cfunc, types
from numba.core import cgutils
from numba.extending import intrinsic

from .probe import _find_kernels as K

from .probe._find_kernels import _capi, _i64, _i8p

_NULL = ir.Constant(_i8p, None)
_vp = types.voidptr


def _call1(name):
    """An intrinsic ``f(obj) -> voidptr`` calling the C-API function ``name``."""

    def impl(typingctx, x):
        if x != _vp:
            return None

        def codegen(context, builder, signature, a):
            return builder.call(_capi(builder, name, _i8p, [_i8p]), list(a))

        return _vp(x), codegen

    return intrinsic(impl)


def _call2(name):
    """An intrinsic ``f(obj, obj) -> voidptr`` calling the C-API function ``name``."""

    def impl(typingctx, x, y):
        if x != _vp or y != _vp:
            return None

        def codegen(context, builder, signature, a):
            return builder.call(_capi(builder, name, _i8p, [_i8p, _i8p]), list(a))

        return _vp(x, y), codegen

    return intrinsic(impl)


_type_of = _call1("PyObject_Type")  # new reference
_weak_get = _call1("PyWeakref_GetObject")  # borrowed
_method_new = _call2("PyMethod_New")  # new reference
_getattr = _call2("PyObject_GetAttr")  # new reference


@intrinsic
def _item(typingctx, seq, i):
    """``PyTuple_GetItem`` (borrowed)."""
    if seq != _vp or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, a):
        return builder.call(_capi(builder, "PyTuple_GetItem", _i8p, [_i8p, _i64]), [a[0], context.cast(builder, a[1], signature.args[1], types.int64)])

    return _vp(seq, i), codegen


@intrinsic
def _list_item0(typingctx, seq):
    """``PyList_GetItem(seq, 0)`` (borrowed)."""
    if seq != _vp:
        return None

    def codegen(context, builder, signature, a):
        return builder.call(_capi(builder, "PyList_GetItem", _i8p, [_i8p, _i64]), [a[0], _i64(0)])

    return _vp(seq), codegen


@intrinsic
def _arg(typingctx, args, i):
    """``args[i]`` of a vectorcall argument array."""
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, signature, a):
        return builder.load(builder.gep(a[0], [a[1]]))

    return _vp(args, i), codegen


@intrinsic
def _bytes_type(typingctx):
    """``&PyBytes_Type``."""

    def codegen(context, builder, signature, a):
        return builder.bitcast(context.get_python_api(builder).get_c_object("PyBytes_Type"), _i8p)

    return _vp(), codegen


@intrinsic
def _none(typingctx):
    """``Py_None`` (borrowed)."""

    def codegen(context, builder, signature, a):
        return context.get_python_api(builder).borrow_none()

    return _vp(), codegen


@intrinsic
def _is(typingctx, x, y):
    if x != _vp or y != _vp:
        return None

    def codegen(context, builder, signature, a):
        return builder.icmp_unsigned("==", a[0], a[1])

    return types.boolean(x, y), codegen


@intrinsic
def _incref(typingctx, x):
    """``Py_IncRef(x)``; returns ``x``."""
    if x != _vp:
        return None

    def codegen(context, builder, signature, a):
        context.get_python_api(builder).incref(a[0])
        return a[0]

    return _vp(x), codegen


@intrinsic
def _decref(typingctx, x):
    """``Py_DecRef(x)`` (NULL: nothing)."""
    if x != _vp:
        return None

    def codegen(context, builder, signature, a):
        context.get_python_api(builder).decref(a[0])
        return context.get_dummy_value()

    return types.none(x), codegen


@intrinsic
def _dict_hit(typingctx, d, k):
    """``PyDict_GetItemWithError(d, k)`` when ``d`` is not empty, else NULL (borrowed)."""
    if d != _vp or k != _vp:
        return None

    def codegen(context, builder, signature, a):
        n = builder.call(_capi(builder, "PyDict_Size", _i64, [_i8p]), [a[0]])
        out = cgutils.alloca_once_value(builder, _NULL)
        with builder.if_then(builder.icmp_signed(">", n, _i64(0))):
            builder.store(builder.call(_capi(builder, "PyDict_GetItemWithError", _i8p, [_i8p, _i8p]), [a[0], a[1]]), out)
        return builder.load(out)

    return _vp(d, k), codegen


@intrinsic
def _vectorcall(typingctx, fn, args, nargs, kwnames):
    """``PyObject_Vectorcall(fn, args, nargs, kwnames)``."""
    if not isinstance(nargs, types.Integer):
        return None

    def codegen(context, builder, signature, a):
        f = _capi(builder, "PyObject_Vectorcall", _i8p, [_i8p, _i8p.as_pointer(), _i64, _i8p])
        return builder.call(f, [a[0], a[1], context.cast(builder, a[2], signature.args[2], types.int64), a[3]])

    return _vp(fn, args, nargs, kwnames), codegen


@intrinsic
def _call5(typingctx, fn, a1, a2, a3, a4, a5):
    """``PyObject_CallFunctionObjArgs(fn, a1, ..., a5, NULL)``."""
    if not all(t == _vp for t in (fn, a1, a2, a3, a4, a5)):
        return None

    def codegen(context, builder, signature, a):
        f = _capi(builder, "PyObject_CallFunctionObjArgs", _i8p, [_i8p], var_arg=True)
        return builder.call(f, list(a) + [_NULL])

    return _vp(fn, a1, a2, a3, a4, a5), codegen


@intrinsic
def _call_find(typingctx, fn, at, key):
    """``find(at, key)`` of :mod:`.probe._find_kernels`, called by its address ``fn`` (an integer
    read at run time: the cached code holds no address)."""
    if not isinstance(fn, types.Integer) or at != _vp or key != _vp:
        return None

    def codegen(context, builder, signature, a):
        f = builder.inttoptr(a[0], ir.FunctionType(_i8p, [_i8p, _i8p]).as_pointer())
        return builder.call(f, [a[1], a[2]])

    return _vp(fn, at, key), codegen


@cfunc(_vp(_vp, types.CPointer(_vp), types.intp, _vp), cache=True)
def quick_get(self, args, nargs, kwnames):
    """``db.get(key, default=None, snapshot=None)`` (see the module docstring)."""
    if nargs >= 1 and nargs <= 2 and K._is_null(kwnames):
        key = _arg(args, 0)
        t = _type_of(key)
        _decref(t)  # a type outlives its instance
        q = _list_item0(_item(self, 0))
        if _is(t, _bytes_type()) and not _is(q, _none()):
            default = _arg(args, 1) if nargs == 2 else _none()
            v = _dict_hit(_item(q, 0), key)
            if not K._is_null(v):
                return _incref(default if _is(v, _none()) else v)
            if K._error_set():
                return K._null()
            ver = _item(q, 1)
            p = _getattr(ver, _item(self, 5))  # the probe tuple, held for the call
            if K._is_null(p):
                return K._null()
            if not _is(p, _none()):
                r = _call_find(K._address_of(_item(self, 6)), _item(p, 2), key)
                _decref(p)
                if K._is_null(r):
                    return r
                if _is(r, _none()):
                    _decref(r)
                    return _incref(default)
                rt = _type_of(r)
                _decref(rt)
                if _is(rt, _bytes_type()):
                    return r  # the value
                db = _weak_get(_item(self, 1))
                if not _is(db, _none()):  # a hand-over: finish(db, version, key, answer, default)
                    _incref(db)
                    _incref(q)  # holds the version across the call
                    out = _call5(_item(self, 3), db, ver, key, r, default)
                    _decref(q)
                    _decref(db)
                    _decref(r)
                    return out
                _decref(r)
            else:
                _decref(p)
    db = _weak_get(_item(self, 1))
    if _is(db, _none()):
        return _vectorcall(_item(self, 4), args, nargs, kwnames)
    m = _method_new(_item(self, 2), db)
    if K._is_null(m):
        return K._null()
    out = _vectorcall(m, args, nargs, kwnames)
    _decref(m)
    return out
