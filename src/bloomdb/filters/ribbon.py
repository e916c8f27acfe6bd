"""``ribbon``: the Standard128 Ribbon filter (static; RocksDB's ``NewRibbonFilterPolicy``).

A Ribbon filter stores, for a set of keys, a solution ``S`` of the linear system over GF(2)
``row(key) · S = result(key)``: each key's row is 128 random bits at a random start slot, its
result r random bits. A query recomputes the key's row and checks the r result bits; an absent
key passes with probability ``2^-r``. Almost no space is wasted (slots ≈ 1.04 × keys against
Bloom's 1.44 × log2(1/p)), so at equal FP rate it needs ~30% less memory than a blocked Bloom —
paid for with a slower build (Gaussian elimination, then back-substitution) and a few cache
lines per query.

Sizing follows RocksDB: the number in ``"ribbon:N"`` is the *Bloom-equivalent* bits per key —
the filter aims at the FP rate of RocksDB's FastLocalBloom at N bits/key
(``1 / CacheLocalFpRate(N, ChooseNumProbes(N))``) — and meets it with a fractional number of
result columns: a share of the 128-slot blocks use ``floor(log2(1/fp))`` columns, the rest one
more (RocksDB's ``GetBytesForOneInFpRate``), so any FP rate is reachable. ``ribbon:10`` gives
about 0.95% at about 7 bits/key. ``fpr=`` targets an FP rate directly.

The build hashes every key once (XXH3-64) and tries seeds 0, 1, 2, ... until banding succeeds
(about 1 in 20 attempts fails at the default slot count); the seed is stored, and the number of
failed seeds is reported by :meth:`RibbonFilter.stats`. After ``max_seeds`` failures it raises
:class:`~bloomdb.errors.FilterBuildError`. Not bit-compatible with RocksDB (different hash and
row derivation), same algorithm and sizing. Empty key set: a zero-byte filter answering False.

Cost: build ~20 bytes/slot of temporary memory, banding O(n · 128/64) word ops with one random
access per key, back-substitution O(slots · columns); a query touches 2-4 cache lines.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from ..errors import FilterBuildError, InvalidArgument
from . import _ribbon_kernels as K
from . import format as fmt
from . import math as fm
from .registry import register
from .base import check_bits_per_key, check_fpr
from .static import StaticHashedFilter, check_attempts

# count, num_slots, upper_cols, upper_start_block, seed, millibits (bloom-equivalent; 0 = fpr given), one_in
_PARAMS = struct.Struct("<QQBQIId")
_MAX_SLOTS = (1 << 32) - 128
DEFAULT_MAX_SEEDS = 256


def bloom_equivalent_one_in(bits_per_key: float) -> float:
    """``1 / FP`` of RocksDB's FastLocalBloom at ``bits_per_key`` (what ``ribbon:N`` aims at)."""
    mb = max(1000, fm.rocksdb_millibits_per_key(bits_per_key))
    return 1.0 / fm.cache_local_fpr(mb / 1000.0, fm.rocksdb_num_probes(mb))


def default_slots_per_key(num_keys: int) -> float:
    """Slots per key that band with ~1/20 failure: RocksDB's kOneIn20 (1.036 at 2^17 keys,
    +0.0038 per doubling; measured here to hold for this row derivation, see tests)."""
    return max(1.01, 1.036 + 0.0038 * math.log2(max(num_keys, 1) / 126_506))


