"""A plain ``get``'s lookup as a builtin function of CPython's ``METH_O`` kind: ``finder(at)``
returns ``find``, ``find(key)`` answering what :func:`.lookup.newest` ``(at, key)`` answers (the
value as ``bytes``, ``None``, or ``(status, slot, offset, length)`` to finish:
:class:`._get_kernels.Answer`).

numba's compiled entry (:func:`.fastcall.direct`) is a ``METH_VARARGS | METH_KEYWORDS`` function:
every call builds an argument tuple, unpacks it (``PyArg_UnpackTuple``), converts the address
and frees the tuple, ~50-57 ns per call even for a kernel that does nothing, against ~15-20 ns
for a C builtin such as ``dict.get`` (measured by the lead, 1M keys). ``find`` is the numba
``cfunc`` :func:`._find_kernels.find` (signature ``PyObject *(PyObject *self, PyObject *key)``,
cached on disk like the kernels) wrapped as a builtin by ``ctypes``: a ``PyMethodDef`` made
once per process and kept for its life, and ``PyCFunction_NewEx(def, at, NULL)`` per
directory, whose ``self`` is the address ``at`` as a Python ``int``. A missing key's call:
~145-155 ns instead of ~190-210 ns; ``db.get`` of a missing key ~30-45 ns less with the keys in
memory order, ~35-90 ns less in random order (thread CPU, 1M-key store, loaded machine:
docs/benchmarks.md, "A METH_O entry for the plain get").

Contract: as :func:`.lookup.newest`'s -- the caller keeps the directory array at ``at``
referenced for the whole call (:meth:`bloomdb.lsm.version.Version.probe`'s tuple holds the
array, its address and ``find``); ``key`` must be ``bytes`` (a subclass is read as its bytes),
anything else raises ``TypeError``. The call keeps the GIL.
Where the ``cfunc`` or the ``ctypes`` piece cannot be set up (another Python or numba: no
``ctypes.pythonapi``, no ``PyCFunction_NewEx``, a compile error), ``finder`` returns
``functools.partial`` of numba's entry instead: ~30-40 ns slower than :func:`.lookup.newest`,
never wrong; :data:`fallback` then says why.
"""

from __future__ import annotations

import ctypes
import functools
import threading

from ..._fastargs import address, key_bytes
from . import _get_kernels as G
from .fastcall import direct

METH_O = 0x0008  #: CPython's flag: one positional argument, passed as it is

#: None while the builtin path works (or is not set up yet); else why ``finder`` falls back
fallback: str | None = None


class _MethodDef(ctypes.Structure):
    """CPython's ``PyMethodDef``: name, C function, flags, doc."""

    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_lock = threading.Lock()
_kept: list = []  # every method def made: a builtin points at its def, so none is ever freed
_made = None  # the method def of find once set up


def _new_ex():
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype = ctypes.py_object  # a new reference, taken over by ctypes
    new.argtypes = [ctypes.POINTER(_MethodDef), ctypes.py_object, ctypes.py_object]
    return new


def method_def(address: int, name: bytes, flags: int = METH_O) -> _MethodDef:
    """A method def (``METH_O``: a ``cfunc`` of signature ``voidptr(voidptr, voidptr)``, self and
    argument -> a new reference or NULL with an error set) for the C function at ``address``,
    kept for the life of the process."""
    d = _MethodDef(name, address, flags, None)
    _kept.append(d)
    return d


def bind(mdef: _MethodDef, self):
    """The builtin function of ``mdef`` bound to ``self`` (``PyCFunction_NewEx``)."""
    return _new_ex()(ctypes.byref(mdef), self, None)


def _setup():
    """The method def of :func:`._find_kernels.find` (``PyCFunction_NewEx`` checked to be there);
    None (and :data:`fallback` set) when either cannot be had."""
    global _made, fallback
    with _lock:
        if _made is None and fallback is None:
            try:
                from ._find_kernels import find

                _new_ex()  # PyCFunction_NewEx is there
                _made = method_def(find.address, b"find")
            except Exception as e:  # pragma: no cover - another Python or numba
                fallback = f"{type(e).__name__}: {e}"
        return _made


def finder(at: int):
    """``find(key)``: :func:`.lookup.newest` ``(at, key)`` as a ``METH_O`` builtin bound to the
    address ``at`` (an ``int``); numba's entry bound to it where that cannot be made."""
    made = _made or _setup()
    if made is None:  # pragma: no cover - another Python or numba
        return functools.partial(direct(G.lookup_newest, (at, b""), (address, key_bytes)), at)
    return bind(made, at)
