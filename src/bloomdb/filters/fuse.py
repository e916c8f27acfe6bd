"""``fuse8`` / ``fuse16``: binary fuse filters (Graf & Lemire 2022; static, 3-wise).

A binary fuse filter stores one 8- or 16-bit fingerprint per cell in an array of about
``1.125 × n`` cells; a key's three cells lie in three consecutive segments, and the builder
chooses the cell contents so that the three XOR to the key's fingerprint (by *peeling*: a cell
hit by one key is that key's to set). An absent key passes with probability ``2^-8`` (0.39%) or
``2^-16`` (0.0015%) at about 9.0 or 18.0 bits per key: within 13% of the information-theoretic
bound ``log2(1/ε)``, the smallest static filter here per bit of FP rate. The layout follows the
reference implementation (FastFilter/xor_singleheader): segment length
``2^floor(ln(n)/ln(3.33) + 2.25)`` (at most 2^18) and ``max(1.125, 0.875 + 0.25·ln(10^6)/ln(n))``
cells per key. Not bit-compatible with it (bloomdb's XXH3-64 per key and its own per-seed mix).

Spec: ``"fuse8"`` / ``"fuse16"``, no number: the fingerprint width is in the name and fixes both
the FP rate and the size (``filters.build("fuse8", keys)``, ``Fuse8.build(keys)``).

The build hashes every key once (XXH3-64), then tries seeds from a fixed SplitMix64 sequence (the
bytes are a function of the key set) until peeling succeeds — all but rarely the first; the seed
and the number of failed attempts are kept (:meth:`stats`). Duplicate keys are fine: copies are
dropped during the build (and, if some escape that cheap check, after one failed attempt by
deduplicating the hashes). After ``max_attempts`` failures :class:`~bloomdb.errors.FilterBuildError`.
Empty key set: a zero-byte filter answering False.

Cost: build O(n) — about 13 bytes of temporaries per cell plus 9 per key (on transparent huge
pages when large, :mod:`.scratch`), three passes over the keys and one over the cells; ~40 ns/key
of CPU at 10M keys (docs/benchmarks.md); a query reads three cells of the array (three cache
lines).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from ..errors import FilterBuildError, InvalidArgument
from . import _fuse_kernels as K
from . import format as fmt
from . import scratch
from .registry import register
from .static import StaticHashedFilter, check_attempts

# count (keys given), stored (distinct keys), seed, attempts (failed seeds), segment_length, segment_count
_PARAMS = struct.Struct("<QQQIII")
_MAX_SEGMENT_LENGTH = 1 << 18
_MAX_CELLS = (1 << 32) - 1
DEFAULT_MAX_ATTEMPTS = 100
_SEED_START = np.uint64(0x726B2B9D438B9D4D)


def segment_length_for(n: int) -> int:
    """Cells per segment for ``n`` keys: ``2^floor(ln(n)/ln(3.33) + 2.25)``, capped at 2^18
    (the reference's 3-wise rule; the exponent's floor matters for build time)."""
    if n <= 1:
        return 4
    return min(_MAX_SEGMENT_LENGTH, 1 << int(math.floor(math.log(n) / math.log(3.33) + 2.25)))


def size_factor_for(n: int) -> float:
    """Cells per key for ``n`` keys: ``max(1.125, 0.875 + 0.25 ln(10^6) / ln(n))``."""
    if n <= 1:
        return 0.0
    return max(1.125, 0.875 + 0.25 * math.log(1_000_000) / math.log(n))


def layout_for(n: int, size_factor: float | None = None) -> tuple[int, int]:
    """``(segment_length, segment_count)`` for ``n`` keys; the array has
    ``(segment_count + 2) * segment_length`` cells. ``(0, 0)`` for no keys."""
    if n == 0:
        return 0, 0
    seg_len = segment_length_for(n)
    factor = size_factor_for(n) if size_factor is None else size_factor
    capacity = round(n * factor) if n > 1 else 0
    seg_count = max(1, -(-capacity // seg_len) - 2)
    return seg_len, seg_count


def _check_layout(seg_len: int, seg_count: int) -> int:
    """The array length of a layout, or ValueError when it is not one the builder makes."""
    if seg_len == 0 and seg_count == 0:
        return 0
    if not (4 <= seg_len <= _MAX_SEGMENT_LENGTH and seg_len & (seg_len - 1) == 0 and seg_count >= 1):
        raise ValueError(f"segment length {seg_len} / count {seg_count}")
    cells = (seg_count + 2) * seg_len
    if cells > _MAX_CELLS:
        raise ValueError(f"{cells} cells exceed 2^32")
    return cells


def _temporaries(keys: int, cells: int) -> tuple[np.ndarray, ...]:
    """The build's scratch arrays for :func:`_fuse_kernels.populate` (zeroed, on huge pages when
    large): per key the ``x`` order (8 bytes) and peeled position (1), per cell the count (1),
    the XOR of ``x`` (8; at least one per key: it holds the keys' ``x`` first) and the peeling
    stack (4)."""
    return (scratch.zeros(keys, np.uint64), scratch.zeros(keys, np.uint8), scratch.zeros(cells, np.uint8),
            scratch.zeros(max(cells, keys), np.uint64), scratch.zeros(cells, np.uint32))


class BinaryFuse(StaticHashedFilter):
    """Base of the binary fuse families (the fingerprint width is the family's)."""

    _kernels = K
    fingerprint_bits: int = 0
    _dtype: Any = None
    spec_meaning = "none (fingerprint width fixed by the name)"
    #: No number in the spec: ``filter-bench --equal-fpr`` measures the one filter per target.
    spec_has_number = False

    @classmethod
    def spec_kwargs(cls, arg: str) -> dict[str, Any]:
        if arg == "":
            return {}
        raise InvalidArgument(
            f"{cls.family} takes no number in its spec ({cls.fingerprint_bits}-bit fingerprints, "
            f"FP 2^-{cls.fingerprint_bits}): use '{cls.family}', got '{cls.family}:{arg}'"
        )

    @classmethod
    def build(cls, keys: Any, bits_per_key: float | None = None, **kwargs: Any) -> "BinaryFuse":
        """Hash ``keys`` once and build (see :meth:`build_hashes`). ``bits_per_key`` is refused:
        the size follows from the fingerprint width."""
        if bits_per_key is not None:
            raise InvalidArgument(
                f"{cls.family} has no bits_per_key: its size is fixed by its "
                f"{cls.fingerprint_bits}-bit fingerprints (~{1.125 * cls.fingerprint_bits:.1f} bits/key)"
            )
        unknown = sorted(set(kwargs) - {"max_attempts", "size_factor"})
        if unknown:
            raise InvalidArgument(f"{cls.family}: unknown build option(s) {', '.join(unknown)} "
                                  "(options: max_attempts, size_factor)")
        return super().build(keys, **kwargs)

    @classmethod
    def build_hashes(
        cls,
        hashes: np.ndarray,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        size_factor: float | None = None,
    ) -> "BinaryFuse":
        """Build over XXH3-64 ``hashes`` (duplicates allowed).

        ``max_attempts`` bounds the seeds tried; ``size_factor`` overrides the cells per key
        (default :func:`size_factor_for`; below ~1.1 peeling fails). Raises InvalidArgument for
        bad parameters and FilterBuildError when every attempt fails.
        """
        check_attempts("max_attempts", max_attempts)
        if size_factor is not None and not (
            isinstance(size_factor, (int, float)) and not isinstance(size_factor, bool) and 0.5 <= size_factor <= 100.0
        ):
            raise InvalidArgument(f"size_factor must be a number in [0.5, 100], got {size_factor!r}")
        h = np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1)
        count = int(h.shape[0])
        seg_len, seg_count = layout_for(count, size_factor)
        try:
            cells = _check_layout(seg_len, seg_count)
        except ValueError:
            raise InvalidArgument(f"{cls.family}: {count} keys need more than 2^32 cells") from None
        itemsize = np.dtype(cls._dtype).itemsize
        buf = fmt.aligned_zeros(cells * itemsize)
        fps = buf.view(cls._dtype)
        fp_mask = np.uint64((1 << cls.fingerprint_bits) - 1)
        state = _SEED_START
        seed = np.uint64(0)
        stored = 0
        deduplicated = False
        failures = 0
        if count:
            temps = _temporaries(count, cells)
            while True:
                state, seed = K.splitmix64(state)
                state, seed = np.uint64(state), np.uint64(seed)  # numba hands uint64 back as int
                stored, dups = K.populate(h, seed, seg_len, seg_count, fps, fp_mask, *temps)
                if stored == -2:
                    raise RuntimeError(f"{cls.family}: build scratch shorter than the kernel needs")
                if stored >= 0:
                    break
                failures += 1
                if failures >= max_attempts:
                    raise FilterBuildError(
                        f"{cls.family}: peeling {count} keys into {cells} cells failed for all "
                        f"{max_attempts} seeds ({cells / max(1, count):.3f} cells/key; the default is "
                        f"{size_factor_for(count):.3f} plus rounding)"
                    )
                temps[2].fill(0)  # the cells' counts and XORs start from zero again
                temps[3].fill(0)
                if not deduplicated:
                    # copies that escaped the build's check make every seed fail: drop them once
                    deduplicated = True
                    unique = np.unique(h)
                    if unique.shape[0] != h.shape[0]:
                        h = unique
                        seg_len, seg_count = layout_for(int(h.shape[0]), size_factor)
                        cells = _check_layout(seg_len, seg_count)
                        buf = fmt.aligned_zeros(cells * itemsize)
                        fps = buf.view(cls._dtype)
                        temps = _temporaries(int(h.shape[0]), cells)
        return cls._assemble(buf, _count=count, _stored=int(stored), _seed=int(seed), _attempts=failures,
                             _seg_len=seg_len, _seg_count=seg_count)

    # envelope
    _params_struct = _PARAMS
    _param_names = ("_count", "_stored", "_seed", "_attempts", "_seg_len", "_seg_count")

    def _views(self) -> None:
        self._fps = self._buf.view(self._dtype)

    @classmethod
    def _inconsistency(cls, fields: dict[str, Any], payload: np.ndarray) -> str:
        count, stored, seg_len, seg_count = (fields[k] for k in ("_count", "_stored", "_seg_len", "_seg_count"))
        cells = _check_layout(seg_len, seg_count)
        if (
            stored > count or (stored == 0) != (count == 0) or (cells == 0) != (count == 0)
            or payload.nbytes != cells * np.dtype(cls._dtype).itemsize
        ):
            return f"keys={count} stored={stored} segment {seg_len}x{seg_count} payload={payload.nbytes}"
        return ""

    # facts
    @property
    def kernel_args(self) -> tuple:
        """``(fingerprints, seed, segment_length, segment_count * segment_length, fp_mask)`` for
        :func:`_fuse_kernels.check_hash` inside an engine's kernel."""
        return (self._fps, np.uint64(self._seed), np.uint64(self._seg_len),
                np.uint64(self._seg_len * self._seg_count), np.uint64((1 << self.fingerprint_bits) - 1))

    @property
    def num_cells(self) -> int:
        return int(self._fps.shape[0])

    @property
    def num_probes(self) -> int:
        """Cells read per query (3)."""
        return 3

    def _layout_fpr(self) -> float:
        """``2^-bits``: an absent key's three cells XOR to a uniform value."""
        return 2.0**-self.fingerprint_bits

    def _hashed_keys(self) -> int:
        return self._stored

    def bench_expected_fpr(self) -> float:
        """The model FP for filter-bench (``2^-bits`` whatever the bits/key)."""
        return self.estimated_fpr()

    def stats(self) -> dict:
        s = super().stats()
        s.update(
            fingerprint_bits=self.fingerprint_bits,
            num_cells=self.num_cells,
            cells_per_key=self.num_cells / max(1, self._stored),
            segment_length=self._seg_len,
            segment_count=self._seg_count,
            distinct_keys=self._stored,
            seed=self._seed,
            failed_attempts=self._attempts,
            bits_over_bound=(self.num_bits / max(1, self._stored)) / self.fingerprint_bits,
        )
        return s

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """``2^-fingerprint_bits``: fixed by the family, whatever the memory (which is
        ~1.125 x the fingerprint bits per key at 1M keys and more)."""
        return 2.0**-cls.fingerprint_bits

    @classmethod
    def spec_for_bits_per_key(cls, bits_per_key: float) -> str:
        return cls.family

    @classmethod
    def num_bits_for(cls, num_keys: int) -> int:
        """Bits of the filter built from ``num_keys`` distinct keys (no build: the layout)."""
        seg_len, seg_count = layout_for(num_keys)
        return (seg_count + 2) * seg_len * cls.fingerprint_bits

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """The one spec (size and FP rate follow from the fingerprint width)."""
        return [cls.family]


@register
class Fuse8(BinaryFuse):
    """Binary fuse filter, 8-bit fingerprints (static): FP 0.39% at ~9.0 bits/key."""

    family = "fuse8"
    family_version = 1
    fingerprint_bits = 8
    _dtype = np.uint8
    example_spec = "fuse8"


@register
class Fuse16(BinaryFuse):
    """Binary fuse filter, 16-bit fingerprints (static): FP 0.0015% at ~18.0 bits/key."""

    family = "fuse16"
    family_version = 1
    fingerprint_bits = 16
    _dtype = np.uint16
    example_spec = "fuse16"