def num_slots_for(num_keys: int, slots_per_key: float | None = None) -> int:
    """Slots for ``num_keys``: a multiple of 128, at least 256 (0 for no keys)."""
    if num_keys == 0:
        return 0
    f = default_slots_per_key(num_keys) if slots_per_key is None else slots_per_key
    return max(256, -(-math.ceil(num_keys * f) // 128) * 128)


def column_layout(num_blocks: int, one_in: float) -> tuple[int, int]:
    """``(upper_cols, upper_start_block)`` meeting FP ``1/one_in`` on average over the blocks.

    ``L = floor(log2(one_in))``; a share ``(fp - 2^-(L+1)) / (2^-L - 2^-(L+1))`` of the blocks
    (the first ones) get L columns, the others L+1 (RocksDB ``GetBytesForOneInFpRate``); at most
    32 columns.
    """
    if one_in >= 2.0**32:
        return 32, 0
    lower = int(math.floor(math.log2(max(1.0, one_in))))
    fp = 1.0 / one_in
    portion = (fp - 2.0 ** -(lower + 1)) / (2.0**-lower - 2.0 ** -(lower + 1))
    portion = math.floor(min(1.0, max(0.0, portion)) * 10000.0 + 0.49) / 10000.0
    return lower + 1, min(num_blocks, int(portion * num_blocks + 0.5))


def layout_fpr(num_blocks: int, upper_cols: int, upper_start_block: int) -> float:
    """FP of a layout: keys start uniformly over blocks; a block with c columns passes 2^-c."""
    if num_blocks == 0:
        return 0.0
    lo = upper_start_block * 2.0 ** -(upper_cols - 1)
    return (lo + (num_blocks - upper_start_block) * 2.0**-upper_cols) / num_blocks


@register
class RibbonFilter(StaticHashedFilter):
    """Standard128 Ribbon (static): ~30% smaller than blocked Bloom at equal FP rate, slower build."""

    family = "ribbon"
    family_version = 1
    _kernels = K
    example_spec = "ribbon:10"
    spec_meaning = "Bloom-equivalent bits per key (FP of blocked:N)"

    @classmethod
    def build_hashes(
        cls,
        hashes: np.ndarray,
        bits_per_key: float | None = None,
        fpr: float | None = None,
        slots_per_key: float | None = None,
        max_seeds: int = DEFAULT_MAX_SEEDS,
    ) -> "RibbonFilter":
        """Build over XXH3-64 ``hashes`` at Bloom-equivalent ``bits_per_key`` (default 10) or ``fpr``.

        ``slots_per_key`` overrides the slot count (default :func:`default_slots_per_key`);
        ``max_seeds`` bounds the seeds tried. Raises InvalidArgument for bad parameters and
        FilterBuildError when every seed fails.
        """
        if fpr is not None and bits_per_key is not None:
            raise InvalidArgument("give bits_per_key or fpr, not both")
        if fpr is not None:
            one_in = 1.0 / check_fpr(fpr, best=2.0**-32, family="ribbon", why="32 result columns")
            millibits = 0
        else:
            bpk = check_bits_per_key(10.0 if bits_per_key is None else bits_per_key, high=100.0,
                                     family="ribbon", why="RocksDB's cap")
            millibits = max(1000, fm.rocksdb_millibits_per_key(bpk))
            one_in = bloom_equivalent_one_in(millibits / 1000.0)
            if one_in > 2.0**32:
                raise InvalidArgument(
                    f"ribbon: {bits_per_key} Bloom-equivalent bits/key means an FP rate of {1 / one_in:.3g}, "
                    "below 2^-32, the lowest ribbon reaches (32 result columns)"
                )
        if slots_per_key is not None and not (0.0 < float(slots_per_key) <= 100.0):
            raise InvalidArgument(f"slots_per_key must be in (0, 100], got {slots_per_key!r}")
        check_attempts("max_seeds", max_seeds)
        h = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1)
        n = int(h.shape[0])
        num_slots = num_slots_for(n, slots_per_key)
        if num_slots > _MAX_SLOTS:
            raise InvalidArgument(f"ribbon filter of {num_slots} slots exceeds 2^32 slots")
        num_blocks = num_slots // 128
        upper_cols, usb = column_layout(num_blocks, one_in) if n else (1, 0)
        segments = usb * (upper_cols - 1) + (num_blocks - usb) * upper_cols
        buf = fmt.aligned_zeros(segments * 16)
        seed = 0
        if n:
            bands = np.zeros(3 * num_slots, np.uint64)
            num_starts = np.uint64(num_slots - 127)
            while True:
                if K.band(h, np.uint32(seed), num_starts, bands) < 0:
                    break
                seed += 1
                if seed >= max_seeds:
                    raise FilterBuildError(
                        f"ribbon: banding {n} keys into {num_slots} slots failed for all {max_seeds} seeds "
                        f"({num_slots / n:.4f} slots/key; the default is {default_slots_per_key(n):.4f})"
                    )
                bands.fill(0)
            K.back_substitute(bands, num_blocks, upper_cols, usb, buf.view(np.uint64))
        return cls._assemble(buf, _count=n, _slots=num_slots, _upper_cols=upper_cols, _usb=usb, _seed=seed,
                             _millibits=millibits, _one_in=one_in)

    # envelope
    _params_struct = _PARAMS
    _param_names = ("_count", "_slots", "_upper_cols", "_usb", "_seed", "_millibits", "_one_in")

    def _views(self) -> None:
        self._words = self._buf.view(np.uint64)

    @classmethod
    def _inconsistency(cls, fields: dict[str, Any], payload: np.ndarray) -> str:
        count, slots, upper, usb, one_in = (fields[k] for k in ("_count", "_slots", "_upper_cols", "_usb", "_one_in"))
        blocks = slots // 128
        segments = usb * (upper - 1) + (blocks - usb) * upper
        if (
            slots % 128 or slots > _MAX_SLOTS or (slots == 0) != (count == 0) or (slots and slots < 256)
            or not 1 <= upper <= 32 or usb > blocks
            or payload.nbytes != segments * 16
            or not one_in >= 1.0
        ):
            return f"slots={slots} cols={upper} start={usb} payload={payload.nbytes}"
        return ""

    # facts
    @property
    def kernel_args(self) -> tuple:
        """``(words64, num_starts, upper_cols, upper_start_block, seed)`` for
        :func:`_ribbon_kernels.check_hash` inside an engine's kernel."""
        starts = self._slots - 127 if self._slots else 0
        return (self._words, np.uint64(starts), np.uint64(self._upper_cols), np.uint64(self._usb),
                np.uint32(self._seed))

    @property
    def num_slots(self) -> int:
        return self._slots

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def num_probes(self) -> int:
        """Result columns checked by a query in the upper blocks (the 'probes' of a Ribbon)."""
        return self._upper_cols

    def _layout_fpr(self) -> float:
        """Exact for the column layout: ``2^-columns`` averaged over blocks."""
        return layout_fpr(self._slots // 128, self._upper_cols, self._usb)

    def stats(self) -> dict:
        s = super().stats()
        s.update(
            num_slots=self._slots,
            slots_per_key=self._slots / max(1, self._count),
            result_columns=(self._upper_cols - 1, self._upper_cols),
            upper_start_block=self._usb,
            seed=self._seed,
            banding_failures=self._seed,
            target_fpr=1.0 / self._one_in,
            bloom_equivalent_bits_per_key=self._millibits / 1000.0 if self._millibits else None,
        )
        return s

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """FP at ``bits_per_key`` of *actual* memory (slots for 1M keys): fractional columns
        ``c = bits_per_key / slots_per_key``, FP linear between ``2^-floor(c)`` and ``2^-ceil(c)``."""
        c = bits_per_key / default_slots_per_key(1_000_000)
        lower = math.floor(c)
        frac = c - lower
        return (1.0 - frac) * 2.0**-lower + frac * 2.0 ** -(lower + 1)

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """Specs whose filters take about ``bits_per_key_values`` of actual memory (the number in
        ``ribbon:N`` is Bloom-equivalent, so ``ribbon:10`` alone would take ~7 bits/key)."""
        return [f"ribbon:{bloom_equivalent_for_bits(b):.2f}" for b in bits_per_key_values]


def bloom_equivalent_for_bits(bits_per_key: float) -> float:
    """The Bloom-equivalent N whose ``ribbon:N`` filter (1M keys) takes about ``bits_per_key``."""
    target = RibbonFilter.expected_fpr(bits_per_key)
    lo, hi = 1.0, 99.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if 1.0 / bloom_equivalent_one_in(mid) > target:
            lo = mid
        else:
            hi = mid
    return hi
