"""The Filter protocol every family implements, and the shared machinery behind it.

A family subclasses :class:`Filter` (or :class:`HashedFilter` when it is fed by bloomdb's default
64-bit key hash, XXH3-64) and provides:

* ``family`` (registry name), ``family_version``, and ``from_spec`` when the number in
  ``"family:N"`` means something other than bits per key;
* ``_params() -> bytes`` / ``_from_parts(params, payload, count)``: its parameter block and
  payload array for the byte envelope (:mod:`bloomdb.filters.format`);
* the batch operations ``_add_batch(KeyBatch)`` / ``_query_batch(KeyBatch, out)`` (HashedFilter
  turns those into ``_add_hashes`` / ``_query_hashes`` over uint64 hashes, with optional fused
  integer-key paths), plus ``num_bits``, ``num_probes``, ``estimated_fpr``.

Everything else — single-key methods, conversion of any key batch, parallel builds, bytes/file/mmap
round trips, pickle, copy, union — lives here once.

Threads: every write goes through the filter's :class:`~bloomdb.filters.writers.WriteGate`. The
bit-setting families (``shared_writes = True``) write with plain stores when alone and with
atomic OR when writers overlap; families with multi-word updates (``counting``, ``cuckoo``) write
one at a time. ``count`` has its own small lock. Snapshots (``to_bytes``, ``save``, ``copy``,
``union``, ``==``) copy the payload first, so they hold every key whose add returned before the
call and their checksum always matches their bytes.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import tempfile
import threading
import weakref
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from .. import keys as _keys
from ..errors import (
    CorruptionError,
    FilterFileNotFound,
    IncompatibleFilters,
    InvalidArgument,
    StaticFilterError,
)
from ..checksum import crc32c
from ..keys import KeyBatch
from . import format as fmt
from . import parallel, registry
from ._common_kernels import popcount_bytes, or_into
from .probe import ProbeDescriptor
from .capacity import CapacityGuard, check_on_full, clamp_fpr
from .mapped import MappedFile
from .writers import WriteGate


#: Largest capacity any family accepts (sizes are computed in 64-bit integers).
MAX_CAPACITY = (1 << 63) - 1
#: guards the creation of a filter's write gate (:attr:`Filter._gate`; held for that only)
_GATE_LOCK = threading.Lock()


def _prefix(family: str) -> str:
    return f"{family}: " if family else ""


def check_capacity(capacity: Any, family: str = "") -> int:
    """Validate a capacity: an integer in ``[1, 2**63 - 1]`` (bool, NaN, infinities and floats
    with a fraction are refused with InvalidArgument)."""
    msg = f"{_prefix(family)}capacity must be a positive integer up to 2**63 - 1, got {capacity!r}"
    if isinstance(capacity, bool) or capacity is None:
        raise InvalidArgument(msg)
    try:
        as_int = int(capacity)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgument(msg) from None
    if as_int != capacity or not 0 < as_int <= MAX_CAPACITY:
        raise InvalidArgument(msg)
    return as_int


def check_bits_per_key(
    bits_per_key: Any, *, low: float = 0.0, high: float = 1000.0, family: str = "", why: str = ""
) -> float:
    """Validate bits per key: a finite number in ``(low, high]`` (``why`` says where ``high``
    comes from). Never silently capped: above ``high`` is an InvalidArgument."""
    try:
        b = float(bits_per_key)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgument(f"{_prefix(family)}bits_per_key must be a number, got {bits_per_key!r}") from None
    if isinstance(bits_per_key, bool) or not math.isfinite(b) or b <= low or b > high:
        reason = f" ({why})" if why else ""
        raise InvalidArgument(
            f"{_prefix(family)}bits_per_key must be a finite number in ({low:g}, {high:g}]{reason}, "
            f"got {bits_per_key!r}"
        )
    return b


def check_fpr(fpr: Any, *, best: float = 0.0, family: str = "", why: str = "") -> float:
    """Validate a target false-positive rate: a number in ``[best, 1)`` and above 0.

    ``best`` is the lowest rate the family can reach (``why`` says what limits it); a target
    below it is refused rather than silently missed.
    """
    try:
        p = float(fpr)
    except (TypeError, ValueError, OverflowError):
        raise InvalidArgument(f"{_prefix(family)}fpr must be a number in (0, 1), got {fpr!r}") from None
    if isinstance(fpr, bool) or not (0.0 < p < 1.0):
        raise InvalidArgument(f"{_prefix(family)}fpr must be a number in (0, 1), got {fpr!r}")
    if p < best:
        reason = f" ({why})" if why else ""
        raise InvalidArgument(
            f"{_prefix(family)}fpr={fpr!r} is below {best:.3g}, the lowest this family reaches{reason}"
        )
    return p


def check_keywords(family: str, kwargs: dict[str, Any], *functions: Any, exclude: tuple[str, ...] = ()) -> None:
    """InvalidArgument naming the accepted keywords when ``kwargs`` has one none of ``functions``
    names (when every one takes ``**kwargs``, the family checks for itself and this passes).
    Cost: nothing without keywords (none can be unknown); else one ``inspect.signature`` per
    function (~30 us: a table's filter build, once per table, used to pay it with none given)."""
    if not kwargs:
        return
    import inspect

    accepted: set[str] = set()
    open_ended = True
    for fn in functions:
        params = inspect.signature(fn).parameters.values()
        open_ended &= any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        accepted |= {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if open_ended:
        return
    accepted -= {"self", "cls", "keys", "hashes", *exclude}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise InvalidArgument(
            f"{family}: unknown argument(s) {', '.join(unknown)}; it takes {', '.join(sorted(accepted)) or 'none'}"
        )


def merge_spec_kwargs(cls: Any, arg: str | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` plus what the number in ``"family:N"`` stands for; InvalidArgument when both give
    the same parameter (the spec number used to win silently)."""
    if arg is None:
        return kwargs
    from_spec = cls.spec_kwargs(arg)
    both = sorted(set(from_spec) & set(kwargs))
    if both:
        raise InvalidArgument(
            f"{cls.family}: {', '.join(both)} given both in the spec {cls.family}:{arg} and as a keyword"
        )
    return {**kwargs, **from_spec}


def single_key_batch(key: Any) -> KeyBatch:
    """A one-key :class:`KeyBatch` (validates the key; raises KeyTypeError / InvalidArgument)."""
    enc = _keys.encode_key(key)
    if type(enc) is int:
        return KeyBatch(ints=np.array([enc], dtype=np.uint64))
    return KeyBatch(
        data=np.frombuffer(enc, dtype=np.uint8) if enc else np.zeros(0, np.uint8),
        offsets=np.array([0, len(enc)], dtype=np.int64),
    )


class Filter(ABC):
    """A membership filter: answers "definitely not added" or "might have been added".

    Never a false negative: every key added answers ``True`` from :meth:`might_contain`. A
    ``True`` for a key never added is a false positive, at about :meth:`estimated_fpr`.
    Filters deliberately have no ``__contains__``: ``key in f`` would read as a certainty.
    """

    family: ClassVar[str] = ""
    family_version: ClassVar[int] = 1
    #: True for families built once from all keys (``build``); ``add`` then raises.
    static: ClassVar[bool] = False
    #: False for families whose plain spec is a fixed size whatever the number of keys
    #: (``register:2`` is 256 KiB): an engine building one filter per batch of keys (an LSM table)
    #: then passes ``bits_per_key`` so the filter is sized from the batch's key count.
    sized_by_count: ClassVar[bool] = True
    #: What the number in a spec ``"family:N"`` means (for ``available()``).
    spec_meaning: ClassVar[str] = "bits per key"
    #: A typical spec, used by docs, the demo and the generic test-suite.
    example_spec: ClassVar[str] = ""
    #: True for families sized by a target FP rate that grow with the keys (``scalable``): a
    #: capacity is optional (:meth:`from_spec`), benchmarks and the calculator let them grow.
    grows: ClassVar[bool] = False
    #: filter-bench refuses a measured FP rate above ``fpr_tolerance`` x expected (+ 5 sigma).
    fpr_tolerance: ClassVar[float] = 1.5

    #: True when the add kernels can set bits with atomic OR, so overlapping writers run together
    #: (see :mod:`bloomdb.filters.writers`); False: writes run one at a time.
    shared_writes: ClassVar[bool] = True

    #: Why ``filters.open(path, mmap="r+")`` refuses the family ("" when it can write in place:
    #: a fixed-size payload the add kernels write directly).
    writable_map_refusal: ClassVar[str] = ""

    _count: int
    #: The open file when the payload is a memory map of it (``filters.open(mmap=True)``).
    _mapped: MappedFile | None = None
    #: Called once a write is admitted (a writable map marks its file); None otherwise.
    _mark: Any = None

    #: The writer gate once made (:attr:`_gate`).
    _write_gate: WriteGate | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> "Filter":
        return super().__new__(cls)  # subclasses' __new__ pass their arguments on

    #: The ``on_full`` policy while no :attr:`_guard` is made (a filter only read never makes one).
    _on_full_mode: str = "warn"
    #: The capacity guard once made (:attr:`_guard`).
    _capacity_guard: CapacityGuard | None = None

    @property
    def _guard(self) -> CapacityGuard:
        """The filter's :class:`CapacityGuard` (its ``on_full`` state and the lock of ``_count``),
        made on first use under the process-wide lock, as :attr:`_gate`: a filter that is only
        read -- a store's table filter, read in place -- makes none (a guard and its lock are two
        more long-lived objects per table, and long-lived tracked objects set off the garbage
        collector's full passes)."""
        g = self._capacity_guard
        if g is None:
            with _GATE_LOCK:
                g = self._capacity_guard
                if g is None:
                    g = self._capacity_guard = CapacityGuard(threading.Lock(), self._on_full_mode)
        return g

    @property
    def _lock(self) -> threading.Lock:
        """The lock guarding ``_count`` (the guard's)."""
        return self._guard.lock

    def _set_on_full(self, mode: str) -> None:
        """Set the ``on_full`` policy (checked by the caller) without making a guard."""
        g = self._capacity_guard
        if g is None:
            self._on_full_mode = mode
        else:
            g.mode = mode

    @property
    def _gate(self) -> WriteGate:
        """The filter's :class:`WriteGate`, made on first use (under a process-wide lock, so
        every writer of the filter gets the same one): a filter that is only read -- a store
        reads each table's filter in place and never writes it -- makes none. (A gate is seven
        objects the garbage collector tracks: a 5M-key store's first reads made ~2,100 of them
        for its ~300 filters, which, with the rest, set off full collector passes.)"""
        g = self._write_gate
        if g is None:
            with _GATE_LOCK:
                g = self._write_gate
                if g is None:
                    g = self._write_gate = WriteGate()
        return g

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def spec_kwargs(cls, arg: str) -> dict[str, Any]:
        """The keyword arguments the number in ``"family:N"`` stands for (default: bits per key)."""
        try:
            return {"bits_per_key": float(arg)}
        except ValueError:
            raise InvalidArgument(f"{cls.family}: bits per key must be a number, got {arg!r}") from None

    @classmethod
    def from_spec(cls, arg: str | None, capacity: int | None = None, **kwargs: Any) -> "Filter":
        """Create from the number in ``"family:N"`` (see :meth:`spec_kwargs`) and a capacity."""
        kwargs = merge_spec_kwargs(cls, arg, kwargs)
        if capacity is None and not cls.grows:
            raise InvalidArgument(f"{cls.family}: capacity (number of keys) is required")
        return cls(capacity=capacity, **kwargs)

    @classmethod
    def planned_size(cls, capacity: int, **kwargs: Any) -> tuple[int, int]:
        """``(num_bits, num_probes)`` of the filter ``cls(capacity, **kwargs)`` would make, raising
        what the constructor raises for bad arguments. Cost: by default it makes that filter (its
        buffer lazily zeroed, so no memory is touched, but refused past the machine's memory);
        families whose size is arithmetic answer without allocating, for any size they can
        address (``bloomdb calc`` sizes filters larger than the machine this way)."""
        f = cls(capacity=capacity, **kwargs)
        return f.num_bits, f.num_probes

    @classmethod
    def build(cls, keys: Any, bits_per_key: float | None = None, **kwargs: Any) -> "Filter":
        """A filter sized for exactly ``keys`` and holding them (static families override this)."""
        batches = _keys.to_batches(keys)
        n = sum(len(b) for b in batches)
        if bits_per_key is not None:
            kwargs["bits_per_key"] = bits_per_key
        f = cls(capacity=max(1, n), **kwargs)
        for b in batches:
            f._add_batch(b, False)
            f._counted(len(b))
        return f

    # ---- the family's part --------------------------------------------------------------

    @abstractmethod
    def _add_batch(self, batch: KeyBatch, atomic: bool) -> None:
        """Add ``batch``; ``atomic``: other writers may run at the same time (use atomic OR)."""

    @abstractmethod
    def _query_batch(self, batch: KeyBatch, out: np.ndarray) -> None:
        """Write ``might_contain`` of every key of ``batch`` into the bool array ``out``."""

    @abstractmethod
    def _params(self) -> bytes: ...

    @classmethod
    @abstractmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int) -> "Filter":
        """Rebuild from the envelope (``payload`` is an aligned uint8 array the filter may keep)."""

    @abstractmethod
    def _payload(self) -> np.ndarray:
        """The filter's state as one contiguous uint8 array (a view, not a copy)."""

    @property
    @abstractmethod
    def num_bits(self) -> int: ...

    @property
    @abstractmethod
    def num_probes(self) -> int: ...

    def estimated_fpr(self) -> float:
        """The FP rate expected for the keys added so far (a formula, not a measurement; in [0, 1])."""
        return 0.0 if self._count <= 0 else clamp_fpr(self.fpr_at(self._count))

    def fpr_at(self, n: int) -> float:
        """The model FP rate of this filter once it holds ``n`` keys (NaN when the family has no
        model for a growing count). Non-decreasing in ``n``."""
        return float("nan")

    def target_fpr(self) -> float:
        """The FP rate the filter was sized for: :meth:`fpr_at` its capacity (NaN without one)."""
        cap = getattr(self, "_capacity", None)
        return clamp_fpr(self.fpr_at(cap)) if cap else float("nan")

    @property
    def on_full(self) -> str:
        """``"warn"`` (default), ``"raise"`` or ``"ignore"``: what an add past twice the target FP
        rate does (see :mod:`bloomdb.filters.capacity`)."""
        g = self._capacity_guard
        return self._on_full_mode if g is None else g.mode

    @on_full.setter
    def on_full(self, value: str) -> None:
        self._set_on_full(check_on_full(value))

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """The family's model FP rate for a filter holding ``bits_per_key`` bits per key.

        ``num_probes`` fixes k (a filter keeps the k it was sized with as keys arrive); by default
        the k the family would choose for ``bits_per_key``. NaN when the family has no model.
        """
        return float("nan")

    @classmethod
    def spec_for_bits_per_key(cls, bits_per_key: float) -> str:
        """The spec of this family that ``filter-bench --impl FAMILY --bits-per-key B`` measures.

        ``"family:B"`` by default; families whose spec number means something else (k, fingerprint
        bits) override it with the spec that spends about ``B`` bits per key.
        """
        return f"{cls.family}:{bits_per_key:g}"

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """Specs that sweep this family over ``bits_per_key_values`` (filter-bench --sweep)."""
        return [f"{cls.family}:{b:g}" for b in bits_per_key_values]

    # ---- shared API ---------------------------------------------------------------------

    @property
    def count(self) -> int:
        """Keys added (duplicates counted each time they were added)."""
        return self._count

    @property
    def capacity(self) -> int:
        return getattr(self, "_capacity", max(1, self._count))

    @property
    def bits_per_key(self) -> float:
        """Filter bits per key of capacity (memory efficiency, not the configured target)."""
        return self.num_bits / max(1, self.capacity)

    def _payload_parts(self) -> tuple[np.ndarray, ...]:
        """The payload as the arrays that hold it, in order (one array, :meth:`_payload`, unless
        the family keeps its state in several buffers, as a growing chain does)."""
        return (self._payload(),)

    @property
    def size_bytes(self) -> int:
        """Bytes of filter state (the payload); the envelope adds a 64-byte-aligned header."""
        return sum(int(p.nbytes) for p in self._payload_parts())

    def fill_ratio(self) -> float:
        """Fraction of payload bits that are set (popcount over the payload)."""
        self._check_source()
        parts = self._payload_parts()
        return sum(popcount_bytes(p) for p in parts) / max(1, 8 * sum(p.size for p in parts))

    def _fill_shape(self) -> tuple[int, int, int] | None:
        """``(units, positions per unit, positions set per key)`` of a family whose key sets its
        positions uniformly inside one unit (a line, a word, the whole array); None otherwise."""
        return None

    def estimated_count(self) -> float:
        """Distinct keys held, estimated from the fill (Swamidass & Baldi 2007), NaN for families
        without a fill model. ``count`` stays the number of adds (duplicates included).

        With ``U`` units of ``w`` positions and ``k`` set per key in one unit, a unit's unset share
        after Poisson(λ) keys is ``exp(-λ (1 - (1 - 1/w)^k))``, so ``n = U · -ln(1 - fill) /
        (1 - (1 - 1/w)^k)``. Error: within ~2% at 10–90% fill on filters of 10^5+ positions
        (tested within 5%); it grows as the fill nears 1 (inf when every position is set), and
        keys whose positions coincide are counted once. Cost: one popcount pass.
        """
        shape = self._fill_shape()
        if shape is None:
            return float("nan")
        units, width, k = shape
        unset = 1.0 - self.fill_ratio()
        if unset <= 0.0:
            return math.inf
        return units * -math.log(unset) / -math.expm1(k * math.log1p(-1.0 / width))

    def _check_mutable(self) -> None:
        if getattr(self, "_readonly", False):
            raise StaticFilterError(f"this {self.family} filter is read-only (static or memory-mapped read-only)")

    def _counted(self, n: int, reserved: int = 0) -> None:
        """``count += n`` (under the lock: concurrent writers never lose a count); ``reserved`` of
        them were reserved by ``_guard.admit``. Warns once past the capacity limit."""
        self._guard.counted(self, n, reserved)

    @contextlib.contextmanager
    def _admitted(self, n: int):
        """Reserve room for ``n`` keys (``on_full="raise"``: FilterFull before any change) around
        a write; yields the reservation, which ``_counted`` consumes and the exit releases."""
        held = [self._guard.admit(self, n)]
        try:
            yield held
        finally:
            self._guard.release(held[0])

    def _writing(self, shared: bool):
        """``with self._writing(shared) as atomic:`` around every write of the payload: the
        write gate, plus the "open for writing" mark of a writable map (:mod:`.mapped`)."""
        return self._gate.write(shared, self._mark)

    def _write_batch(self, batch: KeyBatch, threads: int, held: list[int]) -> None:
        n = len(batch)
        with self._writing(self.shared_writes) as atomic:
            if threads > 1 and n > 1:
                self._add_parallel(batch, threads, atomic)
            else:
                self._add_batch(batch, atomic)
        take = min(n, held[0])
        held[0] -= take
        self._counted(n, take)

    def add(self, key: Any) -> None:
        """Add one key (bytes, str or 64-bit int). Cost: one batch-of-one kernel call (~µs).

        Safe from any number of threads at once (see the family's docstring for how); once it
        returns, ``might_contain(key)`` is True on every thread. Past twice the target FP rate it
        warns once or raises FilterFull, adding nothing (``on_full``)."""
        self._check_mutable()
        batch = single_key_batch(key)
        with self._admitted(1) as held:
            self._write_batch(batch, 1, held)

    def add_many(self, keys: Any, threads: int | None = None) -> None:
        """Add a batch of keys (list, numpy array, pyarrow array...). Cost: one kernel pass.

        ``threads=N > 1`` builds on N threads in this one call (kernels release the GIL); the
        bytes are identical to a serial build (see :mod:`bloomdb.filters.parallel` for how each
        family splits the work). Raises InvalidArgument for a bad ``threads``, changing nothing.
        Safe to call from many threads at once, like :meth:`add`. With ``on_full="raise"`` a batch
        that would take the filter past twice its target FP rate raises FilterFull, adding none.
        """
        threads = parallel.check_threads(threads)
        self._check_mutable()
        batches = _keys.to_batches(keys)
        with self._admitted(sum(len(b) for b in batches)) as held:
            for b in batches:
                self._write_batch(b, threads, held)

    def _add_parallel(self, batch: KeyBatch, threads: int, atomic: bool) -> None:
        """Add ``batch`` on ``threads`` threads (see :mod:`bloomdb.filters.parallel`).

        Alone (``atomic`` False) and when ``threads x size_bytes <= 64 MiB``: every thread fills a
        private zeroed copy from its slice of the keys and the copies are merged in with
        ``_union_into``. Otherwise every thread adds its slice to the filter itself with atomic OR
        (bit families only; others override). Either way the bytes equal a serial build. Cost:
        O(n / threads) per thread, plus O(threads x size_bytes) to merge private copies.
        """
        spans = parallel.spans(len(batch), threads)
        if atomic or threads * self.size_bytes > parallel.PRIVATE_COPY_LIMIT:
            parallel.run(lambda span: self._add_batch(parallel.slice_batch(batch, *span), True), spans, threads)
            return

        def fill(span):
            private = type(self)._from_parts(self._params(), fmt.aligned_zeros(self.size_bytes), 0)
            private._add_batch(parallel.slice_batch(batch, *span), False)
            return private._payload()

        for payload in parallel.run(fill, spans, threads):
            self._union_into(payload, False)

    def _check_source(self) -> None:
        """For a memory-mapped filter: CorruptionError if its file changed in place (see
        :mod:`bloomdb.filters.mapped`); nothing otherwise."""
        if self._mapped is not None:
            self._mapped.check()

    def might_contain(self, key: Any) -> bool:
        """False: the key was certainly never added. True: it probably was (FP ~ estimated_fpr)."""
        out = np.zeros(1, dtype=np.bool_)
        batch = single_key_batch(key)
        self._check_source()
        self._query_batch(batch, out)
        self._check_source()
        return bool(out[0])

    def might_contain_many(self, keys: Any, out: np.ndarray | None = None) -> np.ndarray:
        """``might_contain`` of each key, as a numpy bool array in input order (written into
        ``out``, a writable C-contiguous bool array of one entry per key, when given; it is
        returned). Raises InvalidArgument for a bad ``out`` before probing."""
        batches = _keys.to_batches(keys)
        n = sum(len(b) for b in batches)
        out = _out_array(out, n)
        pos = 0
        self._check_source()
        for b in batches:
            m = len(b)
            if m:
                self._query_batch(b, out[pos : pos + m])
            pos += m
        self._check_source()
        return out

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        """``might_contain`` of keys given as the family's hashes (families with a hash-level entry point)."""
        raise NotImplementedError(f"{self.family} filters have no hash-level entry point")

    def might_contain_hashes(self, hashes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``might_contain`` for keys given as the family's own hashes (``uint64`` array): XXH3-64
        for most families, XXH64 (seed 0) of the plain encoding for ``sbbf``, LevelDB's BloomHash
        for ``leveldb``. Engines hash a key once and probe many filters with it.

        The public hash-level probe contract (engines never call a family's private methods):
        answers go into ``out`` (a writable C-contiguous bool array of ``len(hashes)``) when
        given, else into a new array; the array is returned. Raises InvalidArgument for a bad
        ``out`` before probing. Cost: one kernel pass, no copy of contiguous ``uint64`` input."""
        h = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1)
        out = _out_array(out, h.shape[0])
        if h.shape[0]:
            self._check_source()
            self._query_hashes(h, out)
            self._check_source()
        return out

    #: True when ``kernel_args`` are the leading arguments of the family kernel module's
    #: ``check_hash(*args, h)`` (see :mod:`bloomdb.filters.probe`).
    has_probe_kernel: ClassVar[bool] = False

    def probe_descriptor(self) -> ProbeDescriptor | None:
        """How an engine's kernel probes this filter by one hash: family tag, format version and
        the arguments of the family's own ``check_hash`` (:mod:`bloomdb.filters.probe`), or
        ``None`` when the family has no single-hash kernel (ask :meth:`might_contain_hashes`)."""
        if not self.has_probe_kernel:
            return None
        args = self.kernel_args
        return ProbeDescriptor(fmt.FAMILY_TAGS[self.family], self.family_version,
                               args if isinstance(args, tuple) else (args,))

    def stats(self) -> dict[str, Any]:
        """A summary: family, count, capacity, bits, bytes, k, fill ratio, estimated FP rate."""
        return {
            "family": self.family,
            "count": self.count,
            "capacity": self.capacity,
            "num_bits": self.num_bits,
            "size_bytes": self.size_bytes,
            "bits_per_key": self.bits_per_key,
            "num_probes": self.num_probes,
            "fill_ratio": self.fill_ratio(),
            "estimated_fpr": self.estimated_fpr(),
        }

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.family} count={self.count} bits={self.num_bits} "
            f"k={self.num_probes} ~fpr={self.estimated_fpr():.3g}>"
        )

    def __contains__(self, key: Any) -> bool:  # pragma: no cover - the refusal is the feature
        raise TypeError("filters have no 'in': use might_contain(key), whose True may be a false positive")

    # ---- bytes, files, pickle ----------------------------------------------------------

    def _snapshot(self) -> tuple[np.ndarray, int]:
        """``(payload copy, count)``. Families that write one at a time are copied with writers
        held off; bit-setting writers may keep setting bits meanwhile, which only adds keys whose
        add had not returned. Cost: one copy of the payload."""
        if self.shared_writes:
            return self._copy_payload()
        with self._gate.write(False):
            return self._copy_payload()

    def _copy_payload(self) -> tuple[np.ndarray, int]:
        """``(a new aligned copy of the payload parts one after another, count)``."""
        count, parts = self._count, self._payload_parts()
        payload = fmt.aligned_empty(sum(int(p.nbytes) for p in parts))
        self._check_source()
        pos = 0
        for p in parts:
            payload[pos : pos + p.nbytes] = p
            pos += p.nbytes
        self._check_source()
        return payload, count

    def to_bytes(self) -> bytes:
        """Serialise to the self-describing envelope (magic, family tag, version, params, CRC32C).

        Safe while other threads add: the envelope is made from a snapshot (its CRC always matches).
        Cost: two copies of the payload and one CRC pass."""
        payload, count = self._snapshot()
        return fmt.encode(fmt.FAMILY_TAGS[self.family], self.family_version, self._params(), count, payload,
                          self.on_full)

    def _header(self, count: int, payload: np.ndarray, crc: int) -> bytes:
        """The envelope header for ``payload`` (``crc`` its CRC32C) holding ``count`` keys."""
        return fmt.encode_header(fmt.FAMILY_TAGS[self.family], self.family_version, self._params(), count,
                                 payload.nbytes, crc, self.on_full)

    @classmethod
    def _from_envelope(cls, env: fmt.Envelope, payload: np.ndarray, source: str | None) -> "Filter":
        if env.family_version != cls.family_version:
            raise CorruptionError(
                f"{cls.family} filter format version {env.family_version} is not supported "
                f"(this bloomdb reads version {cls.family_version})",
                source,
            )
        try:
            f = cls._from_parts(env.params, payload, env.count)
            f._set_on_full(env.on_full)
            return f
        except CorruptionError:
            raise
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise CorruptionError(f"bad {cls.family} filter parameters: {exc}", source) from exc

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_bytes` to ``path`` atomically: a uniquely named temp file beside it
        (so concurrent saves, from threads or processes, never write into one another's), fsync,
        rename, fsync of the directory. On any error the temp file is removed and ``path`` is
        untouched. A filter open on the old file (even memory-mapped) keeps its contents."""
        path = os.fspath(path)
        data = self.to_bytes()
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
            raise
        _fsync_dir(folder)

    def copy(self) -> "Filter":
        """An independent deep copy (same family, parameters, bits and count; see :meth:`_snapshot`)."""
        payload, count = self._snapshot()
        out = type(self)._from_parts(self._params(), payload, count)
        out._set_on_full(self.on_full)
        return out

    def __reduce_ex__(self, protocol: int):
        """Pickle. Protocols < 5: the :meth:`to_bytes` envelope (one snapshot copy). Protocol 5:
        the envelope header plus the payload as a :class:`pickle.PickleBuffer` over the filter's
        own memory, so a ``buffer_callback`` (multiprocessing, Dask) ships a 1 GB filter without
        copying it; the payload CRC is taken at this call with writers held off and checked on
        arrival (a filter written to while being pickled arrives as CorruptionError, never torn).
        ``on_full`` travels with it. Cost: one CRC pass; no copy out of band (``scalable``, whose
        levels are separate arrays, makes one)."""
        from .pickling import reduce_filter

        return reduce_filter(self, protocol)

    # ---- writable maps ------------------------------------------------------------------

    def flush(self) -> None:
        """Make a filter opened with ``mmap="r+"`` durable in its file: sync the payload, then
        rewrite the header (count, payload CRC, ``on_full``) and sync it. Writers wait meanwhile.
        No-op for any other filter. Cost: one CRC pass and an ``msync`` of the dirty pages."""
        m = self._mapped
        if m is None or not m.writable or not m.open:
            return
        with self._gate.write(False):
            self._check_source()
            payload = self._payload()
            if m.dirty or m.on_full_code() != fmt.ON_FULL_CODES.index(self.on_full):
                m.commit(self._header(self._count, payload, crc32c(payload)))

    def close(self) -> None:
        """For a filter opened with ``mmap="r+"``: :meth:`flush`, release the file's lock and make
        the filter read-only (queries keep working on the map). No-op for any other filter;
        ``with filters.open(p, mmap="r+") as f:`` closes at the end of the block."""
        m = self._mapped
        if m is None or not m.writable or not m.open:
            return
        self.flush()
        self._readonly = True
        m.release()
        _open_writers.pop(id(self), None)

    def __enter__(self) -> "Filter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        m = getattr(self, "_mapped", None)
        if m is not None and m.writable:
            with contextlib.suppress(Exception):
                self.close()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Filter):
            return NotImplemented
        if type(self) is not type(other) or self._params() != other._params():
            return False
        (mine, n_mine), (theirs, n_theirs) = self._snapshot(), other._snapshot()
        return n_mine == n_theirs and np.array_equal(mine, theirs)

    __hash__ = None  # type: ignore[assignment]  # mutable

    # ---- union --------------------------------------------------------------------------

    def _check_compatible(self, other: "Filter") -> None:
        if not isinstance(other, Filter) or type(other) is not type(self):
            raise IncompatibleFilters(
                f"cannot combine a {self.family} filter with {type(other).__name__}"
            )
        if self._params() != other._params() or self.size_bytes != other.size_bytes:
            raise IncompatibleFilters(
                f"cannot combine {self.family} filters of different shape or parameters"
            )

    def _union_into(self, payload: np.ndarray, atomic: bool) -> None:
        """Merge another filter's payload (a snapshot) into ``self`` (the caller went through the
        gate): OR for bit-array families, atomic per word when ``atomic``; others override."""
        or_into(self._payload(), payload, atomic)

    def _merge(self, other: "Filter") -> None:
        """Merge a snapshot of ``other`` into ``self`` as one write, and add its count."""
        payload, count = other._snapshot()
        with self._admitted(count) as held:
            with self._writing(self.shared_writes) as atomic:
                self._union_into(payload, atomic)
            self._counted(count, held[0])
            held[0] = 0

    def union(self, other: "Filter") -> "Filter":
        """A new filter answering True for every key either filter holds (same family and shape)."""
        self._check_compatible(other)
        out = self.copy()
        out._merge(other)
        return out

    def __or__(self, other: "Filter") -> "Filter":
        if not isinstance(other, Filter):
            return NotImplemented
        return self.union(other)

    def __ior__(self, other: "Filter") -> "Filter":
        if not isinstance(other, Filter):
            return NotImplemented
        self._check_mutable()
        self._check_compatible(other)
        self._merge(other)
        return self

    # ---- intersection -------------------------------------------------------------------

    #: True for the bit-array families, where the AND of two payloads answers True for every key
    #: both filters hold.
    intersectable: ClassVar[bool] = False

    def _check_intersectable(self, other: "Filter") -> None:
        if not self.intersectable:
            raise IncompatibleFilters(
                f"{self.family} filters have no intersection (only bit-array Bloom families: "
                "standard, blocked, register, sbbf)"
            )
        self._check_compatible(other)

    def _intersect(self, other: "Filter") -> None:
        """AND a snapshot of ``other`` into ``self`` with writers held off (a bit cleared under a
        concurrent add would lose it); ``count`` becomes the smaller count."""
        payload, count = other._snapshot()
        with self._writing(False):
            np.bitwise_and(self._payload(), payload, out=self._payload())
            with self._lock:
                self._count = min(self._count, count)

    def intersection(self, other: "Filter") -> "Filter":
        """A new filter answering True for every key both filters hold (bitwise AND; same family
        and shape, else IncompatibleFilters). Its FP rate is at most either operand's, but can be
        above that of a filter built from the true intersection (bits set by keys of only one
        side can meet); ``count`` is the smaller count, an upper bound of the keys in common."""
        self._check_intersectable(other)
        out = self.copy()
        out._intersect(other)
        return out

    def __and__(self, other: "Filter") -> "Filter":
        if not isinstance(other, Filter):
            return NotImplemented
        return self.intersection(other)

    def __iand__(self, other: "Filter") -> "Filter":
        if not isinstance(other, Filter):
            return NotImplemented
        self._check_mutable()
        self._check_intersectable(other)
        self._intersect(other)
        return self


def _fsync_dir(folder: str) -> None:
    """Make a rename in ``folder`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _out_array(out: np.ndarray | None, n: int) -> np.ndarray:
    """``out`` checked as the answer array for ``n`` keys (zeroed), or a new one."""
    if out is None:
        return np.zeros(n, dtype=np.bool_)
    if (not isinstance(out, np.ndarray) or out.dtype != np.bool_ or out.ndim != 1 or out.shape[0] != n
            or not out.flags.c_contiguous or not out.flags.writeable):
        raise InvalidArgument(f"out must be a writable contiguous bool array of {n} entries")
    out[:] = False
    return out


class HashedFilter(Filter):
    """A filter fed by one 64-bit hash per key: XXH3-64 (seed 0) of the key's bytes.

    Subclasses implement ``_add_hashes(h, atomic)`` / ``_query_hashes(h, out)`` over ``uint64`` arrays,
    and may override ``_add_ints`` / ``_query_ints`` with kernels that hash and probe integer
    keys in one fused pass (no hash array in between).
    """

    @abstractmethod
    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None: ...

    @abstractmethod
    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None: ...

    def _add_ints(self, ints: np.ndarray, atomic: bool) -> None:
        from ..hashing import hash_batch

        self._add_hashes(hash_batch(KeyBatch(ints=ints)), atomic)

    def _query_ints(self, ints: np.ndarray, out: np.ndarray) -> None:
        from ..hashing import hash_batch

        self._query_hashes(hash_batch(KeyBatch(ints=ints)), out)

    def _add_batch(self, batch: KeyBatch, atomic: bool) -> None:
        if batch.is_int:
            self._add_ints(batch.ints, atomic)
        else:
            from ..hashing import hash_batch

            self._add_hashes(hash_batch(batch), atomic)

    def _query_batch(self, batch: KeyBatch, out: np.ndarray) -> None:
        if batch.is_int:
            self._query_ints(batch.ints, out)
        else:
            from ..hashing import hash_batch

            self._query_hashes(hash_batch(batch), out)

    # Public hash-level entry points: engines (the LSM store, the join) hash a key once and
    # probe many filters with it.

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Add keys given as their XXH3-64 hashes (``uint64`` array). Cost: one kernel pass."""
        self._check_mutable()
        h = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1)
        n = int(h.shape[0])
        with self._admitted(n) as held:
            with self._writing(self.shared_writes) as atomic:
                self._add_hashes(h, atomic)
            self._counted(n, held[0])
            held[0] = 0


def _check_path(path: Any) -> str:
    """``os.fspath(path)``; InvalidArgument for a non-path or a directory."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise InvalidArgument(f"a filter path must be a str or os.PathLike, got {type(path).__name__}") from None
    if os.path.isdir(path):
        raise InvalidArgument(f"{path!r} is a directory, not a filter file")
    return path


def _check_mmap_mode(use_mmap: Any) -> bool | str:
    if use_mmap is True or use_mmap is False or use_mmap == "r+":
        return use_mmap
    raise InvalidArgument(f"mmap must be True, False or 'r+', got {use_mmap!r}")


def open_path(path: str | os.PathLike, use_mmap: bool | str = True, verify: bool = True) -> Filter:
    """Open a filter saved with :meth:`Filter.save`; see :func:`bloomdb.filters.open`."""
    use_mmap = _check_mmap_mode(use_mmap)
    path = _check_path(path)
    try:
        mapped = None
        if use_mmap:
            mapped = MappedFile(path, writable=use_mmap == "r+")
            buf: Any = mapped.map
        else:
            with open(path, "rb") as fh:
                buf = fh.read()
    except FileNotFoundError as exc:
        raise FilterFileNotFound(exc.errno, f"no filter file at {path!r}", path) from None
    except IsADirectoryError:
        raise InvalidArgument(f"{path!r} is a directory, not a filter file") from None
    try:
        return _open_envelope(buf, mapped, path, verify)
    except BaseException:
        if mapped is not None:
            mapped.release()
        raise


def _open_envelope(buf: Any, mapped: MappedFile | None, path: str, verify: bool) -> Filter:
    env = fmt.decode(buf, verify_payload=verify, source=path)
    cls = registry.family_by_tag(env.family_tag, source=path)
    if mapped is not None and mapped.writable:
        refusal = "static filters are built once from all their keys" if cls.static else cls.writable_map_refusal
        if refusal:
            raise InvalidArgument(f"{path!r}: a {cls.family} filter cannot be opened with mmap='r+' ({refusal}); "
                                  "open it with mmap=True or mmap=False")
    if mapped is not None:
        mapped.check()  # the checksum above read the file as it was at open
        payload = np.frombuffer(buf, dtype=np.uint8, count=env.payload_length, offset=env.payload_offset)
    else:
        payload = fmt.aligned_empty(env.payload_length)
        payload[:] = np.frombuffer(buf, dtype=np.uint8, count=env.payload_length, offset=env.payload_offset)
    f = cls._from_envelope(env, payload, path)
    f._mapped = mapped
    if mapped is not None and mapped.writable:
        f._mark = mapped.mark_writing
        _open_writers[id(f)] = weakref.ref(f)
    return f


#: Filters open with mmap="r+" (by id, weakly): closed (flushed) at interpreter exit if still open.
_open_writers: dict[int, "weakref.ref[Filter]"] = {}


@atexit.register
def _close_writers() -> None:
    for ref in list(_open_writers.values()):
        f = ref()
        if f is not None:
            with contextlib.suppress(Exception):
                f.close()
