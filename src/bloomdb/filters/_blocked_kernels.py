"""Kernels of the ``blocked`` filter: RocksDB's FastLocalBloom (format_version=5) bit layout.

For a key with 64-bit hash ``h``: the cache line is ``(lower32(h) * num_lines) >> 32``; the k bit
positions inside its 512 bits come from ``g = upper32(h)``: probe ``j`` uses
``g_j = g * 0x9e3779b9^j mod 2^32`` and sets bit ``g_j >> 23`` of the line. Bit ``b`` of a line
is bit ``b & 31`` of its 32-bit word ``b >> 5`` (little-endian: byte ``b >> 3``, bit ``b & 7``,
as RocksDB writes it).

Probes are evaluated eight at a time from the powers of the multiplier (RocksDB's AVX2 scheme:
``g * {1, phi, phi^2, ... phi^7}``, then ``g *= phi^8`` for the next eight), a fixed-size loop the
compiler unrolls and vectorises. Batch kernels run a two-stage pipeline over blocks of ``BLOCK``
keys: while the bits of block ``i`` are set or checked, the keys of block ``i + 1`` are already
hashed and their lines prefetched.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import prefetch
from ..hashing._kernels import xxh3_64_u64

#: Keys per pipeline stage: their lines are prefetched one stage before they are used.
BLOCK = 16


@njit(cache=True, nogil=True)
def line_word(h, num_lines):
    """Index of the first 32-bit word of the line of hash ``h`` (FastRange32 of its low half)."""
    return (((h & np.uint64(0xFFFFFFFF)) * num_lines) >> np.uint64(32)) * np.uint64(16)


@njit(cache=True, nogil=True)
def set_bits(w32, base, g, k):
    """Set the k probe bits of ``g`` (the upper half of the hash) in the line at word ``base``."""
    m = (np.uint64(0x00000001), np.uint64(0x9E3779B9), np.uint64(0xE35E67B1), np.uint64(0x734297E9),
         np.uint64(0x35FBE861), np.uint64(0xDEB7C719), np.uint64(0x0448B211), np.uint64(0x3459B749))  # fmt: skip
    done = 0
    while done < k:
        for p in range(8):
            if done + p < k:
                x = (g * m[p]) & np.uint64(0xFFFFFFFF)
                w32[base + (x >> np.uint64(28))] |= np.uint32(1) << np.uint32((x >> np.uint64(23)) & np.uint64(31))
        g = (g * np.uint64(0xAB25F4C1)) & np.uint64(0xFFFFFFFF)
        done += 8


@njit(cache=True, nogil=True)
def check_bits(w32, base, g, k):
    """True when all k probe bits of ``g`` are set in the line at word ``base`` (branch-free)."""
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
def _stage_hashes(hashes, start, stop, num_lines, probes, bases, w32):
    for i in range(start, stop):
        h = hashes[i]
        probes[i - start] = h >> np.uint64(32)
        bases[i - start] = line_word(h, num_lines)
    for j in range(stop - start):
        prefetch(w32, bases[j])


@njit(cache=True, nogil=True)
def _stage_ints(ints, start, stop, num_lines, probes, bases, w32):
    for i in range(start, stop):
        h = xxh3_64_u64(ints[i])
        probes[i - start] = h >> np.uint64(32)
        bases[i - start] = line_word(h, num_lines)
    for j in range(stop - start):
        prefetch(w32, bases[j])


@njit(cache=True, nogil=True)
def _run(w32, num_lines, k, keys, out, hashed, query):
    """The pipeline: ``keys`` are hashes (``hashed``) or integer keys; set bits or fill ``out``."""
    n = keys.shape[0]
    pa = np.empty(BLOCK, np.uint64)
    ba = np.empty(BLOCK, np.uint64)
    pb = np.empty(BLOCK, np.uint64)
    bb = np.empty(BLOCK, np.uint64)
    if hashed:
        _stage_hashes(keys, 0, min(BLOCK, n), num_lines, pa, ba, w32)
    else:
        _stage_ints(keys, 0, min(BLOCK, n), num_lines, pa, ba, w32)
    start = 0
    while start < n:
        stop = min(start + BLOCK, n)
        if stop < n:
            if hashed:
                _stage_hashes(keys, stop, min(stop + BLOCK, n), num_lines, pb, bb, w32)
            else:
                _stage_ints(keys, stop, min(stop + BLOCK, n), num_lines, pb, bb, w32)
        if query:
            for j in range(stop - start):
                out[start + j] = check_bits(w32, ba[j], pa[j], k)
        else:
            for j in range(stop - start):
                set_bits(w32, ba[j], pa[j], k)
        pa, pb = pb, pa
        ba, bb = bb, ba
        start = stop


@njit(cache=True, nogil=True)
def add_hashes(w32, num_lines, k, hashes):
    _run(w32, num_lines, k, hashes, np.empty(0, np.bool_), True, False)


@njit(cache=True, nogil=True)
def query_hashes(w32, num_lines, k, hashes, out):
    _run(w32, num_lines, k, hashes, out, True, True)


@njit(cache=True, nogil=True)
def add_ints(w32, num_lines, k, ints):
    _run(w32, num_lines, k, ints, np.empty(0, np.bool_), False, False)


@njit(cache=True, nogil=True)
def query_ints(w32, num_lines, k, ints, out):
    _run(w32, num_lines, k, ints, out, False, True)
