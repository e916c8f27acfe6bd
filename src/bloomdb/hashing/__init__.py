"""Key hashing for bloomdb: XXH3-64 (the filters' hash) and XXH64 (seeded), as numba kernels.

Contract
--------
* Every function hashes keys as :mod:`bloomdb.keys` defines them: ``bytes`` as is, ``str`` as its
  UTF-8 bytes, an integer in ``[-2**63, 2**64)`` as its 8-byte little-endian two's-complement
  encoding (so ``-1`` and ``2**64 - 1`` hash alike, and ``hash64(5) == hash64((5).to_bytes(8,
  "little"))``).
* Results are bit-identical to the reference ``xxhash`` package: :func:`xxh3_64` equals
  ``xxhash.xxh3_64_intdigest`` (seed 0, default secret) and :func:`xxh64` equals
  ``xxhash.xxh64_intdigest(b, seed=seed)``, for every length. They are therefore stable across
  platforms, processes and bloomdb versions, and may be persisted.
* Scalar functions return a Python ``int`` in ``[0, 2**64)``; batch functions return a new
  ``uint64`` numpy array with one hash per key, in input order (Arrow chunks are concatenated).
* Errors: a key of another type raises :class:`~bloomdb.errors.KeyTypeError` (a ``TypeError``);
  an integer key outside 64 bits, a null in an Arrow batch, or a seed outside ``[0, 2**64)``
  (or not an integer) raises :class:`~bloomdb.errors.InvalidArgument` (a ``ValueError``).

Cost
----
* Batch functions: one pass over the keys in compiled code, no per-key Python work. Measured
  on one core: ~1.2 ns per integer key (the loop vectorises; memory-bound), ~2-3 ns per string
  key of up to 16 bytes, ~4-8 ns up to 128 bytes, then ~0.1 ns per byte (XXH64 costs more on
  short keys, ~6 ns). Plus the O(1) (numpy / Arrow) or O(n) (Python list) conversion done by
  :func:`bloomdb.keys.to_batches`. The kernels release the GIL.
* Scalar functions: dominated by the Python-to-numba call, roughly 0.3-1 us per key; use the
  batch functions for more than a handful of keys.
* The first call of each kernel in a process compiles it (seconds) unless numba's on-disk cache
  already holds it; :func:`warmup` does all of that up front.

The numba kernels themselves (``xxh3_64_u64``, ``xxh3_64_bytes``, ``xxh64_u64``, ``xxh64_bytes``
and the ``*_batch_*`` kernels) are re-exported here for other njit code (filters fuse hash and
probe in one loop); see :mod:`bloomdb.hashing._kernels`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..keys import KeyBatch, encode_key, to_batches
from ._kernels import (
    xxh3_64_batch_bytes,
    xxh3_64_batch_ints,
    xxh3_64_bytes,
    xxh3_64_bytes_0to16,
    xxh3_64_bytes_17to128,
    xxh3_64_bytes_129to240,
    xxh3_64_bytes_241plus,
    xxh3_64_u64,
    xxh64_batch_bytes,
    xxh64_batch_ints,
    xxh64_bytes,
    xxh64_u64,
)

__all__ = [
    "xxh3_64",
    "hash64",
    "xxh64",
    "xxh3_64_many",
    "xxh64_many",
    "hash_batch",
    "hash_batch_xxh64",
    "warmup",
    # numba kernels, for use inside other njit functions
    "xxh3_64_u64",
    "xxh3_64_bytes",
    "xxh3_64_bytes_0to16",
    "xxh3_64_bytes_17to128",
    "xxh3_64_bytes_129to240",
    "xxh3_64_bytes_241plus",
    "xxh64_u64",
    "xxh64_bytes",
    "xxh3_64_batch_ints",
    "xxh3_64_batch_bytes",
    "xxh64_batch_ints",
    "xxh64_batch_bytes",
]

_U64_MAX = (1 << 64) - 1


# ---------------------------------------------------------------------------------------------
# argument normalisation: every array reaches the kernels as a read-only C-contiguous view, so
# numba compiles one specialisation per dtype (not one per read-only/writable combination).
# ---------------------------------------------------------------------------------------------


def _ro(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _check_seed(seed: Any) -> np.uint64:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise InvalidArgument(f"seed must be an integer in [0, 2**64), got {type(seed).__name__}")
    s = int(seed)
    if s < 0 or s > _U64_MAX:
        raise InvalidArgument(f"seed {s} is outside [0, 2**64)")
    return np.uint64(s)


def _key_bytes(b: bytes) -> np.ndarray:
    return np.frombuffer(b, dtype=np.uint8)  # read-only view, no copy


_Arrays = tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]


def _batch_arrays(batch: KeyBatch) -> _Arrays:
    """(ints, data, offsets) in the exact dtypes/layout the kernels are compiled for."""
    if batch.ints is not None:
        ints = np.ascontiguousarray(batch.ints).reshape(-1)
        if ints.dtype != np.uint64:
            ints = ints.view(np.uint64) if ints.dtype == np.int64 else ints.astype(np.uint64)
        return _ro(ints), None, None
    data = batch.data
    offsets = batch.offsets
    if data is None or offsets is None:
        raise InvalidArgument("KeyBatch has neither ints nor data + offsets")
    data = np.ascontiguousarray(data).reshape(-1)
    if data.dtype != np.uint8:
        data = data.view(np.uint8)
    offsets = np.ascontiguousarray(offsets).reshape(-1)
    if offsets.dtype != np.int32 and offsets.dtype != np.int64:
        offsets = offsets.astype(np.int64)
    return None, _ro(data), _ro(offsets)


def _check_out(out: np.ndarray | None, n: int) -> np.ndarray:
    if out is None:
        return np.empty(n, dtype=np.uint64)
    if not isinstance(out, np.ndarray) or out.dtype != np.uint64 or out.shape != (n,):
        raise InvalidArgument(f"out must be a uint64 array of shape ({n},)")
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise InvalidArgument("out must be a writable C-contiguous array")
    return out


# ---------------------------------------------------------------------------------------------
# scalar API
# ---------------------------------------------------------------------------------------------


def xxh3_64(key: Any) -> int:
    """XXH3-64 (seed 0) of one key; equals ``xxhash.xxh3_64_intdigest`` of its bytes.

    ``key`` is ``bytes``/``bytearray``/``memoryview``, ``str`` (UTF-8) or an integer in
    ``[-2**63, 2**64)`` (8-byte little-endian). Cost: ~0.3-1 us (one numba call).
    """
    e = encode_key(key)
    if type(e) is int:
        return int(xxh3_64_u64(np.uint64(e)))
    return int(xxh3_64_bytes(_key_bytes(e), 0, len(e)))


hash64 = xxh3_64
"""Alias of :func:`xxh3_64`: the 64-bit hash every bloomdb filter uses."""


def xxh64(key: Any, seed: int = 0) -> int:
    """XXH64 of one key with ``seed`` in ``[0, 2**64)``; equals ``xxhash.xxh64_intdigest``.

    Same key encoding and cost as :func:`xxh3_64`.
    """
    sd = _check_seed(seed)
    e = encode_key(key)
    if type(e) is int:
        return int(xxh64_u64(np.uint64(e), sd))
    return int(xxh64_bytes(_key_bytes(e), 0, len(e), sd))


# ---------------------------------------------------------------------------------------------
# batch API
# ---------------------------------------------------------------------------------------------


def hash_batch(batch: KeyBatch, out: np.ndarray | None = None) -> np.ndarray:
    """XXH3-64 of every key of one :class:`~bloomdb.keys.KeyBatch`, into ``out`` (or a new array).

    ``out``, if given, must be a writable C-contiguous ``uint64`` array of ``len(batch)``
    elements; it is returned. Cost: one compiled pass over the keys, O(1) extra memory.
    """
    n = len(batch)
    out = _check_out(out, n)
    if n == 0:
        return out
    ints, data, offsets = _batch_arrays(batch)
    if ints is not None:
        xxh3_64_batch_ints(ints, out)
    else:
        xxh3_64_batch_bytes(data, offsets, out)
    return out


def hash_batch_xxh64(batch: KeyBatch, seed: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """XXH64 with ``seed`` of every key of one :class:`~bloomdb.keys.KeyBatch`.

    Same ``out`` contract and cost as :func:`hash_batch`.
    """
    sd = _check_seed(seed)
    n = len(batch)
    out = _check_out(out, n)
    if n == 0:
        return out
    ints, data, offsets = _batch_arrays(batch)
    if ints is not None:
        xxh64_batch_ints(ints, sd, out)
    else:
        xxh64_batch_bytes(data, offsets, sd, out)
    return out


def _many(keys: Any, fn, *args) -> np.ndarray:
    batches = to_batches(keys)
    if len(batches) == 1:
        return fn(batches[0], *args)
    out = np.empty(sum(len(b) for b in batches), dtype=np.uint64)
    pos = 0
    for b in batches:
        n = len(b)
        fn(b, *args, out=out[pos : pos + n])
        pos += n
    return out


def xxh3_64_many(keys: Any) -> np.ndarray:
    """XXH3-64 (seed 0) of every key of a batch, as a new ``uint64`` array in input order.

    ``keys`` is anything :func:`bloomdb.keys.to_batches` accepts: a list/tuple (types may mix), a
    numpy integer/``S``/``U``/object array, a pyarrow integer/string/binary ``Array`` or
    ``ChunkedArray`` (chunks are concatenated in order). Cost: O(n) compiled, no per-key Python
    work for numpy/Arrow input (~1-2 ns per integer key).
    """
    return _many(keys, hash_batch)


def xxh64_many(keys: Any, seed: int = 0) -> np.ndarray:
    """XXH64 with ``seed`` of every key of a batch (inputs and cost as :func:`xxh3_64_many`)."""
    sd = _check_seed(seed)
    return _many(keys, hash_batch_xxh64, sd)


# ---------------------------------------------------------------------------------------------
# JIT warm-up
# ---------------------------------------------------------------------------------------------


def warmup() -> None:
    """Compile (or load from numba's cache) every kernel for every argument type the public API
    passes: read-only ``uint8`` data with ``int32`` and ``int64`` offsets, read-only ``uint64``
    ints, scalar ``uint64`` keys and seeds. Call before timing anything.
    """
    data = _ro(np.arange(300, dtype=np.uint8))
    ints = _ro(np.arange(3, dtype=np.uint64))
    out = np.empty(3, dtype=np.uint64)
    seed = np.uint64(0)
    xxh3_64_u64(np.uint64(1))
    xxh64_u64(np.uint64(1), seed)
    xxh3_64_bytes(data, 0, 300)
    xxh3_64_bytes_0to16(data, 0, 16)
    xxh3_64_bytes_17to128(data, 0, 100)
    xxh3_64_bytes_129to240(data, 0, 200)
    xxh3_64_bytes_241plus(data, 0, 300)
    xxh64_bytes(data, 0, 300, seed)
    xxh3_64_batch_ints(ints, out)
    xxh64_batch_ints(ints, seed, out)
    for dt in (np.int32, np.int64):
        offsets = _ro(np.array([0, 5, 17, 300], dtype=dt))
        xxh3_64_batch_bytes(data, offsets, out)
        xxh64_batch_bytes(data, offsets, seed, out)
