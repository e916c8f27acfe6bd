"""A compiled kernel's own entry point, for a hot call whose argument types never change.

numba's dispatcher resolves the argument types of every call (``typeof`` per argument, then a
search of the compiled signatures) before it unboxes them: ~180 ns of a ~650 ns missing-key
``get`` (measured, docs/benchmarks.md). :func:`direct` returns the compiled function for the
types of one example call (``Dispatcher.overloads[types].entry_point``), which only unboxes.

``types``: the signature to compile (or load from the cache) instead of the example's own
types, for an argument unboxed by a type of :mod:`bloomdb._fastargs` (``bytes`` as
:data:`~bloomdb._fastargs.key_bytes`); the example is then not called. The kernel must also
accept the example's own types: the dispatcher returned as the fallback is called with them.

Contract: the caller passes arguments of exactly the example's types (same dtype, dimensions
and layout for arrays; ``bytes`` for a ``bytes`` argument). A value that cannot be unboxed as that
type raises ``TypeError``; an array of the right dtype and dimensions but another layout would
be read wrongly, so only pass arrays the store allocated itself. When numba does not expose the
entry (another numba version), the dispatcher itself is returned: slower, never wrong.
"""

from __future__ import annotations


def direct(dispatcher, args: tuple, types: tuple | None = None):
    """Call ``dispatcher(*args)`` once (compiling or loading it from the cache), then return its
    compiled entry point for the types of ``args``; with ``types``, compile (or load) that
    signature instead, without the call. ``dispatcher`` when numba exposes no entry."""
    if types is None:
        dispatcher(*args)
    else:
        dispatcher.compile(types)
    try:
        if types is None:
            types = tuple(dispatcher.typeof_pyval(a) for a in args)
        return dispatcher.overloads[types].entry_point
    except (AttributeError, KeyError, TypeError):  # pragma: no cover - another numba's internals
        return dispatcher
