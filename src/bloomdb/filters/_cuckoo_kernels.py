"""Kernels of the ``cuckoo`` filter (Fan, Andersen, Kaminsky, Mitzenmacher 2014).

Table: ``nb`` buckets (a power of two, at least 2) of 4 slots; slot ``s`` of bucket ``b`` holds an
``f``-bit fingerprint (tag) at bit offset ``(4 b + s) f`` of the payload, little-endian, so a bucket
is ``f / 2`` bytes (4, 6 or 8) and the payload ``nb f / 2`` bytes. Tag 0 means "empty".

For a key with 64-bit hash ``h``:

* first bucket ``i1 = upper32(h) & (nb - 1)``;
* tag ``t = ((lower32(h) * (2^f - 1)) >> 32) + 1``, uniform over ``1 .. 2^f - 1``;
* alternate bucket ``alt(i, t) = i XOR o(t)`` with ``o(t) = ((upper32(t * 0x9e3779b97f4a7c15) *
  (nb - 1)) >> 32) + 1`` in ``1 .. nb - 1`` — partial-key cuckoo hashing; XOR with a value that
  depends on the tag only is an involution, and ``o(t) != 0`` keeps the two buckets distinct
  (the reference implementation lets them coincide, which halves the room of those keys).

Insertion tries both buckets, then relocates up to ``MAX_KICKS`` = 2000 tags, choosing the evicted
slot with a xorshift generator seeded by the key's hash (deterministic). If no room is found the
kick chain is undone in reverse, so the table is exactly as before and the kernel reports failure.
Kernels never raise.

Concurrency: writers run one at a time (the filter's write gate). While a tag is being relocated it
is briefly in neither bucket, and a 12-bit tag is written as two bytes, so every write (an add
batch, whose inserts may relocate tags; a remove; a union's copy-in) holds the sequence counter
``seq`` odd while it runs: two atomics per batch. :func:`query_hashes` reads ``seq`` before and
after and reports whether it moved, and the caller then re-checks the negatives with writers held
off. (Making ``seq`` odd only from a batch's first relocation measured 9% slower inserts.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._intrinsics import atomic_add, fenced_load, prefetch

MAX_KICKS = 2000
#: Keys between computing a key's buckets and touching them (prefetched meanwhile).
AHEAD = 8


@njit(cache=True, nogil=True)
def tag_of(h, f):
    return (((h & np.uint64(0xFFFFFFFF)) * ((np.uint64(1) << np.uint64(f)) - np.uint64(1))) >> np.uint64(32)) + np.uint64(1)


@njit(cache=True, nogil=True)
def index_of(h, nb):
    return (h >> np.uint64(32)) & (nb - np.uint64(1))


@njit(cache=True, nogil=True)
def alt_of(i, tag, nb):
    mix = ((tag * np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)) >> np.uint64(32)
    return i ^ (((mix * (nb - np.uint64(1))) >> np.uint64(32)) + np.uint64(1))


@njit(cache=True, nogil=True)
def get_tag(buf, f, pos):
    """The tag in slot ``pos`` (= 4 * bucket + slot)."""
    if f == 8:
        return np.uint64(buf[pos])
    bit = pos * np.uint64(f)
    p = bit >> np.uint64(3)
    w = np.uint64(buf[p]) | (np.uint64(buf[p + np.uint64(1)]) << np.uint64(8))
    return (w >> (bit & np.uint64(7))) & ((np.uint64(1) << np.uint64(f)) - np.uint64(1))


@njit(cache=True, nogil=True)
def set_tag(buf, f, pos, tag):
    if f == 8:
        buf[pos] = np.uint8(tag)
        return
    bit = pos * np.uint64(f)
    p = bit >> np.uint64(3)
    sh = bit & np.uint64(7)
    w = np.uint64(buf[p]) | (np.uint64(buf[p + np.uint64(1)]) << np.uint64(8))
    mask = ((np.uint64(1) << np.uint64(f)) - np.uint64(1)) << sh
    w = (w & ~mask) | (tag << sh)
    buf[p] = np.uint8(w & np.uint64(0xFF))
    buf[p + np.uint64(1)] = np.uint8((w >> np.uint64(8)) & np.uint64(0xFF))


@njit(cache=True, nogil=True)
def find_slot(buf, f, b, tag):
    """Slot position (``4 b + s``) holding ``tag`` in bucket ``b``, or -1."""
    base = b * np.uint64(4)
    for s in range(4):
        if get_tag(buf, f, base + np.uint64(s)) == tag:
            return np.int64(base + np.uint64(s))
    return np.int64(-1)


@njit(cache=True, nogil=True)
def find_key(buf, f, nb, i1, tag):
    """Slot position of ``tag`` in bucket ``i1`` or else in its alternate, or -1 (a lookup)."""
    s = find_slot(buf, f, i1, tag)
    if s < 0:
        s = find_slot(buf, f, alt_of(i1, tag, nb), tag)
    return s


@njit(cache=True, nogil=True)
def _prefetch_key(buf, f, nb, h):
    i1 = index_of(h, nb)
    i2 = alt_of(i1, tag_of(h, f), nb)
    prefetch(buf, (i1 * np.uint64(f)) >> np.uint64(1))
    prefetch(buf, (i2 * np.uint64(f)) >> np.uint64(1))


@njit(cache=True, nogil=True)
def insert_tag(buf, f, nb, i1, tag, seed, path):
    """Place ``tag`` in bucket ``i1`` or its alternate, relocating others if needed.

    ``path`` (int64, at least MAX_KICKS) records the slots of the kick chain so it can be undone.
    Returns False, with the table exactly as before, when MAX_KICKS kicks found no room.
    """
    i2 = alt_of(i1, tag, nb)
    s = find_slot(buf, f, i1, np.uint64(0))
    if s < 0:
        s = find_slot(buf, f, i2, np.uint64(0))
    if s >= 0:
        set_tag(buf, f, np.uint64(s), tag)
        return True
    state = seed | np.uint64(1)
    b = i1 if (state >> np.uint64(63)) == np.uint64(0) else i2
    cur = tag
    for n in range(MAX_KICKS):
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        pos = b * np.uint64(4) + (state & np.uint64(3))
        path[n] = np.int64(pos)
        old = get_tag(buf, f, pos)
        set_tag(buf, f, pos, cur)
        cur = old
        b = alt_of(b, cur, nb)
        s = find_slot(buf, f, b, np.uint64(0))
        if s >= 0:
            set_tag(buf, f, np.uint64(s), cur)
            return True
    # no room: put every evicted tag back, newest first; ``cur`` ends as the new key's tag
    for n in range(MAX_KICKS - 1, -1, -1):
        pos = np.uint64(path[n])
        old = get_tag(buf, f, pos)
        set_tag(buf, f, pos, cur)
        cur = old
    return False


@njit(cache=True, nogil=True)
def _run(buf, f, nb, hashes, out, mode):
    """One pass over ``hashes`` prefetching both buckets AHEAD keys early.

    Mode 0 inserts in order and returns how many went in (stopping at the first that finds no
    room); mode 1 fills ``out``; mode 2 removes all or nothing and returns -1 or the first index
    with no copy (the tags already deleted are written back into the very slots they came from).
    """
    n = hashes.shape[0]
    path = np.empty(MAX_KICKS if mode == 0 else 0, np.int64)
    freed = np.empty(n if mode == 2 else 0, np.int64)
    for i in range(min(AHEAD, n)):
        _prefetch_key(buf, f, nb, hashes[i])
    for i in range(n):
        if i + AHEAD < n:
            _prefetch_key(buf, f, nb, hashes[i + AHEAD])
        h = hashes[i]
        tag = tag_of(h, f)
        i1 = index_of(h, nb)
        if mode == 0:
            if not insert_tag(buf, f, nb, i1, tag, h, path):
                return i
            continue
        s = find_key(buf, f, nb, i1, tag)
        if mode == 1:
            out[i] = s >= 0
        elif s < 0:
            for j in range(i - 1, -1, -1):
                set_tag(buf, f, np.uint64(freed[j]), tag_of(hashes[j], f))
            return i
        else:
            set_tag(buf, f, np.uint64(s), np.uint64(0))
            freed[i] = s
    return n if mode == 0 else -1


@njit(cache=True, nogil=True)
def check_hash(buf, f, nb, h):
    """``might_contain`` for one hash (engines that probe many filters with one key call this).
    It does not take the write sequence: an engine probing a filter that writes may change
    concurrently (relocations move tags) must use the filter's own query instead (the LSM's
    filters never change)."""
    return find_key(buf, f, nb, index_of(h, nb), tag_of(h, f)) >= 0


@njit(cache=True, nogil=True)
def add_hashes(buf, f, nb, hashes, seq):
    """Insert keys in order; stop at the first one that finds no room. Returns how many went in.
    ``seq[0]`` is odd while it runs (relocations move tags)."""
    atomic_add(seq, 0, np.uint64(1))
    added = _run(buf, f, nb, hashes, np.empty(0, np.bool_), 0)
    atomic_add(seq, 0, np.uint64(1))
    return added


@njit(cache=True, nogil=True)
def query_hashes(buf, f, nb, hashes, out, seq):
    """``out[i]`` = the tag of hash ``i`` is in one of its two buckets. Returns True when no write
    that moves tags ran meanwhile (``seq[0]`` even and unchanged)."""
    s0 = fenced_load(seq, 0)
    _run(buf, f, nb, hashes, out, 1)
    return s0 == fenced_load(seq, 0) and s0 % np.uint64(2) == np.uint64(0)


@njit(cache=True, nogil=True)
def remove_hashes(buf, f, nb, hashes, seq):
    """Delete one copy of each key's tag, all or nothing: -1, or the first index with no copy."""
    atomic_add(seq, 0, np.uint64(1))
    bad = _run(buf, f, nb, hashes, np.empty(0, np.bool_), 2)
    atomic_add(seq, 0, np.uint64(1))
    return bad


