"""``standard``: the textbook Bloom filter (one bit array, k independent-looking probes).

m bits for ``capacity`` keys at ``bits_per_key`` (at most 1000), or the bits/key a filter with
k <= 30 needs for ``fpr`` (closed form, :func:`.math.standard_bits_per_key_for_fpr`), rounded up
to whole 64-bit words; k = round(ln 2 · bits/key) clamped to 1..30.
Probes use Kirsch–Mitzenmacher double hashing of the key's XXH3-64 over the whole array, so a
query touches k random cache lines: the most accurate Bloom per bit here and the slowest.

Concurrency: any number of threads may add and query at once and no key is lost. A writer alone
sets bits with plain stores; writers that overlap set them with an atomic OR, skipped when the bit
is already set (:mod:`.writers`); queries read plain words (a set bit never clears).
``add_many(keys, threads=N)`` gives every thread a slice of the keys (:mod:`.parallel`); the bytes
equal a serial build.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from . import _standard_kernels as K
from . import format as fmt
from . import math as fm
from .registry import register
from .base import HashedFilter, check_bits_per_key, check_capacity, check_fpr

_PARAMS = struct.Struct("<QQBdx")  # capacity, num_bits, k, bits_per_key target
MAX_BITS_PER_KEY = 1000


@register
class StandardBloom(HashedFilter):
    """Standard Bloom filter: double hashing over one bit array, optimal k."""

    family = "standard"
    family_version = 1
    intersectable = True
    example_spec = "standard:10"

    def __init__(
        self,
        capacity: int,
        bits_per_key: float | None = None,
        fpr: float | None = None,
        num_probes: int | None = None,
    ):
        capacity, bits_per_key, k, num_bits = self._plan(capacity, bits_per_key, fpr, num_probes)
        self._capacity = capacity
        self._target_bpk = bits_per_key
        self._k = k
        self._m = num_bits
        self._buf = fmt.aligned_zeros(num_bits // 8)
        self._words = self._buf.view(np.uint64)
        self._count = 0

    @classmethod
    def _plan(cls, capacity: int, bits_per_key: float | None = None, fpr: float | None = None,
              num_probes: int | None = None) -> tuple[int, float, int, int]:
        """The checked ``(capacity, bits_per_key, k, num_bits)`` of a new filter (raises InvalidArgument)."""
        capacity = check_capacity(capacity, cls.family)
        if fpr is not None and bits_per_key is not None:
            raise InvalidArgument("give bits_per_key or fpr, not both")
        if fpr is not None:
            best = fm.standard_fpr(MAX_BITS_PER_KEY, 30)
            fpr = check_fpr(fpr, best=best, family=cls.family, why=f"30 probes at {MAX_BITS_PER_KEY} bits/key")
            bits_per_key = fm.standard_bits_per_key_for_fpr(fpr, 30)
        bits_per_key = check_bits_per_key(10.0 if bits_per_key is None else bits_per_key,
                                          high=MAX_BITS_PER_KEY, family=cls.family)
        k = fm.optimal_k(bits_per_key) if num_probes is None else int(num_probes)
        if not 1 <= k <= 30:
            raise InvalidArgument(f"num_probes must be in 1..30, got {num_probes!r}")
        return capacity, bits_per_key, k, max(64, -(-math.ceil(capacity * bits_per_key) // 64) * 64)

    @classmethod
    def planned_size(cls, capacity: int, **kwargs: Any) -> tuple[int, int]:
        """As :meth:`Filter.planned_size`, by arithmetic (no allocation)."""
        _, _, k, num_bits = cls._plan(capacity, **kwargs)
        return num_bits, k

    # envelope
    def _params(self) -> bytes:
        return _PARAMS.pack(self._capacity, self._m, self._k, self._target_bpk)

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int) -> "StandardBloom":
        capacity, m, k, bpk = _PARAMS.unpack(params)
        if m % 64 or m == 0 or payload.nbytes != m // 8 or not 1 <= k <= 30 or capacity == 0:
            raise ValueError(f"inconsistent standard filter: m={m} k={k} payload={payload.nbytes}")
        self = cls.__new__(cls)
        self._capacity, self._m, self._k, self._target_bpk = capacity, m, k, bpk
        self._buf = payload
        self._words = payload.view(np.uint64)
        self._count = count
        self._readonly = not payload.flags.writeable
        return self

    def _payload(self) -> np.ndarray:
        return self._buf

    # kernels
    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None:
        K.add_hashes(self._words, np.uint64(self._m), self._k, hashes, atomic)

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        K.query_hashes(self._words, np.uint64(self._m), self._k, hashes, out)

    def _add_ints(self, ints: np.ndarray, atomic: bool) -> None:
        K.add_ints(self._words, np.uint64(self._m), self._k, ints, atomic)

    def _query_ints(self, ints: np.ndarray, out: np.ndarray) -> None:
        K.query_ints(self._words, np.uint64(self._m), self._k, ints, out)

    has_probe_kernel = True

    @property
    def kernel_args(self) -> tuple:
        """``(words64, num_bits, k)`` for :func:`_standard_kernels.check_hash` in engine kernels."""
        return self._words, np.uint64(self._m), self._k

    # facts
    @property
    def num_bits(self) -> int:
        return self._m

    @property
    def num_probes(self) -> int:
        return self._k

    def _fill_shape(self) -> tuple[int, int, int]:
        return 1, self._m, self._k

    def fpr_at(self, n: int) -> float:
        """``(1 - e^(-k n / m))^k`` (``estimated_fpr`` at the keys added so far)."""
        return fm.standard_fpr(self._m / n, self._k)

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """``(1 - e^(-k/b))^k`` with this family's k for ``b`` unless ``num_probes`` is given."""
        return fm.standard_fpr(bits_per_key, num_probes or fm.optimal_k(bits_per_key))

