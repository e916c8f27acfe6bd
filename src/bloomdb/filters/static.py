"""Shared behaviour of static filter families (built once from the whole key set).

A static family (``paired``, ``ribbon``) is made by ``Family.build(keys, bits_per_key)`` or
``filters.build("family:N", keys)``: the builder sees every key before it lays out a single bit
(to balance blocks, or to solve a linear system). The result is read-only: ``add`` raises
:class:`~bloomdb.errors.StaticFilterError`, and union is refused because OR-ing two such filters
does not give a filter of the union (their layouts depend on their own keys). Readers work
directly on the serialised bytes; no per-key state survives the build.
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar

import numpy as np

from .. import keys as _keys
from ..errors import InvalidArgument, StaticFilterError
from ..hashing import hash_batch
from . import math as fm
from . import scratch
from .base import HashedFilter


def check_attempts(name: str, value: Any) -> int:
    """A builder's bound on seeds tried: an integer in [1, 65536], else InvalidArgument."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
        raise InvalidArgument(f"{name} must be an integer in [1, 65536], got {value!r}")
    return value


def hash_all(keys: Any) -> tuple[np.ndarray, bool]:
    """``(hashes, all_ints)``: XXH3-64 of every key of any accepted batch form, in order.

    Each key is hashed exactly once, straight into one array (on huge pages when large: fewer
    page faults, see :mod:`.scratch`); the builders work on this array only. Cost: one kernel
    pass per batch.
    """
    batches = _keys.to_batches(keys)
    out = scratch.zeros(sum(len(b) for b in batches), np.uint64)
    pos = 0
    for b in batches:
        if len(b):
            hash_batch(b, out=out[pos : pos + len(b)])
            pos += len(b)
    return out, all(b.is_int for b in batches)


class StaticHashedFilter(HashedFilter):
    """A :class:`HashedFilter` that is built once from all keys and is read-only afterwards."""

    static = True
    #: ``_kernels.check_hash(*kernel_args, h)`` probes one hash (see :mod:`bloomdb.filters.probe`).
    has_probe_kernel = True
    #: The family's kernel module: ``query_hashes(*kernel_args, hashes, out)`` and
    #: ``query_ints(*kernel_args, ints, out)`` (integer keys hashed inside, fused).
    _kernels: Any = None
    #: The payload array (set by the family's builder / ``_from_parts``).
    _buf: np.ndarray
    #: The envelope's parameter block: its struct and the attribute each field is, in order; the
    #: first is always ``_count`` (the keys given). :meth:`_params` packs them, :meth:`_from_parts`
    #: unpacks, checks (:meth:`_inconsistency`) and sets them.
    _params_struct: ClassVar[struct.Struct]
    _param_names: ClassVar[tuple[str, ...]]

    @classmethod
    def _assemble(cls, buf: np.ndarray, **fields: Any):
        """A filter of ``buf`` (its payload) and the parameter ``fields`` (all of ``_param_names``)."""
        self = cls.__new__(cls)
        for name in cls._param_names:
            setattr(self, name, fields[name])
        self._buf = buf
        self._views()
        return self

    def _views(self) -> None:
        """Set the family's typed views of ``_buf`` (called once the fields are set)."""

    def _params(self) -> bytes:
        return self._params_struct.pack(*(getattr(self, name) for name in self._param_names))

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int):
        fields = dict(zip(cls._param_names, cls._params_struct.unpack(params)))
        problem = f"keys={fields['_count']} count={count}" if fields["_count"] != count else ""
        problem = problem or cls._inconsistency(fields, payload)
        if problem:
            raise ValueError(f"inconsistent {cls.family} filter: {problem}")
        return cls._assemble(payload, **fields)

    @classmethod
    def _inconsistency(cls, fields: dict[str, Any], payload: np.ndarray) -> str:  # pragma: no cover - abstract
        """What is wrong with parameters read from bytes ("" when they describe a filter the
        builder makes, with ``payload`` of the right size)."""
        raise NotImplementedError

    @property
    def num_bits(self) -> int:
        return int(self._buf.nbytes) * 8

    def _layout_fpr(self) -> float:  # pragma: no cover - abstract
        """The FP rate of the layout alone (keys taken as distinct 64-bit hashes)."""
        raise NotImplementedError

    def _hashed_keys(self) -> int:
        """Keys whose 64-bit hashes the filter holds (for the chance two of them collide)."""
        return self._count

    def estimated_fpr(self) -> float:
        """The layout's FP rate (:meth:`_layout_fpr`) or a 64-bit collision with a key held."""
        if self._count == 0:
            return 0.0
        return fm.independent_fpr(self._layout_fpr(), fm.fingerprint_fpr(self._hashed_keys(), 64))

    @property
    def kernel_args(self) -> tuple:  # pragma: no cover - abstract
        """The arguments the family's kernels take before the keys (engines probe with them)."""
        raise NotImplementedError

    def _payload(self) -> np.ndarray:
        return self._buf

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        self._kernels.query_hashes(*self.kernel_args, hashes, out)

    def _query_ints(self, ints: np.ndarray, out: np.ndarray) -> None:
        self._kernels.query_ints(*self.kernel_args, ints, out)

    @property
    def capacity(self) -> int:
        """The number of keys built from (at least 1)."""
        return max(1, self._count)

    @classmethod
    def from_spec(cls, arg: str | None, capacity: int | None = None, **kwargs: Any):
        raise StaticFilterError(
            f"{cls.family} is a static filter: build it from all keys with "
            f"filters.build('{cls.family}:N', keys) or {cls.__name__}.build(keys, bits_per_key)"
        )

    @classmethod
    def build(cls, keys: Any, bits_per_key: float | None = None, **kwargs: Any):
        """Hash ``keys`` once and build the filter over them (see the family's ``build_hashes``)."""
        hashes, _ = hash_all(keys)
        if bits_per_key is not None:
            kwargs["bits_per_key"] = bits_per_key
        return cls.build_hashes(hashes, **kwargs)

    @classmethod
    def build_hashes(cls, hashes: np.ndarray, **kwargs: Any):  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_mutable(self) -> None:
        raise StaticFilterError(
            f"{self.family} filters are static: every key must be given to "
            f"{type(self).__name__}.build(); build a new filter to add keys"
        )

    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None:
        self._check_mutable()

    def _check_compatible(self, other) -> None:
        raise StaticFilterError(
            f"{self.family} filters are static and cannot be united: their layout depends on "
            "their own keys; build one filter from both key sets instead"
        )
