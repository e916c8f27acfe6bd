"""Kernels of the hash join: an open-addressing hash table over the build keys.

Table layout: ``slots`` is a ``uint64`` array of ``2 * capacity`` words (capacity a power of
two, at most half full); slot ``s`` is the word pair ``(tag, group + 1)`` where ``group + 1 == 0``
marks an empty slot. Integer tables keep the key itself as the tag; byte-string tables keep the
key's XXH3-64 and compare bytes against the group's representative build row. The home slot of
a key is the top ``log2(capacity)`` bits of its XXH3-64 (``hash >> shift``), then linear probing
— the pair shares one cache line, so a probe costs one miss.

Distinct keys get dense group ids ``0 .. groups-1`` in order of first appearance; duplicate build
rows share their key's group (the caller turns groups into CSR lists of build rows).

Probe kernels visit either every row or a selection vector (row positions, ascending), skip
null rows, and write the matching positions and their groups. Hashes of the next ``AHEAD`` rows
are computed and their slots prefetched while the current row probes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import prefetch
from ..hashing._kernels import xxh3_64_u64

AHEAD = 8


@njit(cache=True, nogil=True)
def build_ints(keys, slots, shift, row_group):
    """Insert every key (uint64); ``row_group[i]`` = group of key ``i``. Returns the group count."""
    mask = np.uint64((slots.shape[0] >> 1) - 1)
    groups = 0
    for i in range(keys.shape[0]):
        k = keys[i]
        s = xxh3_64_u64(k) >> shift
        while True:
            g = slots[2 * s + 1]
            if g == 0:
                slots[2 * s] = k
                groups += 1
                slots[2 * s + 1] = np.uint64(groups)
                row_group[i] = groups - 1
                break
            if slots[2 * s] == k:
                row_group[i] = np.int64(g) - 1
                break
            s = (s + np.uint64(1)) & mask
    return groups


@njit(cache=True, nogil=True)
def _bytes_equal(a, a0, a1, b, b0, b1):
    if a1 - a0 != b1 - b0:
        return False
    for j in range(a1 - a0):
        if a[a0 + j] != b[b0 + j]:
            return False
    return True


@njit(cache=True, nogil=True)
def build_bytes(data, offsets, hashes, slots, shift, row_group, rep):
    """Insert byte-string keys (``data``/``offsets``, their ``hashes``); ``rep[g]`` = first row of group g."""
    mask = np.uint64((slots.shape[0] >> 1) - 1)
    groups = 0
    for i in range(hashes.shape[0]):
        h = hashes[i]
        s = h >> shift
        while True:
            g = slots[2 * s + 1]
            if g == 0:
                slots[2 * s] = h
                rep[groups] = i
                groups += 1
                slots[2 * s + 1] = np.uint64(groups)
                row_group[i] = groups - 1
                break
            if slots[2 * s] == h:
                r = rep[np.int64(g) - 1]
                if _bytes_equal(data, offsets[i], offsets[i + 1], data, offsets[r], offsets[r + 1]):
                    row_group[i] = np.int64(g) - 1
                    break
            s = (s + np.uint64(1)) & mask
    return groups


@njit(cache=True, nogil=True)
def _slot_of(keys, hashes, i, is_bytes, shift):
    return (hashes[i] if is_bytes else xxh3_64_u64(keys[i])) >> shift


@njit(cache=True, nogil=True)
def probe(keys, data, offsets, hashes, is_bytes, valid, sel, use_sel, slots, shift, b_data, b_offsets, rep,
          out_pos, out_group):
    """Probe every row (``use_sel`` False) or the positions ``sel`` against the table.

    Integer keys: ``keys`` (uint64), hashed here. Byte-string keys (``is_bytes``): ``data`` /
    ``offsets`` with their ``hashes``; a tag match is confirmed by comparing bytes with the
    group's representative build row (``b_data``/``b_offsets``/``rep``). ``valid`` is a bool array
    (True = not null) or empty for "no nulls". Returns ``(matches, probed)``: matching rows written
    to ``out_pos``/``out_group`` in row order, and how many non-null rows were looked up.
    """
    mask = np.uint64((slots.shape[0] >> 1) - 1)
    n = sel.shape[0] if use_sel else (hashes.shape[0] if is_bytes else keys.shape[0])
    has_valid = valid.shape[0] > 0
    ring = np.empty(16, np.uint64)
    for j in range(min(AHEAD, n)):
        ring[j] = _slot_of(keys, hashes, sel[j] if use_sel else j, is_bytes, shift)
        prefetch(slots, 2 * ring[j])
    m = 0
    probed = 0
    for j in range(n):
        if j + AHEAD < n:
            s2 = _slot_of(keys, hashes, sel[j + AHEAD] if use_sel else j + AHEAD, is_bytes, shift)
            ring[(j + AHEAD) & 15] = s2
            prefetch(slots, 2 * s2)
        i = sel[j] if use_sel else j
        if has_valid and not valid[i]:
            continue
        probed += 1
        tag = hashes[i] if is_bytes else keys[i]
        s = ring[j & 15]
        while True:
            g = slots[2 * s + 1]
            if g == 0:
                break
            if slots[2 * s] == tag:
                hit = True
                if is_bytes:
                    r = rep[np.int64(g) - 1]
                    hit = _bytes_equal(data, offsets[i], offsets[i + 1], b_data, b_offsets[r], b_offsets[r + 1])
                if hit:
                    out_pos[m] = i
                    out_group[m] = np.int64(g) - 1
                    m += 1
                    break
            s = (s + np.uint64(1)) & mask
    return m, probed


@njit(cache=True, nogil=True)
def expand_pairs(pos, groups, group_start, group_rows, out_pos, out_row):
    """For each matched probe row, one output pair per build row of its group (CSR lists)."""
    o = 0
    for j in range(pos.shape[0]):
        g = groups[j]
        for r in range(group_start[g], group_start[g + 1]):
            out_pos[o] = pos[j]
            out_row[o] = group_rows[r]
            o += 1
    return o


@njit(cache=True, nogil=True)
def weighted_sum(values, positions, use_pos, weights, use_w, valid, use_valid):
    """Σ values[i]·w (float64) over the rows (``positions`` if ``use_pos``, else all), skipping nulls.

    ``weights`` (int64) give each row's multiplicity when ``use_w``; ``valid`` (indexed like
    ``values``) marks non-null rows when ``use_valid``. Returns ``(sum, count)`` with count = Σ w
    over non-null rows. One pass.
    """
    n = positions.shape[0] if use_pos else values.shape[0]
    acc = 0.0
    cnt = 0
    for j in range(n):
        i = positions[j] if use_pos else j
        if use_valid and not valid[i]:
            continue
        w = weights[j] if use_w else np.int64(1)
        acc += values[i] * np.float64(w)
        cnt += w
    return acc, cnt


@njit(cache=True, nogil=True)
def weighted_isum(bits, signed, positions, use_pos, weights, use_w, valid, use_valid):
    """Σ v·w of 64-bit integers (``bits``: their uint64 bits; ``signed`` = two's complement).

    Returns ``(wrapped, approx, bound, count)``: the sum mod 2^64 (exact), the same sum and
    Σ|v·w| accumulated in float64. The caller recovers the exact sum as the integer congruent to
    ``wrapped`` nearest ``approx`` whenever the float error bound (terms · 2^-52 · bound) is below
    2^62. One branch-free pass (besides the null test).
    """
    n = positions.shape[0] if use_pos else bits.shape[0]
    wrapped = np.uint64(0)
    approx = 0.0
    bound = 0.0
    cnt = 0
    for j in range(n):
        i = positions[j] if use_pos else j
        if use_valid and not valid[i]:
            continue
        w = weights[j] if use_w else np.int64(1)
        b = bits[i]
        wrapped += b * np.uint64(w)
        f = np.float64(np.int64(b)) if signed else np.float64(b)
        t = f * np.float64(w)
        approx += t
        bound += abs(t)
        cnt += w
    return wrapped, approx, bound, cnt


@njit(cache=True, nogil=True)
def merge_unmatched(pos, groups, unmatched, group_start, group_rows, expand, out_pos, out_row):
    """Probe order merge of matched rows ``pos`` (ascending, key groups ``groups``) and
    ``unmatched`` rows (ascending, disjoint from ``pos``): a matched row emits one pair per build
    row of its group when ``expand`` (else once, with its group's row count in ``out_row``), an
    unmatched row once with build row -1 (with ``expand`` False: count 1). Returns the pairs written."""
    i = 0
    u = 0
    o = 0
    while i < pos.shape[0] or u < unmatched.shape[0]:
        if u >= unmatched.shape[0] or (i < pos.shape[0] and pos[i] < unmatched[u]):
            g = groups[i]
            if expand:
                for r in range(group_start[g], group_start[g + 1]):
                    out_pos[o] = pos[i]
                    out_row[o] = group_rows[r]
                    o += 1
            else:
                out_pos[o] = pos[i]
                out_row[o] = group_start[g + 1] - group_start[g]
                o += 1
            i += 1
        else:
            out_pos[o] = unmatched[u]
            out_row[o] = -1 if expand else 1
            o += 1
            u += 1
    return o