@njit(cache=True, nogil=True)
def copy_in(dst, src, seq):
    """``dst[:] = src`` with ``seq[0]`` odd meanwhile (a union publishing its merged table)."""
    atomic_add(seq, 0, np.uint64(1))
    dst[:] = src
    atomic_add(seq, 0, np.uint64(1))


@njit(cache=True, nogil=True)
def merge_into(dst, src, f, nb):
    """Insert every tag of ``src`` into ``dst`` (same shape) at its bucket. Returns tags that
    found no room (0 = complete; the caller discards ``dst`` otherwise)."""
    path = np.empty(MAX_KICKS, np.int64)
    failed = 0
    for pos in range(np.int64(nb) * 4):
        tag = get_tag(src, f, np.uint64(pos))
        if tag != np.uint64(0):
            b = np.uint64(pos) >> np.uint64(2)
            if not insert_tag(dst, f, nb, b, tag, tag * np.uint64(0x9E3779B97F4A7C15) + np.uint64(pos), path):
                failed += 1
    return failed


@njit(cache=True, nogil=True)
def occupied(buf, f, nb):
    """Number of non-empty slots."""
    total = 0
    for pos in range(np.int64(nb) * 4):
        if get_tag(buf, f, np.uint64(pos)) != np.uint64(0):
            total += 1
    return total
