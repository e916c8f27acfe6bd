"""``register``: the register-blocked Bloom filter — k bits inside one 32-bit word per key.

"Two bits are better than one" (Floe, 2026): a join's build side is summarised in a small,
fixed-size filter (256 KiB by default: fits L2, one per join) that the probe-side scan checks
with one load and one mask compare per key. One XXH3-64 hash per key: its lower 32 bits pick
the word (multiply-shift), 5-bit fields of its upper 32 bits pick k = 1..4 bit positions inside it
(k = 2 by default). At 8 bits/key (n = 256K keys, m = 2M bits) k = 1 gives ~11.7% false
positives and k = 2 ~5.7%; more bits per word help less as the word fills.

Spec: the number is k — ``create("register:2")`` is 256 KiB whatever the capacity,
``create("register:2", size_bytes=64 * 1024)`` any multiple of 4 bytes, and
``"register:2:8"`` (k, then bits per key) sizes it at 8 bits per key of ``capacity``.

Cost: a query is one hash, one load, one compare (no cache miss when the filter fits cache);
``add_many(keys, threads=N)`` builds on N threads without the GIL and gives the same bytes as a
serial build (every thread adds a slice of the keys, see :mod:`.parallel`).

Concurrency: any number of threads may add and query at once and no key is lost. A writer alone
updates words with plain stores; writers that overlap use one atomic OR per word, skipped when its
bits are already set (:mod:`.writers`); queries read plain words.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from .. import keys as _keys
from ..errors import InvalidArgument
from . import _register_kernels as K
from . import format as fmt
from . import math as fm
from .registry import register
from .base import HashedFilter, check_bits_per_key, check_capacity, merge_spec_kwargs

_PARAMS = struct.Struct("<QQB7x")  # capacity (0: not given), num_words, k
DEFAULT_SIZE_BYTES = 256 * 1024
_MAX_WORDS = 1 << 32  # multiply-shift of a 32-bit hash half: at most 2^32 words (16 GiB)


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= 4:
        raise InvalidArgument(f"register: k (bits per key inside its word) must be an integer 1..4, got {k!r}")
    return int(k)


def _check_size_bytes(size_bytes: Any) -> int:
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, (int, np.integer)):
        raise InvalidArgument(f"register: size_bytes must be a positive multiple of 4, got {size_bytes!r}")
    s = int(size_bytes)
    if s <= 0 or s % 4 or s // 4 > _MAX_WORDS:
        raise InvalidArgument(f"register: size_bytes must be a positive multiple of 4 up to 16 GiB, got {size_bytes!r}")
    return s


@register
class RegisterBloom(HashedFilter):
    """Register-blocked Bloom: k = 1..4 bits in one 32-bit word per key; fixed size (256 KiB default)."""

    family = "register"
    family_version = 1
    intersectable = True
    has_probe_kernel = True
    #: k = 2 (the post's) at 10 bits/key like the other families' examples, so the demo table compares
    #: equal memory; plain ``"register:2"`` is the fixed 256 KiB filter.
    example_spec = "register:2:10"
    sized_by_count = False  # plain "register:2" is 256 KiB whatever the count
    spec_meaning = "k (bits set inside the key's 32-bit word); size_bytes= fixes the size (256 KiB default)"

    def __init__(
        self,
        capacity: int | None = None,
        k: int = 2,
        size_bytes: int | None = None,
        bits_per_key: float | None = None,
    ):
        """A zeroed filter. ``size_bytes`` (default 256 KiB, a multiple of 4) or ``bits_per_key``
        of ``capacity`` (rounded up to whole words) — not both. ``capacity`` is only a label
        (for ``bits_per_key`` and stats) unless ``bits_per_key`` is given. Raises InvalidArgument."""
        k = _check_k(k)
        if capacity is not None:
            capacity = check_capacity(capacity, self.family)
        if bits_per_key is not None:
            if size_bytes is not None:
                raise InvalidArgument("register: give size_bytes or bits_per_key, not both")
            if capacity is None:
                raise InvalidArgument("register: bits_per_key needs a capacity (number of keys)")
            bpk = check_bits_per_key(bits_per_key, family=self.family)
            size_bytes = 4 * max(1, math.ceil(capacity * bpk / 32))
        size_bytes = _check_size_bytes(DEFAULT_SIZE_BYTES if size_bytes is None else size_bytes)
        self._init(capacity or 0, size_bytes // 4, k, fmt.aligned_zeros(size_bytes), 0)

    def _init(self, capacity, num_words, k, buf, count):
        self._cap = capacity
        if capacity:
            self._capacity = capacity
        self._nwords = num_words
        self._k = k
        self._buf = buf
        self._words = buf.view(np.uint32)
        self._count = count
        self._readonly = not buf.flags.writeable

    # ---- spec ---------------------------------------------------------------------------

    @classmethod
    def spec_kwargs(cls, arg: str) -> dict[str, Any]:
        """``"2"`` -> k = 2; ``"2:8"`` -> k = 2 at 8 bits per key of capacity."""
        k_txt, _, bpk_txt = arg.partition(":")
        try:
            kw: dict[str, Any] = {"k": int(k_txt)}
            if bpk_txt:
                kw["bits_per_key"] = float(bpk_txt)
        except ValueError:
            raise InvalidArgument(f"register spec is 'register:K' or 'register:K:BITS_PER_KEY', got {arg!r}") from None
        return kw

    @classmethod
    def from_spec(cls, arg: str | None, capacity: int | None = None, **kwargs: Any) -> "RegisterBloom":
        return cls(capacity=capacity, **merge_spec_kwargs(cls, arg, kwargs))

    @classmethod
    def build(cls, keys: Any, bits_per_key: float | None = None, **kwargs: Any) -> "RegisterBloom":
        """A filter holding ``keys``: 256 KiB (or ``size_bytes``), or ``bits_per_key`` of their number."""
        batches = _keys.to_batches(keys)
        n = max(1, sum(len(b) for b in batches))
        f = cls(capacity=n, bits_per_key=bits_per_key, **kwargs)
        for b in batches:
            f._add_batch(b, False)
            f._counted(len(b))
        return f

    # ---- envelope -----------------------------------------------------------------------

    def _params(self) -> bytes:
        return _PARAMS.pack(self._cap, self._nwords, self._k)

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int) -> "RegisterBloom":
        capacity, num_words, k = _PARAMS.unpack(params)
        if not 1 <= num_words <= _MAX_WORDS or payload.nbytes != 4 * num_words or not 1 <= k <= 4:
            raise ValueError(f"inconsistent register filter: words={num_words} k={k} payload={payload.nbytes}")
        self = cls.__new__(cls)
        self._init(capacity, num_words, k, payload, count)
        return self

    def _payload(self) -> np.ndarray:
        return self._buf

    # ---- kernels ------------------------------------------------------------------------

    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None:
        K.add(self._words, self._k, hashes, True, atomic)

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        K.query(self._words, self._k, hashes, True, out)

    def _add_ints(self, ints: np.ndarray, atomic: bool) -> None:
        K.add(self._words, self._k, ints, False, atomic)

    def _query_ints(self, ints: np.ndarray, out: np.ndarray) -> None:
        K.query(self._words, self._k, ints, False, out)

    # ---- facts --------------------------------------------------------------------------

    @property
    def num_words(self) -> int:
        return self._nwords

    @property
    def num_bits(self) -> int:
        return self._nwords * 32

    @property
    def num_probes(self) -> int:
        return self._k

    @property
    def kernel_args(self) -> tuple[np.ndarray, np.uint64, int]:
        """``(words32, num_words, k)`` for :func:`_register_kernels.check_hash` in engine kernels."""
        return self._words, np.uint64(self._nwords), self._k

    def _fill_shape(self) -> tuple[int, int, int]:
        return self._nwords, 32, self._k

    def fpr_at(self, n: int) -> float:
        """Exact Poisson keys-per-word FP at ``n`` keys (hash collisions are negligible); the
        ``estimated_fpr`` at the keys added so far, clamped to [0, 1]."""
        return fm.word_blocked_fpr_exact(n / self._nwords, self._k)

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None) -> float:
        """``sum_j Pois(j; 32 / b) E[(X_{kj} / 32)^k]`` (k = 2 unless given), X_{kj} the set bits of a
        word after its j keys' k j probes. The Floe post's formula ``(1 - (31/32)^(k j))^k`` in
        place of the expectation (``math.word_blocked_fpr``) is a little low: 5.69% vs 5.76% at
        8 bits/key and k = 2."""
        if bits_per_key <= 0:
            return 1.0
        return fm.word_blocked_fpr_exact(32.0 / bits_per_key, 2 if num_probes is None else num_probes)

    @staticmethod
    def best_k(bits_per_key: float) -> int:
        """The k in 1..4 with the lowest expected FP rate at ``bits_per_key``."""
        return min(range(1, 5), key=lambda k: fm.word_blocked_fpr_exact(32.0 / bits_per_key, k))

    @classmethod
    def spec_for_bits_per_key(cls, bits_per_key: float) -> str:
        return cls.bench_specs([bits_per_key])[0]

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """``register:K:B`` for each bits/key B with its best k (sized by bits/key, not 256 KiB)."""
        return [f"register:{cls.best_k(b)}:{b:g}" for b in bits_per_key_values]
