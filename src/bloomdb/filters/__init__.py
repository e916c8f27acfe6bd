"""Membership filters: one registry by name, one byte format, batch operations.

>>> from bloomdb import filters
>>> f = filters.create("blocked:10", capacity=1_000_000)
>>> f.add_many(["apple", "pear"]); f.might_contain("apple")
True

``create("family:N", capacity=n)`` makes a filter of any family (``N`` is bits per key unless the
family says otherwise, see :func:`available`); :func:`from_bytes` and :func:`open` read any
family back from its self-describing bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument
from . import format as _fmt
from .base import Filter, HashedFilter, check_keywords, merge_spec_kwargs, open_path
from .capacity import check_on_full
from .registry import _by_name, _load, family, family_by_tag, from_bytes, register

def parse_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"family:N"`` into ``("family", "N")`` (``"family"`` alone gives ``None``)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(f"filter spec must be a string like 'blocked:10', got {spec!r}")
    name, sep, arg = spec.strip().partition(":")
    return name.strip().lower(), (arg.strip() if sep else None)


def create(spec: str, capacity: int | None = None, on_full: str = "warn", **kwargs: Any) -> Filter:
    """A new, empty filter from a spec like RocksDB's ``CreateFromString``: ``"blocked:10"``.

    ``capacity`` is the number of keys it is sized for; extra keyword arguments go to the family
    (e.g. ``fpr=0.01`` instead of a number in the spec, ``size_bytes`` for ``register``).
    ``on_full`` says what an add past twice the target FP rate does: ``"warn"`` (one
    :class:`~bloomdb.errors.CapacityWarning`), ``"raise"`` (:class:`~bloomdb.errors.FilterFull`,
    adding nothing) or ``"ignore"`` (see :mod:`bloomdb.filters.capacity`).
    Raises :class:`~bloomdb.errors.InvalidArgument` (naming the bound or the accepted keywords)
    before allocating anything.
    """
    name, arg = parse_spec(spec)
    cls = family(name)
    check_on_full(on_full)
    if not cls.static:
        check_keywords(name, kwargs, cls.__init__, exclude=("capacity",))
    f = cls.from_spec(arg, capacity=capacity, **kwargs)
    f.on_full = on_full
    return f


def build(spec: str, keys: Any, **kwargs: Any) -> Filter:
    """A filter holding exactly ``keys``, sized for them (static families use their builder)."""
    name, arg = parse_spec(spec)
    cls = family(name)
    if cls.static:
        check_keywords(name, kwargs, cls.build, *filter(None, [getattr(cls, "build_hashes", None)]))
    else:
        check_keywords(name, kwargs, cls.__init__, exclude=("capacity",))
    return cls.build(keys, **merge_spec_kwargs(cls, arg, kwargs))


def open(path: str | os.PathLike, mmap: bool | str = True, verify: bool = True) -> Filter:  # noqa: A001
    """Open a filter file written by :meth:`Filter.save`.

    A missing file raises :class:`~bloomdb.errors.FilterFileNotFound` (a ``FileNotFoundError``), a
    directory or a non-path InvalidArgument.

    With ``mmap=True`` the payload is memory-mapped copy-on-write (the file is never modified;
    pages load on demand, so a huge filter opens fast with ``verify=False``), otherwise read into
    an aligned buffer. ``verify`` checks the payload CRC32C (one pass over the file).

    A mapped filter still answers from its file's pages, so: replacing the file by rename (as
    :meth:`Filter.save` does) never affects it, and writing or truncating the file in place is
    detected by an ``fstat`` before and after every query — the query raises CorruptionError
    rather than answer from changed bits. The exact guarantee and its limits are in
    :mod:`bloomdb.filters.mapped`; ``mmap=False`` (or ``.copy()``) is immune to the file.

    ``mmap="r+"`` maps the file shared, so adds land in it: :meth:`Filter.flush` syncs them and
    rewrites the header (count, CRCs), :meth:`Filter.close` (or leaving a ``with`` block) flushes
    and releases the file. A writer that dies before flushing leaves a file readers refuse with
    CorruptionError. One writer per file (advisory lock: a conflicting open raises
    :class:`~bloomdb.errors.FilterInUse`). Static families and ``scalable`` raise InvalidArgument.
    """
    return open_path(path, use_mmap=mmap, verify=verify)


@dataclass(frozen=True)
class FamilyInfo:
    name: str
    spec_meaning: str
    static: bool
    description: str


def available() -> list[FamilyInfo]:
    """The registered families with what the number in their spec means."""
    _load()
    return [
        FamilyInfo(
            name,
            cls.spec_meaning,
            cls.static,
            (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
        )
        for name, cls in sorted(_by_name.items(), key=lambda kv: _fmt.FAMILY_TAGS[kv[0]])
    ]


def warmup(families: list[str] | None = None) -> dict[str, float]:
    """Compile (or load from numba's cache) every kernel of the given families; seconds per family.

    Builds a tiny filter of each family from integer and string keys and queries it, so that
    benchmarks can leave JIT time out. Cost: seconds on a cold cache, well under one warm.
    """
    import time

    from ..hashing import warmup as hashing_warmup

    hashing_warmup()
    out = {}
    for name in families or [i.name for i in available()]:
        t0 = time.perf_counter()
        cls = family(name)
        for keys in ([1, 2, 3] * 4, ["a", "bc", "def"] * 4):
            f = build(cls.example_spec or name, keys)
            f.might_contain_many(keys)
            f.might_contain(keys[0])
        out[name] = time.perf_counter() - t0
    return out


def __getattr__(name: str) -> Any:
    """Family classes by class name: ``bloomdb.filters.BlockedBloom`` and friends."""
    _load()
    for cls in _by_name.values():
        if cls.__name__ == name:
            return cls
    raise AttributeError(f"module 'bloomdb.filters' has no attribute {name!r}")


__all__ = [
    "Filter",
    "HashedFilter",
    "available",
    "build",
    "create",
    "family",
    "from_bytes",
    "open",
    "parse_spec",
    "register",
    "warmup",
]
