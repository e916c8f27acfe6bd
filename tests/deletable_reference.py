"""Slow, obviously-correct numpy/Python readings of the counting and cuckoo byte layouts.

Written from docs/formats.md (not from the kernels): where a key's counters / fingerprint live,
and how to read every counter / slot of a payload.
"""

from __future__ import annotations

import numpy as np

from bloomdb.hashing import xxh3_64

M32 = 0xFFFFFFFF
PHI_POWERS = [pow(0x9E3779B9, j, 1 << 32) for j in range(32)]


def counting_counters(f) -> np.ndarray:
    """All counters of a counting filter, counter ``c`` of line ``l`` at ``[l * 128 + c]``."""
    b = f._payload()
    out = np.empty(b.size * 2, np.uint8)
    out[0::2] = b & 15
    out[1::2] = b >> 4
    return out


def counting_probes(f, key) -> list[int]:
    """Global counter indices of ``key``'s k probes (with repeats)."""
    h = xxh3_64(key)
    line = ((h & M32) * f.num_lines) >> 32
    g = h >> 32
    return [line * 128 + (((g * PHI_POWERS[j]) & M32) >> 25) for j in range(f.num_probes)]


def cuckoo_slots(f) -> np.ndarray:
    """Every slot's tag, shape (num_buckets, 4); slot s of bucket b at bit (4b + s) * f, LE."""
    fb = f.fingerprint_bits
    bits = np.unpackbits(f._payload(), bitorder="little")
    tags = bits.reshape(-1, fb).astype(np.uint64) @ (np.uint64(1) << np.arange(fb, dtype=np.uint64))
    return tags.reshape(-1, 4)


def cuckoo_place(f, key) -> tuple[int, int, int]:
    """``(i1, i2, tag)`` of ``key``."""
    h = xxh3_64(key)
    fb, nb = f.fingerprint_bits, f.num_buckets
    tag = (((h & M32) * ((1 << fb) - 1)) >> 32) + 1
    i1 = (h >> 32) & (nb - 1)
    mix = ((tag * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)) >> 32
    i2 = i1 ^ (((mix * (nb - 1)) >> 32) + 1)
    return i1, i2, tag
