"""The store's ``get`` as a builtin function (:func:`._quick_kernels.quick_get`): a plain get with
the gate open (``DB._quick``) runs without a Python frame -- the memtable's dict, then the lookup
kernel -- and everything else goes to :meth:`DB.get <bloomdb.lsm.db.DB.get>` itself.

:func:`install` makes one per store, sets it as the instance's ``get`` (only when the store's class
does not override ``DB.get``) and returns the store's gate cell, a one-item list that
``WritePath._regate`` keeps equal to ``_quick``. The builtin holds the cell and a weak reference to
the store (no reference cycle: a dropped store is still closed by its ``__del__``).
Cost: a missing get ~60-130 ns less than through ``DB.get`` (its frame and prologue; 1M-key store,
thread CPU, loaded machine: docs/benchmarks.md, "A METH_O entry for the plain get"); a fresh
process's first open loads the builtin's small cfunc and ``find``'s from numba's cache (~10-20 ms). Where the
builtin cannot be made (another Python or numba), the store keeps ``DB.get``: slower, never wrong.
"""

from __future__ import annotations

import sys
import threading
import weakref

from ..errors import StoreClosed
from .probe import find as F
from .rangedel import MAX_SEQ
from .sstable import DELETED, MISSING

METH_FASTCALL_KEYWORDS = 0x0080 | 0x0002

_lock = threading.Lock()
_made = None  # (method def, find's address) once set up
_broken: str | None = None  # why the builtin cannot be made, else None


def finish(db, ver, key, r, default):
    """``db.get``'s answer for the hand-over ``r`` of the lookup kernel (the builtin's and
    :meth:`DB.get <bloomdb.lsm.db.DB.get>`'s)."""
    st, s, a, _ = r
    r = db._reads.finish(ver, key, MAX_SEQ, st, s, a)
    return default if r is MISSING or r is DELETED else r


def _dead(*args, **kwargs):
    raise StoreClosed("the store was garbage-collected")


def _method_def():
    global _made, _broken
    with _lock:
        if _made is None and _broken is None:
            try:
                from ._quick_kernels import quick_get
                from .probe._find_kernels import find

                if F._setup() is None:  # no find builtin: no quick get either
                    raise RuntimeError(F.fallback)
                _made = (F.method_def(quick_get.address, b"get", METH_FASTCALL_KEYWORDS), find.address)
            except Exception as e:  # pragma: no cover - another Python or numba
                _broken = f"{type(e).__name__}: {e}"
        return _made


def install(db, get) -> list:
    """The gate cell of ``db``; ``db.get`` becomes the builtin when ``type(db).get is get``."""
    cell = [None]
    if type(db).get is get and (m := _made or _method_def()) is not None:
        db.get = F.bind(m[0], (cell, weakref.ref(db), get, finish, _dead, sys.intern("_probe"), m[1]))
    return cell
