"""Kernels of the hash join: an open-addressing hash table over the build keys.

Table layout: ``slots`` is a ``uint64`` array of ``2 * capacity`` words (capacity a power of
two, at most half full); slot ``s`` is the word pair ``(tag, group + 1)`` where ``group + 1 == 0``
marks an empty slot. Integer tables keep the key itself as the tag; byte-string tables keep the
key's XXH3-64 and compare bytes against the group's representative build row; composite tables
(a multi-column key of fixed-width columns, one ``uint64`` word per column: a column of the
2-D ``words`` array, one row of it per key column) keep the key's :func:`hash_words` and compare
its words with the representative's (build words are stored one row per key, a key's words in
one cache line). The home slot of
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
def hash_words(words, out):
    """``out[i]`` = hash of composite key ``i``, the words ``words[:, i]`` (one row of ``words``
    per key column): the words folded as a polynomial mod 2^64 (``acc * C + w``, C odd, so the
    column order matters), then XXH3-64 of that word — one XXH3 per key whatever the column
    count. Two keys that fold to the same word share a hash (rare: for two columns it needs
    ``Δw0 * C ≡ -Δw1 (mod 2^64)``); the table then still compares their words, the filter lets
    both in. One pass; every key is hashed (null keys too)."""
    c = np.uint64(0x9E3779B97F4A7C15)
    first = words[0]
    if words.shape[0] == 2:  # the common case, one vectorisable loop
        second = words[1]
        for i in range(first.shape[0]):
            out[i] = xxh3_64_u64(first[i] * c + second[i])
        return
    out[:] = first
    for j in range(1, words.shape[0]):
        w = words[j]
        for i in range(out.shape[0]):
            out[i] = out[i] * c + w[i]
    for i in range(out.shape[0]):
        out[i] = xxh3_64_u64(out[i])


@njit(cache=True, nogil=True)
def pack_column(words, lo, span, stride, first, acc, inside):
    """Add one key column to packed keys (:class:`.keys.Packer`): ``acc[i] (+)= (words[i] - lo) *
    stride``; ``inside[i] (&)= words[i] - lo < span`` (unsigned: below ``lo`` wraps above). The
    first column (``first``) writes instead of adding. One pass."""
    for i in range(words.shape[0]):
        off = words[i] - lo
        if first:
            acc[i] = off * stride
            inside[i] = off < span
        else:
            acc[i] += off * stride
            inside[i] &= off < span


@njit(cache=True, nogil=True)
def _words_equal(a, i, b, r):
    """Whether key ``i`` of ``a`` (one row per key column) equals key ``r`` of ``b`` (one row per key)."""
    for j in range(b.shape[1]):
        if a[j, i] != b[r, j]:
            return False
    return True


#: key forms (probe and build modes)
INTS, BYTES, WORDS = 0, 1, 2


@njit(cache=True, nogil=True)
def build_hashed(mode, data, offsets, words, keys, hashes, slots, shift, row_group, rep):
    """Insert hashed keys (their ``hashes``): byte strings ``data``/``offsets`` (``mode`` BYTES)
    or composite keys (WORDS: ``words`` one row per key column, ``keys`` the same words one row
    per key). ``rep[g]`` = first key of group g; keys with equal tags are compared by value."""
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
                if mode == 1:
                    same = _bytes_equal(data, offsets[i], offsets[i + 1], data, offsets[r], offsets[r + 1])
                else:
                    same = _words_equal(words, i, keys, r)
                if same:
                    row_group[i] = np.int64(g) - 1
                    break
            s = (s + np.uint64(1)) & mask
    return groups


@njit(cache=True, nogil=True)
def _slot_of(keys, hashes, i, mode, shift):
    return (xxh3_64_u64(keys[i]) if mode == 0 else hashes[i]) >> shift


@njit(cache=True, nogil=True)
def probe(keys, data, offsets, words, hashes, mode, valid, sel, use_sel, slots, shift, b_data, b_offsets, b_words,
          rep, out_pos, out_group):
    """Probe every row (``use_sel`` False) or the positions ``sel`` against the table.

    ``mode`` INTS: ``keys`` (uint64), hashed here. BYTES: byte-string keys ``data`` / ``offsets``
    with their ``hashes``; a tag match is confirmed by comparing bytes with the group's
    representative build row (``b_data``/``b_offsets``/``rep``). WORDS: composite keys, ``words``
    (one row per key column) with their :func:`hash_words`, confirmed against ``b_words[rep[g]]``
    (one row per build key). ``valid`` is a bool array
    (True = not null) or empty for "no nulls". Returns ``(matches, probed)``: matching rows written
    to ``out_pos``/``out_group`` in row order, and how many non-null rows were looked up.
    """
    mask = np.uint64((slots.shape[0] >> 1) - 1)
    n = sel.shape[0] if use_sel else (keys.shape[0] if mode == 0 else hashes.shape[0])
    has_valid = valid.shape[0] > 0
    ring = np.empty(16, np.uint64)
    for j in range(min(AHEAD, n)):
        ring[j] = _slot_of(keys, hashes, sel[j] if use_sel else j, mode, shift)
        prefetch(slots, 2 * ring[j])
    m = 0
    probed = 0
    for j in range(n):
        if j + AHEAD < n:
            s2 = _slot_of(keys, hashes, sel[j + AHEAD] if use_sel else j + AHEAD, mode, shift)
            ring[(j + AHEAD) & 15] = s2
            prefetch(slots, 2 * s2)
        i = sel[j] if use_sel else j
        if has_valid and not valid[i]:
            continue
        probed += 1
        tag = keys[i] if mode == 0 else hashes[i]
        s = ring[j & 15]
        while True:
            g = slots[2 * s + 1]
            if g == 0:
                break
            if slots[2 * s] == tag:
                hit = True
                if mode == 1:
                    r = rep[np.int64(g) - 1]
                    hit = _bytes_equal(data, offsets[i], offsets[i + 1], b_data, b_offsets[r], b_offsets[r + 1])
                elif mode == 2:
                    hit = _words_equal(words, i, b_words, rep[np.int64(g) - 1])
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


@njit(cache=True, nogil=True)
def merge_groups(pos, groups, unmatched, out_pos, out_group):
    """Probe-order merge of matched rows ``pos`` (ascending, key groups ``groups``) and
    ``unmatched`` rows (ascending, disjoint from ``pos``; their group is written as -1)."""
    i = 0
    u = 0
    o = 0
    while i < pos.shape[0] or u < unmatched.shape[0]:
        if u >= unmatched.shape[0] or (i < pos.shape[0] and pos[i] < unmatched[u]):
            out_pos[o] = pos[i]
            out_group[o] = groups[i]
            i += 1
        else:
            out_pos[o] = unmatched[u]
            out_group[o] = -1
            u += 1
        o += 1
    return o


@njit(cache=True, nogil=True)
def scatter_groups(pos, groups, out):
    """``out[i]`` = the key group of row ``i``: ``groups[j]`` at ``pos[j]``, -1 elsewhere (a left
    join's chunk where every probe row is in the result). One pass over ``out``, one over ``pos``."""
    out[:] = -1
    for j in range(pos.shape[0]):
        out[pos[j]] = groups[j]


@njit(cache=True, nogil=True)
def fill_groups_bitmap(groups, group_start, grouped, grouped_valid, use_valid, bitmap, out, bits):
    """For each result probe row's key group ``groups[j]``: the values ``grouped[start[g]:start[g+1]]``
    (a build column in group order, so a key's build rows are one contiguous run), or one null
    where ``g == -1`` (``out`` 0). With ``bitmap``, validity goes to an Arrow bitmap: bit ``o`` of
    ``bits`` (uint8, LSB first, ``ceil(total / 8)`` bytes, each written whole) is set where result
    row ``o`` is not null; ``grouped_valid`` marks non-null build values when ``use_valid``
    (without ``bitmap`` neither is read: no group is -1 and no build value is null). Returns the
    null count. One sequential pass over the output; the runs of the next ``AHEAD`` rows are
    prefetched, first and last value (groups are visited in random order; a 10-value run of
    int64 spans two cache lines more often than not: prefetching both took ~5.2 to ~4.4 ns/value)."""
    n = groups.shape[0]
    if not bitmap:
        o = 0
        for j in range(n):
            if j + AHEAD < n:  # a run of a few values often spans two cache lines: fetch both ends
                ga = groups[j + AHEAD]
                prefetch(grouped, group_start[ga])
                prefetch(grouped, group_start[ga + 1] - 1)
            g = groups[j]
            for r in range(group_start[g], group_start[g + 1]):
                out[o] = grouped[r]
                o += 1
        return 0
    o = 0
    nulls = 0
    byte = np.uint8(0)
    for j in range(n):
        if j + AHEAD < n and groups[j + AHEAD] >= 0:
            ga = groups[j + AHEAD]
            prefetch(grouped, group_start[ga])
            prefetch(grouped, group_start[ga + 1] - 1)
        g = groups[j]
        if g < 0:
            out[o] = 0
            nulls += 1
            if o & 7 == 7:
                bits[o >> 3] = byte
                byte = np.uint8(0)
            o += 1
            continue
        for r in range(group_start[g], group_start[g + 1]):
            out[o] = grouped[r]
            if use_valid and not grouped_valid[r]:
                nulls += 1
            else:
                byte |= np.uint8(1 << (o & 7))
            if o & 7 == 7:
                bits[o >> 3] = byte
                byte = np.uint8(0)
            o += 1
    if o & 7:
        bits[o >> 3] = byte
    return nulls


@njit(cache=True, nogil=True)
def repeat_values(values, counts, out):
    """``out`` = each ``values[j]`` ``counts[j]`` times, in order (``np.repeat`` without the GIL)."""
    o = 0
    for j in range(values.shape[0]):
        v = values[j]
        for _ in range(counts[j]):
            out[o] = v
            o += 1
    return o


@njit(cache=True, nogil=True)
def fill_unique_bitmap(groups, values, valid, use_valid, out, bits):
    """:func:`fill_groups_bitmap` when every key group has one build row (``values[g]`` is group
    ``g``'s value): ``out[j] = values[groups[j]]``, 0 and a clear bit where ``groups[j] == -1``
    (or, with ``use_valid``, where the build value is null). Branch-free per row (a left join's
    unmatched rows are interleaved at random with the matched ones: a branch on each mispredicts),
    bits packed a byte at a time. Returns the null count."""
    n = groups.shape[0]
    set_bits = 0
    for b in range((n + 7) >> 3):
        byte = 0
        hi = min(n, (b << 3) + 8)
        for j in range(b << 3, hi):
            g = groups[j]
            ok = g >= 0
            gi = g if ok else 0
            if use_valid:
                ok = ok and valid[gi]
            out[j] = values[gi] if ok else 0
            byte |= np.int64(ok) << (j & 7)
            set_bits += np.int64(ok)
        bits[b] = np.uint8(byte)
    return n - set_bits
