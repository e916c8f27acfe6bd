"""The registry of filter families: by name and by envelope tag, and :func:`from_bytes`.

Family modules register themselves (``@register``) and are imported on first use of the registry.
This module imports no family and not :mod:`bloomdb.filters.base` (which reads filters back
through :func:`family_by_tag`; the classes held here are its ``Filter`` subclasses), so neither
``base`` nor a family imports the package's own ``__init__``: families register through
``from .registry import register``.
"""

from __future__ import annotations

import importlib
from ..errors import CorruptionError, InvalidArgument
from . import format as _fmt

#: Modules holding the families, imported on first use of the registry.
_FAMILY_MODULES = (
    "bloomdb.filters.standard",
    "bloomdb.filters.blocked",
    "bloomdb.filters.register_bloom",
    "bloomdb.filters.leveldb",
    "bloomdb.filters.sbbf",
    "bloomdb.filters.paired",
    "bloomdb.filters.ribbon",
    "bloomdb.filters.counting",
    "bloomdb.filters.cuckoo",
    "bloomdb.filters.fuse",
    "bloomdb.filters.scalable",
)

_by_name: dict[str, type] = {}
_by_tag: dict[int, type] = {}
_loaded = False


def register(cls: type) -> type:
    """Register a family class (used as a decorator by each family module)."""
    if not cls.family or cls.family not in _fmt.FAMILY_TAGS:
        raise InvalidArgument(f"family {cls.family!r} has no tag in bloomdb.filters.format.FAMILY_TAGS")
    _by_name[cls.family] = cls
    _by_tag[_fmt.FAMILY_TAGS[cls.family]] = cls
    return cls


def _load() -> None:
    global _loaded
    if not _loaded:
        for mod in _FAMILY_MODULES:
            importlib.import_module(mod)
        _loaded = True


def family(name: str) -> type:
    """The class of a family by registry name (``"blocked"``)."""
    _load()
    try:
        return _by_name[name]
    except KeyError:
        raise InvalidArgument(
            f"unknown filter family {name!r}; available: {', '.join(sorted(_by_name))}"
        ) from None


def family_by_tag(tag: int, source: str | None = None) -> type:
    _load()
    try:
        return _by_tag[tag]
    except KeyError:
        raise CorruptionError(f"unknown filter family tag {tag}", source) from None


def from_bytes(data: bytes | bytearray | memoryview, *, verify_payload: bool = True, copy: bool = True):
    """Any family's filter back from :meth:`Filter.to_bytes` (the payload is copied). Damage
    raises :class:`CorruptionError`. ``verify_payload=False`` skips the payload's CRC32C (one
    pass over it) for a caller that has just checked the same bytes under its own checksum (an
    SSTable's filter block); the header is always checked.

    ``copy=False``: the filter reads its payload in place from ``data`` (no copy, no new memory
    touched: what a store reading a table's filter from its memory-mapped file wants). The
    caller keeps ``data`` unchanged while the filter lives (the filter holds a reference); the
    payload may be unaligned. Such a filter is read-only (adding to it raises
    :class:`StaticFilterError`); the family's query kernels take writable arrays, so ``data``
    must be writable (a bytearray, a private map): ``InvalidArgument`` otherwise."""
    import numpy as np

    env = _fmt.decode(data, verify_payload=verify_payload)
    cls = family_by_tag(env.family_tag)
    view = np.frombuffer(data, dtype=np.uint8, count=env.payload_length, offset=env.payload_offset)
    if not copy:
        if not view.flags.writeable:
            raise InvalidArgument("from_bytes(copy=False) reads the payload in place: give writable bytes "
                                  "(a bytearray, a private map)")
        f = cls._from_envelope(env, view, None)
        f._readonly = True
        return f
    payload = _fmt.aligned_empty(env.payload_length)
    payload[:] = view
    return cls._from_envelope(env, payload, None)
