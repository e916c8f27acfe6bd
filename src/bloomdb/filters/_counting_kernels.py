"""Kernels of the ``counting`` filter: 4-bit counters in cache lines, blocked like ``blocked``.

A line is 64 bytes = 128 four-bit counters; counter ``c`` of the line at byte ``base`` is the low
nibble of byte ``base + c // 2`` when ``c`` is even, the high nibble when odd. For a key with
64-bit hash ``h`` the line is ``(lower32(h) * num_lines) >> 32`` (as in ``blocked``) and the k
counters are ``g_j >> 25`` for the same ``g_j = upper32(h) * 0x9e3779b9^j mod 2^32`` that
``blocked`` turns into bit ``g_j >> 23``. So bit ``b`` of the equivalent blocked filter is set
exactly when counter ``b >> 2`` is non-zero (:func:`to_blocked_bits`).

A counter saturates at 15: it is then never incremented nor decremented again, so it can never
fall to zero under a key that is still present. Kernels never raise: removals report the index
of the first key that cannot be present and leave the counters exactly as they were.

Concurrency: writers (add, remove, union) run one at a time (the filter's write gate); queries take
no lock. An add only raises counters (single-byte stores), so it never hides a key from a query.
A remove may lower counters of keys it shares with others for a moment (and undoes a failed
batch), so it holds the sequence counter ``seq`` odd while it runs; a query reads ``seq`` before
and after and returns False when it changed, and the caller re-checks its negatives with writers held off.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import atomic_add, fenced_load, prefetch

#: Keys between computing a line address and touching it (its line is prefetched meanwhile).
AHEAD = 8


@njit(cache=True, nogil=True)
def line_byte(h, num_lines):
    """First byte of the line of hash ``h`` (FastRange32 of its low half, as ``blocked``)."""
    return (((h & np.uint64(0xFFFFFFFF)) * num_lines) >> np.uint64(32)) * np.uint64(64)


@njit(cache=True, nogil=True)
def _counter_pos(g, p):
    """Counter index (0..127) of probe ``p`` (0..7) of the 32-bit probe seed ``g``."""
    m = (np.uint64(0x00000001), np.uint64(0x9E3779B9), np.uint64(0xE35E67B1), np.uint64(0x734297E9),
         np.uint64(0x35FBE861), np.uint64(0xDEB7C719), np.uint64(0x0448B211), np.uint64(0x3459B749))  # fmt: skip
    return ((g * m[p]) & np.uint64(0xFFFFFFFF)) >> np.uint64(25)


@njit(cache=True, nogil=True)
def _step(g):
    """The probe seed of the next group of eight probes (``g * 0x9e3779b9^8``)."""
    return (g * np.uint64(0xAB25F4C1)) & np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _get(buf, base, c):
    return (buf[base + (c >> np.uint64(1))] >> ((c & np.uint64(1)) * np.uint64(4))) & np.uint8(15)


@njit(cache=True, nogil=True)
def _bump(buf, base, c, up):
    """Increment (``up``) or decrement counter ``c`` by one unless it is saturated (15).

    Returns False, changing nothing, when a decrement would take the counter below zero.
    """
    i = base + (c >> np.uint64(1))
    shift = (c & np.uint64(1)) * np.uint64(4)
    v = (buf[i] >> shift) & np.uint8(15)
    if v == np.uint8(15):
        return True
    if up:
        buf[i] = np.uint8(buf[i] + (np.uint8(1) << shift))
        return True
    if v == np.uint8(0):
        return False
    buf[i] = np.uint8(buf[i] - (np.uint8(1) << shift))
    return True


@njit(cache=True, nogil=True)
def _add_one(buf, base, g, k):
    """+1 on the first ``k`` probes of seed ``g`` (all of a key's, or those a removal applied)."""
    done = 0
    while done < k:
        for p in range(8):
            if done + p < k:
                _bump(buf, base, _counter_pos(g, p), True)
        g = _step(g)
        done += 8


@njit(cache=True, nogil=True)
def _check_one(buf, base, g, k):
    ok = True
    done = 0
    while done < k:
        for p in range(8):
            if done + p < k:
                ok &= _get(buf, base, _counter_pos(g, p)) != np.uint8(0)
        g = _step(g)
        done += 8
    return ok


@njit(cache=True, nogil=True)
def _remove_one(buf, base, g, k):
    """Decrement the key's k counters; if one would go below zero, undo and say False.

    Probes are applied one by one, so a key whose probes repeat a counter is checked against
    the counter's multiplicity (a counter at 1 hit twice cannot hold that key); the undo
    re-increments the probes already applied, which restores them exactly (a decrement only
    touches counters in 1..14, so the re-increment never meets a saturated one).
    """
    g0 = g
    done = 0
    while done < k:
        for p in range(8):
            if done + p < k:
                if not _bump(buf, base, _counter_pos(g, p), False):
                    _add_one(buf, base, g0, done + p)  # re-increment the probes applied
                    return False
        g = _step(g)
        done += 8
    return True


@njit(cache=True, nogil=True)
def _run(buf, num_lines, k, hashes, out, mode):
    """One pass over ``hashes`` prefetching lines AHEAD keys early; mode 0 add, 1 query, 2 remove.

    Returns -1, or in mode 2 the index of the first key that cannot be present, after undoing
    the removals before it (see :func:`remove_hashes`).
    """
    n = hashes.shape[0]
    for i in range(min(AHEAD, n)):
        prefetch(buf, line_byte(hashes[i], num_lines))
    for i in range(n):
        if i + AHEAD < n:
            prefetch(buf, line_byte(hashes[i + AHEAD], num_lines))
        h = hashes[i]
        base = line_byte(h, num_lines)
        g = h >> np.uint64(32)
        if mode == 0:
            _add_one(buf, base, g, k)
        elif mode == 1:
            out[i] = _check_one(buf, base, g, k)
        elif not _remove_one(buf, base, g, k):
            for j in range(i - 1, -1, -1):
                hj = hashes[j]
                _add_one(buf, line_byte(hj, num_lines), hj >> np.uint64(32), k)
            return i
    return -1


@njit(cache=True, nogil=True)
def check_hash(buf, num_lines, k, h):
    """``might_contain`` for one hash (engines that probe many filters with one key call this).
    It does not take the remove sequence: an engine probing a filter that ``remove`` may change
    concurrently must use the filter's own query instead (the LSM's filters never change)."""
    return _check_one(buf, line_byte(h, num_lines), h >> np.uint64(32), k)


@njit(cache=True, nogil=True)
def add_hashes(buf, num_lines, k, hashes):
    """Add every hash: +1 on each of its k counters (saturating at 15). One line per key. The
    caller writes alone."""
    _run(buf, num_lines, k, hashes, np.empty(0, np.bool_), 0)


@njit(cache=True, nogil=True)
def query_hashes(buf, num_lines, k, hashes, out, seq):
    """``out[i]`` = all k counters of hash ``i`` are non-zero. Returns True when no remove ran
    meanwhile (``seq[0]`` even and unchanged); otherwise the caller re-checks the negatives."""
    s0 = fenced_load(seq, 0)
    _run(buf, num_lines, k, hashes, out, 1)
    return s0 == fenced_load(seq, 0) and s0 % np.uint64(2) == np.uint64(0)


@njit(cache=True, nogil=True)
def remove_hashes(buf, num_lines, k, hashes, seq):
    """:func:`remove_batch` with ``seq[0]`` odd while it runs (see the module's Concurrency)."""
    atomic_add(seq, 0, np.uint64(1))
    bad = remove_batch(buf, num_lines, k, hashes)
    atomic_add(seq, 0, np.uint64(1))
    return bad


@njit(cache=True, nogil=True)
def remove_batch(buf, num_lines, k, hashes):
    """Remove every hash, all or nothing: -1 when all were removed, else the first failing index.

    Keys are removed in order (so a key repeated in the batch must have been added as often);
    when key ``i`` cannot be present, keys ``0..i-1`` are re-added in reverse order, which
    restores every counter exactly (a removal only touches counters in 1..14 and a re-add
    undoes it; saturated counters are untouched both ways).
    """
    return _run(buf, num_lines, k, hashes, np.empty(0, np.bool_), 2)


@njit(cache=True, nogil=True)
def counter_stats(buf):
    """``(non-zero counters, saturated counters)`` over the whole array."""
    nonzero = 0
    saturated = 0
    for i in range(buf.shape[0]):
        b = buf[i]
        lo = b & np.uint8(15)
        hi = b >> np.uint8(4)
        nonzero += (lo != 0) + (hi != 0)
        saturated += (lo == 15) + (hi == 15)
    return nonzero, saturated


@njit(cache=True, nogil=True)
def add_counters(dst, src):
    """``dst += src`` counter by counter, saturating at 15 (union of two counting filters)."""
    for i in range(dst.shape[0]):
        a = dst[i]
        b = src[i]
        lo = np.uint16(a & np.uint8(15)) + np.uint16(b & np.uint8(15))
        hi = np.uint16(a >> np.uint8(4)) + np.uint16(b >> np.uint8(4))
        dst[i] = np.uint8(min(lo, np.uint16(15)) | (min(hi, np.uint16(15)) << np.uint16(4)))


@njit(cache=True, nogil=True)
def to_blocked_bits(buf, out):
    """Bits of the equivalent ``blocked`` filter: nibble ``c`` non-zero -> bits ``4c..4c+3`` set."""
    for i in range(buf.shape[0]):
        b = buf[i]
        v = np.uint8(0)
        if b & np.uint8(15):
            v |= np.uint8(15)
        if b >> np.uint8(4):
            v |= np.uint8(240)
        out[i] = v
