"""The one checksum of bloomdb's files: CRC32C (Castagnoli), as LevelDB, RocksDB and Parquet use it.

``crc32c(data, value=0)`` is the ``crc32c`` library's hardware-accelerated function itself (no
wrapper: one C call per buffer, ~10+ GB/s); ``value`` continues a running checksum. Every format
that stores a CRC (filter envelopes, column files and manifests, WAL records, SSTable blocks)
imports it from here, so no engine reaches into another's format module for it.

``crc32c_ranges(arr, starts, ends)``: the CRC32C of many ranges of one uint8 array in one call
(a table's data blocks on their first read): one kernel call with the SSE4.2 instruction on an
x86-64 host that has it (:data:`HW_RANGES`), else one library call per range.
"""

from __future__ import annotations

import platform

import numpy as np
from crc32c import crc32c

__all__ = ["crc32c", "crc32c_ranges", "HW_RANGES"]


def _has_sse42() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        from llvmlite import binding

        return bool(binding.get_host_cpu_features().get("sse4.2", False))
    except Exception:  # no feature list: the library path is always right
        return False


#: whether :func:`crc32c_ranges` runs the one-call kernel (else a loop over :func:`crc32c`)
HW_RANGES = _has_sse42()


def crc32c_ranges(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """CRC32C of ``arr[starts[j]:ends[j]]`` for every ``j`` (uint8 ``arr``; int64 bounds the
    caller checked to lie inside ``arr``), as a uint32 array."""
    out = np.empty(starts.shape[0], np.uint32)
    if HW_RANGES:
        from ._checksum_kernels import crc32c_ranges as kernel

        kernel(arr, starts, ends, out)
        return out
    with memoryview(arr) as mv:
        for j, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
            out[j] = crc32c(mv[a:b])
    return out
