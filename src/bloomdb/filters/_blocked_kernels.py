"""Kernels of the ``blocked`` filter: RocksDB's FastLocalBloom (format_version=5) bit layout.

For a key with 64-bit hash ``h``: the cache line is ``(lower32(h) * num_lines) >> 32``; the k bit
positions inside its 512 bits come from ``g = upper32(h)``: probe ``j`` uses
``g_j = g * 0x9e3779b9^j mod 2^32`` and sets bit ``g_j >> 23`` of the line. Bit ``b`` of a line
is bit ``b & 31`` of its 32-bit word ``b >> 5`` (little-endian: byte ``b >> 3``, bit ``b & 7``,
as RocksDB writes it).

Batch kernels pipeline groups of ``GROUP`` keys: while the bits of group ``i`` are set or
checked, the keys of group ``i + AHEAD`` are hashed and their lines prefetched (the "prefetch,
then check" loop). Single-hash probes (``check_hash``, for engines) evaluate eight probes at a
time from the powers of the multiplier (RocksDB's AVX2 scheme: ``g * {1, phi, ... phi^7}``, then
``g *= phi^8``), bit-identical to the sequential scheme.

Concurrency: add kernels take ``atomic``: True when other writers may run at the same time (see
:mod:`bloomdb.filters.writers`); then every bit is set with an atomic OR, skipped when it is
already set, so no bit is lost. Queries read plain words.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import atomic_or, prefetch
from ..hashing._kernels import xxh3_64_u64

#: Keys per group: their lines are prefetched ``AHEAD`` groups before they are probed.
GROUP = 8
AHEAD = 2
SLOTS = 4  # ring slots: a power of two > AHEAD


@njit(cache=True, nogil=True)
def line_word(h, num_lines):
    """Index of the first 32-bit word of the line of hash ``h`` (FastRange32 of its low half)."""
    return (((h & np.uint64(0xFFFFFFFF)) * num_lines) >> np.uint64(32)) * np.uint64(16)


@njit(cache=True, nogil=True)
def _or_bit(w32, i, bit, atomic):
    """``w32[i] |= bit``; with ``atomic`` an atomic OR, skipped when the bit is already set."""
    if not atomic:
        w32[i] |= bit
    elif w32[i] & bit == np.uint32(0):
        atomic_or(w32, i, bit)


@njit(cache=True, nogil=True)
def set_bits(w32, base, g, k, atomic):
    """Set the k probe bits of ``g`` (the upper half of the hash) in the line at word ``base``."""
    m = (np.uint64(0x00000001), np.uint64(0x9E3779B9), np.uint64(0xE35E67B1), np.uint64(0x734297E9),
         np.uint64(0x35FBE861), np.uint64(0xDEB7C719), np.uint64(0x0448B211), np.uint64(0x3459B749))  # fmt: skip
    done = 0
    while done < k:
        for p in range(8):
            if done + p < k:
                x = (g * m[p]) & np.uint64(0xFFFFFFFF)
                _or_bit(w32, base + (x >> np.uint64(28)), np.uint32(1) << np.uint32((x >> np.uint64(23)) & np.uint64(31)), atomic)
        g = (g * np.uint64(0xAB25F4C1)) & np.uint64(0xFFFFFFFF)
        done += 8


@njit(cache=True, nogil=True)
def check_bits(w32, base, g, k):
    """True when all k probe bits of ``g`` are set in the line at word ``base`` (branch-free)."""
    return check_bits_inline(w32, base, g, k)


@njit(cache=True, nogil=True, inline="always")
def check_bits_inline(w32, base, g, k):
    """:func:`check_bits`, inlined into its caller by numba (an engine's batch loop: a call
    that passes an array struct costs more than the check itself, ~12 ns per check measured
    in the LSM's ``multi_get`` kernel)."""
    m = (np.uint64(0x00000001), np.uint64(0x9E3779B9), np.uint64(0xE35E67B1), np.uint64(0x734297E9),
         np.uint64(0x35FBE861), np.uint64(0xDEB7C719), np.uint64(0x0448B211), np.uint64(0x3459B749))  # fmt: skip
    ok = True
    done = 0
    while done < k:
        for p in range(8):
            if done + p < k:
                x = (g * m[p]) & np.uint64(0xFFFFFFFF)
                ok &= ((w32[base + (x >> np.uint64(28))] >> np.uint32((x >> np.uint64(23)) & np.uint64(31))) & np.uint32(1)) != 0
        g = (g * np.uint64(0xAB25F4C1)) & np.uint64(0xFFFFFFFF)
        done += 8
    return ok


@njit(cache=True, nogil=True)
def check_hash(w32, num_lines, k, h):
    """``might_contain`` for one hash (engines that probe many filters with one key call this)."""
    return check_bits(w32, line_word(h, num_lines), h >> np.uint64(32), k)


@njit(cache=True, nogil=True)
def _stage(keys, hashed, first, num_lines, ring_g, ring_b, slot, w32):
    """Hash the ``GROUP`` keys from ``first`` into ring slot ``slot`` and prefetch their lines."""
    o = slot * GROUP
    if hashed:
        for j in range(GROUP):
            h = keys[first + j]
            ring_g[o + j] = np.uint32(h >> np.uint64(32))
            ring_b[o + j] = line_word(h, num_lines)
    else:
        for j in range(GROUP):
            h = xxh3_64_u64(keys[first + j])
            ring_g[o + j] = np.uint32(h >> np.uint64(32))
            ring_b[o + j] = line_word(h, num_lines)
    for j in range(GROUP):
        prefetch(w32, ring_b[o + j])


@njit(cache=True, nogil=True)
def _run(w32, num_lines, k, keys, out, hashed, query, atomic):
    """The pipeline over ``keys`` (hashes when ``hashed``, else integer keys): set bits or fill ``out``.

    Full groups of ``GROUP`` keys: group ``i + AHEAD`` is hashed and prefetched while group ``i``
    is processed probe-major (probe p of every key of the group, then probe p + 1), which gives the
    CPU ``GROUP`` independent dependency chains to overlap. The last ``n % GROUP`` keys go one by one.
    """
    n = keys.shape[0]
    ring_g = np.empty(GROUP * SLOTS, np.uint32)
    ring_b = np.empty(GROUP * SLOTS, np.uint64)
    g = np.empty(GROUP, np.uint32)
    base = np.empty(GROUP, np.uint64)
    acc = np.empty(GROUP, np.uint32)
    ngroups = n // GROUP
    for gi in range(min(AHEAD, ngroups)):
        _stage(keys, hashed, gi * GROUP, num_lines, ring_g, ring_b, gi & (SLOTS - 1), w32)
    for gi in range(ngroups):
        if gi + AHEAD < ngroups:
            ga = gi + AHEAD
            _stage(keys, hashed, ga * GROUP, num_lines, ring_g, ring_b, ga & (SLOTS - 1), w32)
        o = (gi & (SLOTS - 1)) * GROUP
        for j in range(GROUP):
            g[j] = ring_g[o + j]
            base[j] = ring_b[o + j]
            acc[j] = np.uint32(1)
        if query:
            for _ in range(k):
                for j in range(GROUP):
                    x = g[j]
                    acc[j] &= w32[base[j] + np.uint64(x >> np.uint32(28))] >> ((x >> np.uint32(23)) & np.uint32(31))
                    g[j] = x * np.uint32(0x9E3779B9)
            for j in range(GROUP):
                out[gi * GROUP + j] = acc[j] != np.uint32(0)
        elif atomic:
            for _ in range(k):
                for j in range(GROUP):
                    x = g[j]
                    _or_bit(w32, base[j] + np.uint64(x >> np.uint32(28)), np.uint32(1) << ((x >> np.uint32(23)) & np.uint32(31)), True)
                    g[j] = x * np.uint32(0x9E3779B9)
        else:  # written out again without the atomic test: the plain loop is what a lone writer runs
            for _ in range(k):
                for j in range(GROUP):
                    x = g[j]
                    w32[base[j] + np.uint64(x >> np.uint32(28))] |= np.uint32(1) << ((x >> np.uint32(23)) & np.uint32(31))
                    g[j] = x * np.uint32(0x9E3779B9)
    for i in range(ngroups * GROUP, n):
        h = keys[i] if hashed else xxh3_64_u64(keys[i])
        if query:
            out[i] = check_bits(w32, line_word(h, num_lines), h >> np.uint64(32), k)
        else:
            set_bits(w32, line_word(h, num_lines), h >> np.uint64(32), k, atomic)


@njit(cache=True, nogil=True)
def add_hashes(w32, num_lines, k, hashes, atomic):
    _run(w32, num_lines, k, hashes, np.empty(0, np.bool_), True, False, atomic)


@njit(cache=True, nogil=True)
def query_hashes(w32, num_lines, k, hashes, out):
    _run(w32, num_lines, k, hashes, out, True, True, False)


@njit(cache=True, nogil=True)
def add_ints(w32, num_lines, k, ints, atomic):
    _run(w32, num_lines, k, ints, np.empty(0, np.bool_), False, False, atomic)


@njit(cache=True, nogil=True)
def query_ints(w32, num_lines, k, ints, out):
    _run(w32, num_lines, k, ints, out, False, True, False)
