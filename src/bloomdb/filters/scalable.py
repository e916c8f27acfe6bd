"""``scalable``: a Bloom filter that grows and keeps its FP rate (Almeida et al. 2007).

"Scalable Bloom Filters" (Almeida, Baquero, Preguiça, Hutchison; IPL 101(6), 2007): a chain of
``blocked`` sub-filters (levels). Level ``i`` holds ``initial_capacity * growth^i`` keys at FP
rate ``P (1 - r) r^i`` (``P`` the target, ``r`` the tightening ratio), so however many levels
there are the compound FP rate ``1 - prod(1 - p_i)`` stays below ``sum p_i < P``. Keys go into the
newest level; when it holds its capacity the next level is made. Memory per key tends to
``-log2(P (1 - r) r^i) / ln 2`` bits: a little more than a ``blocked`` filter sized for the final
count (see docs/benchmarks.md for measurements).

Spec: ``scalable:0.01`` (the target FP rate); ``initial_capacity=`` (default 1024, or
``capacity=``), ``growth=`` (default 2, in [1.1, 16]) and ``tightening=`` (default 0.85; the paper
recommends 0.8–0.9). Every level is a :class:`~bloomdb.filters.blocked.BlockedBloom` used through
its own batch entry points (``_add_hashes`` / ``_query_hashes``), so its layout, kernels and bytes
are the blocked family's. A key is hashed once (XXH3-64) for all levels.

Cost: an add is one kernel pass over the newest level (two when a batch fills it); a query one
pass per level (``log_growth(n / initial_capacity)`` levels, ~10 at 1M keys from 1024). Every key
added counts towards growth, duplicates too.

Bytes (``docs/formats.md``): the parameter block is the target, initial capacity, growth,
tightening and level count, then per level its key count and the 21-byte ``blocked`` parameter
block; the payload is the levels' payloads one after another (each a whole number of 64-byte
lines, so a memory map keeps every level cache-line aligned).

Concurrency: writes (add, union) run one at a time (:mod:`.writers`, ``shared_writes = False``):
growth replaces the tuple of levels, which queries read once, so a query never misses a key whose
add returned. ``add_many(keys, threads=N)`` hashes on N threads and adds on one.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import IncompatibleFilters, InvalidArgument
from . import parallel
from .registry import register
from ._cache_lines import PARAMS as LEVEL_PARAMS
from ._common_kernels import or_into
from .base import HashedFilter, check_capacity, check_fpr

if TYPE_CHECKING:
    from .blocked import BlockedBloom


def _blocked():
    """The blocked family module (imported on use: the registry may be importing it right now)."""
    from . import blocked

    return blocked

_HEAD = struct.Struct("<dQddI")  # target fpr, initial capacity, growth, tightening, levels
_COUNT = struct.Struct("<Q")
DEFAULT_INITIAL_CAPACITY = 1024
DEFAULT_GROWTH = 2.0
DEFAULT_TIGHTENING = 0.85
#: The chain is planned (and its FP rates checked reachable) for up to this many keys.
PLANNED_KEYS = 1 << 50


def _check_ratio(name: str, value: Any, lo: float, hi: float, hi_open: bool) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        v = math.nan
    if isinstance(value, bool) or not (lo <= v and (v < hi if hi_open else v <= hi)):
        raise InvalidArgument(
            f"scalable: {name} must be a number in [{lo:g}, {hi:g}{')' if hi_open else ']'}, got {value!r}"
        )
    return v


@register
class ScalableBloom(HashedFilter):
    """Scalable Bloom (Almeida et al. 2007): a chain of growing blocked filters under one target FP rate."""

    family = "scalable"
    family_version = 1
    example_spec = "scalable:0.01"
    spec_meaning = "target FP rate for any number of keys (initial_capacity=, growth=, tightening=)"
    shared_writes = False
    writable_map_refusal = "it grows by adding levels, which a fixed-size file map cannot hold"
    grows = True

    def __init__(
        self,
        capacity: int | None = None,
        fpr: float = 0.01,
        initial_capacity: int | None = None,
        growth: float = DEFAULT_GROWTH,
        tightening: float = DEFAULT_TIGHTENING,
    ):
        """An empty chain (its first level allocated). ``capacity`` is another name for
        ``initial_capacity`` (give one). Raises InvalidArgument naming the bound."""
        if capacity is not None and initial_capacity is not None:
            raise InvalidArgument("scalable: give capacity or initial_capacity (the same thing), not both")
        first = initial_capacity if initial_capacity is not None else capacity
        first = DEFAULT_INITIAL_CAPACITY if first is None else check_capacity(first, "scalable")
        fpr = check_fpr(fpr, family="scalable")
        growth = _check_ratio("growth", growth, 1.1, 16.0, False)
        tightening = _check_ratio("tightening", tightening, 0.05, 1.0, True)
        self._cfg = (fpr, first, growth, tightening)
        self._check_reachable()
        self._init((), 0, writable=True)
        self._grow()

    def _init(self, levels: tuple[BlockedBloom, ...], count: int, writable: bool) -> None:
        self._levels = levels
        self._count = count
        self._readonly = not writable

    # ---- the chain ----------------------------------------------------------------------

    def level_plan(self, i: int) -> tuple[int, float]:
        """``(capacity, fpr)`` of level ``i``: ``initial * growth^i`` keys at ``P (1 - r) r^i``."""
        fpr, first, growth, r = self._cfg
        return max(1, math.ceil(first * growth**i)), fpr * (1.0 - r) * r**i

    def _levels_for(self, keys: int) -> int:
        _, first, growth, _ = self._cfg
        return max(1, math.ceil(math.log(max(keys, first) / first, growth)) + 1)

    def _check_reachable(self) -> None:
        last = self._levels_for(PLANNED_KEYS)
        _, p_last = self.level_plan(last)
        blocked = _blocked()
        best = blocked._fpr_at_millibits(blocked.MAX_BITS_PER_KEY * 1000)
        if p_last < best:
            fpr, _, _, r = self._cfg
            raise InvalidArgument(
                f"scalable: target fpr={fpr:g} with tightening {r:g} asks level {last} (2^50 keys) for an FP "
                f"rate of {p_last:.3g}, below {best:.3g}, the lowest a blocked level reaches "
                f"({blocked.MAX_BITS_PER_KEY} bits/key); raise fpr or tightening (or growth)"
            )

    @classmethod
    def plan(cls, keys: int, fpr: float, **kwargs: Any) -> tuple[int, int, int]:
        """``(bits, k, levels)`` of a chain after ``keys`` adds at target ``fpr`` (other
        parameters as for the constructor), computed without allocating. Cost: O(levels) sizing."""
        blocked = _blocked()
        self = cls.__new__(cls)
        self._cfg = (check_fpr(fpr, family="scalable"), kwargs.get("initial_capacity", DEFAULT_INITIAL_CAPACITY),
                     kwargs.get("growth", DEFAULT_GROWTH), kwargs.get("tightening", DEFAULT_TIGHTENING))
        self._check_reachable()
        bits = k = levels = held = 0
        while levels == 0 or held < keys:
            cap, p = self.level_plan(levels)
            level_bits, level_k = blocked.BlockedBloom.planned_size(cap, fpr=p)
            bits, k = bits + level_bits, max(k, level_k)
            held, levels = held + cap, levels + 1
        return bits, k, levels

    def _grow(self) -> None:
        cap, p = self.level_plan(len(self._levels))
        self._levels = self._levels + (_blocked().BlockedBloom(capacity=cap, fpr=p),)

    @property
    def levels(self) -> tuple[BlockedBloom, ...]:
        """The sub-filters, oldest first (read-only views of the chain's state)."""
        return self._levels

    # ---- spec ---------------------------------------------------------------------------

    @classmethod
    def spec_kwargs(cls, arg: str) -> dict[str, Any]:
        """``"0.01"`` -> ``fpr=0.01`` (the target FP rate)."""
        try:
            return {"fpr": float(arg)}
        except ValueError:
            raise InvalidArgument(f"scalable: the spec number is the target FP rate, got {arg!r}") from None

    @classmethod
    def spec_for_bits_per_key(cls, bits_per_key: float) -> str:
        return cls.bench_specs([bits_per_key])[0]

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """``scalable:P`` with P the FP rate of ``blocked:b`` (what b bits/key buys a fixed filter)."""
        return [f"scalable:{_blocked().BlockedBloom.expected_fpr(b):.3g}" for b in bits_per_key_values]

    # ---- kernels ------------------------------------------------------------------------

    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None:
        """Fill the newest level up to its capacity, then grow (writers are exclusive)."""
        pos, n = 0, int(hashes.shape[0])
        while pos < n:
            last = self._levels[-1]
            room = last._capacity - last._count
            if room <= 0:
                self._grow()
                continue
            take = min(room, n - pos)
            last._add_hashes(hashes[pos : pos + take], False)
            last._count += take
            pos += take

    def _add_parallel(self, batch, threads: int, atomic: bool) -> None:
        self._add_hashes(parallel.hash_parallel(batch, threads), False)

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        levels = self._levels  # one read: growth replaces the tuple
        levels[0]._query_hashes(hashes, out)
        if len(levels) > 1:
            more = np.empty_like(out)
            for level in levels[1:]:
                level._query_hashes(hashes, more)
                out |= more

    # ---- envelope -----------------------------------------------------------------------

    def _params(self) -> bytes:
        levels = self._levels
        parts = [_HEAD.pack(*self._cfg, len(levels))]
        for level in levels:
            parts.append(_COUNT.pack(level._count) + level._params())
        return b"".join(parts)

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int) -> "ScalableBloom":
        fpr, first, growth, r, nlevels = _HEAD.unpack_from(params, 0)
        step = _COUNT.size + LEVEL_PARAMS.size
        if len(params) != _HEAD.size + nlevels * step or nlevels == 0:
            raise ValueError(f"inconsistent scalable filter: {nlevels} levels in {len(params)} parameter bytes")
        self = cls.__new__(cls)
        self._cfg = (fpr, first, growth, r)
        levels, pos, total = [], 0, 0
        for i in range(nlevels):
            at = _HEAD.size + i * step
            (lcount,) = _COUNT.unpack_from(params, at)
            lparams = params[at + _COUNT.size : at + step]
            size = LEVEL_PARAMS.unpack(lparams)[1] * 64
            if pos + size > payload.nbytes:
                raise ValueError("inconsistent scalable filter: levels overrun the payload")
            levels.append(_blocked().BlockedBloom._from_parts(lparams, payload[pos : pos + size], lcount))
            pos, total = pos + size, total + lcount
        if pos != payload.nbytes or total != count:
            raise ValueError(f"inconsistent scalable filter: payload {payload.nbytes} / count {count}")
        self._init(tuple(levels), count, writable=payload.flags.writeable)
        return self

    def _payload_parts(self) -> tuple[np.ndarray, ...]:
        return tuple(level._payload() for level in self._levels)  # one read: growth replaces the tuple

    def _payload(self) -> np.ndarray:
        """The levels' payloads one after another (a new aligned array: the levels are separate
        buffers while the filter grows)."""
        return self._copy_payload()[0]

    # ---- union --------------------------------------------------------------------------

    def _check_compatible(self, other: Any) -> None:
        if not isinstance(other, ScalableBloom):
            raise IncompatibleFilters(f"cannot combine a scalable filter with {type(other).__name__}")
        if other._cfg != self._cfg:
            raise IncompatibleFilters(
                "cannot combine scalable filters of different target, initial capacity, growth or tightening"
            )

    def _merge(self, other: "ScalableBloom") -> None:
        """OR level ``i`` of ``other`` into level ``i`` (growing to as many levels). A level may
        then hold more keys than planned; ``estimated_fpr`` counts that honestly."""
        theirs = other.copy()._levels
        with self._gate.write(False):
            while len(self._levels) < len(theirs):
                self._grow()
            for mine, level in zip(self._levels, theirs):
                or_into(mine._payload(), level._payload(), False)
                mine._count += level._count
            self._counted(sum(level._count for level in theirs))

    # ---- facts --------------------------------------------------------------------------

    @property
    def num_bits(self) -> int:
        return sum(level.num_bits for level in self._levels)

    @property
    def num_probes(self) -> int:
        """The largest k of any level (later levels, sized for lower FP rates, probe more)."""
        return max(level.num_probes for level in self._levels)

    @property
    def target(self) -> float:
        return self._cfg[0]

    def target_fpr(self) -> float:
        """The target FP rate of the spec (``scalable:P``), for any number of keys."""
        return self._cfg[0]

    def estimated_fpr(self) -> float:
        """``1 - prod(1 - fpr_i)`` over the levels, each at its own count (blocked's model)."""
        keep = 1.0
        for level in self._levels:
            keep *= 1.0 - level.estimated_fpr()
        return min(1.0, max(0.0, 1.0 - keep))

    def estimated_count(self) -> float:
        """The sum of the levels' fill estimates (see :meth:`Filter.estimated_count`)."""
        return sum(level.estimated_count() for level in self._levels)

    def bench_expected_fpr(self) -> float:
        return self.estimated_fpr()

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        s.update(levels=len(self._levels), target_fpr=self._cfg[0], growth=self._cfg[2], tightening=self._cfg[3])
        return s
