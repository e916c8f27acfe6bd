"""``cuckoo``: the cuckoo filter of Fan et al. (CoNEXT 2014) — fingerprints in 4-slot buckets.

``cuckoo:12`` stores a 12-bit fingerprint per key (8, 12 or 16) in one of two candidate buckets
(partial-key cuckoo hashing, see :mod:`._cuckoo_kernels`). A query reads two buckets; the FP rate
is ``1 - (1 - 1/(2^f - 1))^(8 load)`` ≈ ``8 load / 2^f``: 3.1% / 0.195% / 0.012% for f = 8 / 12 / 16
at full load. ``remove`` deletes one copy of the key's fingerprint.

Sizing (like the reference implementation, with a lower load limit): ``num_buckets`` is the power of two at or above
``capacity / 4``, doubled if that would put the load at capacity above 95.5% (94% below 65,536
buckets, 85% below 256; the reference uses 96%, see :func:`num_buckets_for`); so the load when
``capacity`` keys are held is at most 95.5% and at least about half that (1,000,000 keys: 2^18
buckets, 95.4% load, 1.05 f bits per key).
The table is fixed: it cannot grow.

Full table: when an insert finds no room after 2000 relocations the relocations are undone (the
table is exactly as before that key), :class:`~bloomdb.errors.FilterFull` is raised and the
filter stays fully usable (queries, removes, further adds that find room). ``add_many`` keeps the
keys before the failing one and reports how many went in as ``exc.added``. A key can be held at
most 8 times (2 buckets x 4 slots); the 9th copy raises ``FilterFull``.

Union merges fingerprints (it can raise ``FilterFull``, leaving the target unchanged).

Concurrency: writes (add, remove, union) run one at a time (:mod:`.writers`); queries take no
lock and re-check their negatives with writers held off only when an add (whose inserts may
relocate tags), remove or union overlapped them (a sequence counter, see :mod:`.deletable`), so a reader never misses a key
that is being moved. ``add_many(keys, threads=N)`` hashes the keys on N threads and inserts them
serially in input order: insertion order decides where fingerprints land, so the bytes equal a
serial build (only the hashing is parallel).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .. import keys as _keys
from ..errors import FilterFull, InvalidArgument
from . import _cuckoo_kernels as K
from . import format as fmt
from . import math as fm
from . import parallel
from .registry import register
from .base import check_capacity, check_fpr
from .deletable import DeletableFilter

# capacity, num_buckets, fingerprint bits, slots per bucket (4), max kicks (2000; 500 before
# format 2026-11, still read: the limit governs inserts only, never what a query answers)
_PARAMS = struct.Struct("<QQBBH")
_KNOWN_KICKS = (K.MAX_KICKS, 500)
FINGERPRINT_BITS = (8, 12, 16)
BUCKET_SLOTS = 4
_MAX_BUCKETS = 1 << 32  # the bucket index comes from 32 hash bits


def max_load_for(num_buckets: int) -> float:
    """The load at ``capacity`` a table of ``num_buckets`` is sized for (see :func:`num_buckets_for`)."""
    if num_buckets >= 1 << 16:
        return 0.955
    return 0.94 if num_buckets >= 256 else 0.85


def num_buckets_for(capacity: int) -> int:
    """Next power of two >= capacity / 4 (at least 2), doubled when that load would be too high.

    The reference doubles above 96% load. Measured here with at most 500 relocations per insert
    (4 random fills per size), the first insert failed at 96.7–97.2% load with 4096 buckets,
    96.4–96.6% with 16,384, 96.1–96.3% with 262,144, 95.5–96.1% with 2^21 and 2^22 — and at
    95.3% once with 2^21 under eight concurrent writers, below the 95.4% load that ``capacity``
    keys reach there. With 2000 relocations (today's limit) 2^21 buckets fill to 97.1–97.2% and
    16,384 to 97.2–97.7% before the first failure. We double above 95.5% from 65,536 buckets, above
    94% from 256, and above 85% below that (small tables vary most), so ``capacity`` keys fit with
    a margin of about 1.5% of the slots, and the table can still be filled further, to ~97%,
    until FilterFull.
    """
    nb = 2
    while nb * BUCKET_SLOTS < capacity:
        nb *= 2
    if capacity / (BUCKET_SLOTS * nb) > max_load_for(nb):
        nb *= 2
    return nb


def _full(message: str, added: int) -> FilterFull:
    exc = FilterFull(message)
    exc.added = added
    return exc


@register
class CuckooFilter(DeletableFilter):
    """Cuckoo filter (Fan et al. 2014): 4-slot buckets, 8/12/16-bit fingerprints, remove()."""

    family = "cuckoo"
    family_version = 1
    example_spec = "cuckoo:12"
    spec_meaning = "fingerprint bits (8, 12 or 16)"
    #: A key can be held at most this many times (2 buckets x 4 slots); the next copy is FilterFull.
    max_copies = 2 * BUCKET_SLOTS

    def __init__(self, capacity: int, fingerprint_bits: int | None = None, fpr: float | None = None):
        capacity, nb, f = self._plan(capacity, fingerprint_bits, fpr)
        self._init(capacity, nb, f, fmt.aligned_zeros(nb * f // 2), 0)

    @classmethod
    def planned_size(cls, capacity: int, **kwargs: Any) -> tuple[int, int]:
        """As :meth:`Filter.planned_size`, by arithmetic (no allocation)."""
        _, nb, f = cls._plan(capacity, **kwargs)
        return nb * BUCKET_SLOTS * f, 2

    @classmethod
    def _plan(cls, capacity: int, fingerprint_bits: int | None = None, fpr: float | None = None) -> tuple[int, int, int]:
        """The checked ``(capacity, num_buckets, fingerprint_bits)`` of a new filter (raises InvalidArgument)."""
        capacity = check_capacity(capacity, cls.family)
        if fpr is not None and fingerprint_bits is not None:
            raise InvalidArgument("give fingerprint_bits or fpr, not both")
        if fpr is not None:
            fpr = check_fpr(fpr)
            fits = [f for f in FINGERPRINT_BITS if fm.cuckoo_fpr(f, BUCKET_SLOTS, 0.96) <= fpr]
            if not fits:
                raise InvalidArgument(f"cuckoo filters reach at best {fm.cuckoo_fpr(16, 4, 0.96):.2g} (16-bit fingerprints), asked for {fpr}")
            fingerprint_bits = fits[0]
        f = 12 if fingerprint_bits is None else fingerprint_bits
        if isinstance(f, bool) or f not in FINGERPRINT_BITS:
            raise InvalidArgument(f"cuckoo fingerprint bits must be 8, 12 or 16, got {fingerprint_bits!r}")
        nb = num_buckets_for(capacity)
        if nb > _MAX_BUCKETS:
            raise InvalidArgument(f"cuckoo filter of {nb} buckets exceeds 2^32 buckets")
        return capacity, nb, int(f)

    @classmethod
    def spec_kwargs(cls, arg: str) -> dict[str, Any]:
        try:
            return {"fingerprint_bits": int(arg)}
        except ValueError:
            raise InvalidArgument(f"cuckoo: fingerprint bits must be 8, 12 or 16, got {arg!r}") from None

    def _init(self, capacity, nb, f, buf, count):
        self._capacity = capacity
        self._nb = nb
        self._f = f
        self._buf = buf
        self._count = count
        self._readonly = not buf.flags.writeable

    # envelope
    def _params(self) -> bytes:
        return _PARAMS.pack(self._capacity, self._nb, self._f, BUCKET_SLOTS, K.MAX_KICKS)

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int) -> "CuckooFilter":
        capacity, nb, f, slots, kicks = _PARAMS.unpack(params)
        if (
            f not in FINGERPRINT_BITS or slots != BUCKET_SLOTS or kicks not in _KNOWN_KICKS
            or nb < 2 or nb > _MAX_BUCKETS or nb & (nb - 1) or payload.nbytes != nb * f // 2
            or count > nb * BUCKET_SLOTS
        ):
            raise ValueError(f"inconsistent cuckoo filter: buckets={nb} f={f} payload={payload.nbytes}")
        self = cls.__new__(cls)
        self._init(capacity, nb, f, payload, count)
        return self

    def _payload(self) -> np.ndarray:
        return self._buf

    # kernels
    def _insert(self, hashes: np.ndarray) -> int:
        return int(K.add_hashes(self._buf, self._f, np.uint64(self._nb), hashes, self._seq))

    def _add_hashes(self, hashes: np.ndarray, atomic: bool) -> None:
        added = self._insert(hashes)
        if added < hashes.shape[0]:
            raise _full(self._full_message(added), added)

    def _probe(self, hashes: np.ndarray, out: np.ndarray) -> bool:
        return bool(K.query_hashes(self._buf, self._f, np.uint64(self._nb), hashes, out, self._seq))

    def _remove_hashes(self, hashes: np.ndarray) -> int:
        return int(K.remove_hashes(self._buf, self._f, np.uint64(self._nb), hashes, self._seq))

    has_probe_kernel = True

    @property
    def kernel_args(self) -> tuple:
        """``(buckets, fingerprint_bits, num_buckets)`` for :func:`_cuckoo_kernels.check_hash` in
        engine kernels (a filter no write changes meanwhile)."""
        return self._buf, self._f, np.uint64(self._nb)

    def _full_message(self, added: int) -> str:
        return (
            f"cuckoo filter full: no room after {K.MAX_KICKS} relocations at load "
            f"{self.load_factor():.1%} ({self._count} keys held, {added} of this call added; "
            "nothing held was lost; a key can be held at most 8 times)"
        )

    # adds that count what went in even when the table fills mid-batch
    def _add_counted(self, hashes: np.ndarray, done: int) -> int:
        with self._writing(False):
            added = self._insert(hashes)
        self._counted(added)
        if added < hashes.shape[0]:
            raise _full(self._full_message(done + added), done + added)
        return done + added

    def add(self, key: Any) -> None:
        """Add one key. Raises FilterFull (nothing lost, key not added) when there is no room."""
        self._check_mutable()
        from ..hashing import hash_batch
        from .base import single_key_batch

        self._add_counted(hash_batch(single_key_batch(key)), 0)

    def add_many(self, keys: Any, threads: int | None = None) -> None:
        """Add keys in order. On FilterFull the keys before the failing one stay added (their
        number is ``exc.added``) and the failing one and the rest are not. ``threads=N`` hashes
        on N threads; the inserts stay serial and in order (same bytes as ``threads=None``)."""
        threads = parallel.check_threads(threads)
        self._check_mutable()
        done = 0
        for b in _keys.to_batches(keys):
            done = self._add_counted(parallel.hash_parallel(b, threads), done)

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Add keys given as XXH3-64 hashes; FilterFull semantics as :meth:`add_many`."""
        self._check_mutable()
        self._add_counted(np.ascontiguousarray(hashes, dtype=np.uint64).reshape(-1), 0)

    def _union_into(self, payload: np.ndarray, atomic: bool) -> None:
        """Insert another filter's fingerprints; all or nothing (FilterFull leaves ``self`` unchanged)."""
        merged = fmt.aligned_empty(self._buf.nbytes)
        merged[:] = self._buf
        failed = int(K.merge_into(merged, payload, self._f, np.uint64(self._nb)))
        if failed:
            raise _full(f"cuckoo union: {failed} fingerprints found no room; nothing was merged", 0)
        K.copy_in(self._buf, merged, self._seq)

    # facts
    @property
    def num_buckets(self) -> int:
        return self._nb

    @property
    def fingerprint_bits(self) -> int:
        return self._f

    @property
    def num_bits(self) -> int:
        return self._nb * BUCKET_SLOTS * self._f

    @property
    def num_probes(self) -> int:
        """Buckets read per query (2)."""
        return 2

    def occupied_slots(self) -> int:
        """Slots holding a fingerprint. Cost: one pass over the table."""
        self._check_source()
        return int(K.occupied(self._buf, self._f, np.uint64(self._nb)))

    def load_factor(self) -> float:
        """Keys held / slots (from ``count``; no pass over the table)."""
        return self._count / (self._nb * BUCKET_SLOTS)

    def fill_ratio(self) -> float:
        """Fraction of slots holding a fingerprint (the load factor, measured)."""
        return self.occupied_slots() / (self._nb * BUCKET_SLOTS)

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        s.update(num_buckets=self._nb, fingerprint_bits=self._f, load_factor=self.load_factor())
        return s

    def estimated_fpr(self) -> float:
        """``1 - (1 - 1/(2^f - 1))^(8 load)``: an absent key meets up to 8 load fingerprints."""
        return 1.0 - (1.0 - 1.0 / (2.0**self._f - 1.0)) ** (2 * BUCKET_SLOTS * self.load_factor())

    def bench_expected_fpr(self) -> float:
        """The model FP for filter-bench (needs f and the load, not just bits/key and k)."""
        return self.estimated_fpr()

    @classmethod
    def expected_fpr(cls, bits_per_key: float, num_probes: int | None = None,
                     fingerprint_bits: int | None = None) -> float:
        """FP at ``bits_per_key`` of table per key with ``fingerprint_bits`` (load = f / bits per key).

        NaN without ``fingerprint_bits``: bits/key and k alone do not determine a cuckoo filter.
        """
        if fingerprint_bits is None or bits_per_key <= 0:
            return float("nan")
        load = min(1.0, fingerprint_bits / bits_per_key)
        return 1.0 - (1.0 - 1.0 / (2.0**fingerprint_bits - 1.0)) ** (2 * BUCKET_SLOTS * load)

    @classmethod
    def spec_for_bits_per_key(cls, bits_per_key: float) -> str:
        """The fingerprint width whose filter at ~95% load spends closest to ``bits_per_key``."""
        f = min(FINGERPRINT_BITS, key=lambda bits: abs(bits / 0.95 - bits_per_key))
        return f"{cls.family}:{f}"

    @classmethod
    def bench_specs(cls, bits_per_key_values: list[float]) -> list[str]:
        """The three fingerprint widths (the table's bits/key follows from f and the load)."""
        return [f"{cls.family}:{f}" for f in FINGERPRINT_BITS]
