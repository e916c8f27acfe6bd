"""Slow, obviously correct models of the filters, written from the format description alone.

They use the ``xxhash`` package (not bloomdb's kernels) and plain Python integers, so agreement
with bloomdb checks hashing, probing and the byte layout together.
"""

from __future__ import annotations

import math

import xxhash

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1


def key_bytes(key) -> bytes:
    if isinstance(key, int):
        return (key & M64).to_bytes(8, "little")
    if isinstance(key, str):
        return key.encode()
    return bytes(key)


def h64(key) -> int:
    return xxhash.xxh3_64_intdigest(key_bytes(key))


def standard_payload(keys, num_bits: int, k: int) -> bytes:
    bits = bytearray(num_bits // 8)
    for key in keys:
        h = h64(key)
        d = (((h << 32) | (h >> 32)) & M64) | 1
        for i in range(k):
            p = (((h + i * d) & M64) * num_bits) >> 64
            bits[p >> 3] |= 1 << (p & 7)
    return bytes(bits)


def rocksdb_k(millibits: int) -> int:
    for limit, k in ((2080, 1), (3580, 2), (5100, 3), (6640, 4), (8300, 5), (10070, 6), (11720, 7),
                     (14001, 8), (16050, 9), (18300, 10), (22001, 11), (25501, 12)):
        if millibits <= limit:
            return k
    return (millibits - 1) // 2000 - 1 if millibits <= 50000 else 24


def blocked_payload(keys, capacity: int, bits_per_key: float) -> tuple[bytes, int]:
    millibits = int(bits_per_key * 1000 + 0.500001)
    nbytes = math.ceil(capacity * millibits / 8000)
    lines = max(1, math.ceil(nbytes / 64))
    k = rocksdb_k(millibits)
    data = bytearray(lines * 64)
    for key in keys:
        h = h64(key)
        line = ((h & M32) * lines) >> 32
        g = h >> 32
        for _ in range(k):
            b = g >> 23
            data[line * 64 + (b >> 3)] |= 1 << (b & 7)
            g = (g * 0x9E3779B9) & M32
    return bytes(data), k
