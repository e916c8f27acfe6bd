"""Thread splitting for parallel builds: ``add_many(keys, threads=N)`` of every mutable family.

The numba kernels release the GIL, so N Python threads each running a kernel over 1/N of the
work run on N cores. Families choose how the work is split (see ``Filter._add_parallel``):

* **key slices into private copies** (standard, blocked, register, sbbf, counting): every thread
  adds its slice of the keys to a private zeroed copy, and the copies are merged in with the
  family's union (OR; saturating addition of counters). Both merges commute and a counter ends at
  min(15, its adds) either way, so the bytes equal a serial build;
* **key slices in place** (the bit families, when ``threads x size`` exceeds
  :data:`PRIVATE_COPY_LIMIT` or other writers are running): every thread adds its slice to the
  filter itself with atomic OR;
* **hash in parallel, insert serially** (cuckoo, and counting filters too big to copy):
  insertion order decides where fingerprints land.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable

import numpy as np

from ..errors import InvalidArgument
from ..keys import KeyBatch

#: Parallel builds give each thread a private copy of the filter while ``threads x size`` stays
#: within this; above it they write the filter itself with atomic OR.
PRIVATE_COPY_LIMIT = 64 << 20


def check_threads(threads: Any) -> int:
    """``None`` -> 1; otherwise a positive integer (bool, floats and strings are refused)."""
    if threads is None:
        return 1
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise InvalidArgument(f"threads must be a positive integer, got {threads!r}")
    return int(threads)


def spans(n: int, parts: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges cutting ``range(n)`` into at most ``parts`` near-equal pieces."""
    step = -(-n // max(1, parts))
    return [(i, min(n, i + step)) for i in range(0, n, step)] if n else []


def slice_batch(batch: KeyBatch, lo: int, hi: int) -> KeyBatch:
    """Keys ``lo:hi`` of a batch, as views (no copy)."""
    if batch.is_int:
        return KeyBatch(ints=batch.ints[lo:hi], owner=batch)
    return KeyBatch(data=batch.data, offsets=batch.offsets[lo : hi + 1], owner=batch)


def run(fn: Callable[[Any], Any], items: Iterable[Any], threads: int) -> list[Any]:
    """``[fn(x) for x in items]`` on ``threads`` threads; the first exception is re-raised."""
    items = list(items)
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))


def hash_parallel(batch: KeyBatch, threads: int, hash_fn: Callable | None = None) -> np.ndarray:
    """``hash_fn(batch)`` (XXH3-64 by default) computed by ``threads`` threads into one array."""
    if hash_fn is None:
        from ..hashing import hash_batch as hash_fn
    out = np.empty(len(batch), dtype=np.uint64)

    def one(span):
        lo, hi = span
        hash_fn(slice_batch(batch, lo, hi), out=out[lo:hi])

    run(one, spans(len(batch), threads), threads)
    return out
