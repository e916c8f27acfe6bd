"""Kernels of the fills' background work (issue 14, twelfth session) against Python models:
the compaction's k-way merge compares 8-byte prefix words instead of bytes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bloomdb.lsm.compaction import _merge_kernels as MK
from bloomdb.lsm.sstable.builder import pack_bytes


def _awkward_keys(rng: random.Random, n: int) -> list[bytes]:
    """Keys with zero and 0xff bytes, shared prefixes and lengths around the 8- and 16-byte words."""
    alphabet = [b"\x00", b"\x01", b"a", b"\xff"]
    return list({b"".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 18, 24, 40])))
                 for _ in range(n)})


def _model(entries, snap: int, bottom: bool) -> list[int]:
    """The kept entries' indexes by the drop rules (``executor``'s docstring), merged order."""
    order = sorted(range(len(entries)), key=lambda i: (entries[i][0], -entries[i][1]))
    out, last, last_seq = [], None, 0
    for i in order:
        k, s, dead = entries[i]
        same = last is not None and k == last
        drop = same and last_seq <= snap
        if not drop and bottom and dead and s <= snap:
            drop = True
        last, last_seq = k, s
        if not drop:
            out.append(i)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_merge_runs_keeps_what_the_drop_rules_keep_on_awkward_keys(seed):
    rng = random.Random(seed)
    keys = _awkward_keys(rng, 600)
    nruns = rng.choice([1, 2, 3, 9, 13])
    seqs = rng.sample(range(1, 100_000), 4000)
    entries, starts = [], [0]
    for _ in range(nruns):
        size = rng.choice([0, 1, 50, 300])  # empty runs too
        run = []
        for k in rng.sample(keys, min(size, len(keys))):
            for _ in range(rng.choice([1, 1, 2, 3])):  # a run may hold several versions of a key
                run.append((k, seqs.pop(), rng.random() < 0.25))
        run.sort(key=lambda e: (e[0], -e[1]))
        entries += run
        starts.append(len(entries))
    kd, ko = pack_bytes([k for k, _, _ in entries])
    tr = np.array([(s << 8) | (0 if dead else 1) for _, s, dead in entries], np.uint64)
    st = np.array(starts, np.int64)
    for snap in (10 ** 9, 50_000, 0):
        for bottom in (False, True):
            got = MK.merge_runs(kd, ko, tr, st, snap, bottom).tolist()
            assert got == _model(entries, snap, bottom), (nruns, snap, bottom)


@pytest.mark.parametrize("seed,n", [(0, 100), (1, 600), (2, 5000), (3, 20000)])
def test_argsort_packed_is_a_stable_bytewise_sort(seed, n):
    """The flush's sort (radix passes over the prefix words from ``RADIX_MIN`` items, then the
    groups of equal words sorted by their full keys) against Python's stable sort: repeated keys
    keep their input order, keys equal in their first 16 bytes (zero padding, longer tails) are
    ordered by the rest."""
    from bloomdb.lsm.sstable import _table_kernels as TK

    rng = random.Random(seed)
    base = _awkward_keys(rng, max(8, n // 4))
    base += [b"0000000000%06d" % rng.randrange(10 ** 6) for _ in range(n // 4)]  # db-bench's shape
    base += [b"p" * 16 + bytes([rng.randrange(3)]) * rng.randrange(3) for _ in range(8)]  # equal words, tails
    keys = [rng.choice(base) for _ in range(n)]  # repeats: stability shows
    kd, ko = pack_bytes(keys)
    got = TK.argsort_packed(kd, ko).tolist()
    assert got == sorted(range(n), key=lambda i: keys[i])
    if n >= TK.RADIX_MIN:  # the words alone in radix order: stable by (p0, p1)
        p0, p1 = TK._prefix_words(kd, ko, 0), TK._prefix_words(kd, ko, 8)
        want = sorted(range(n), key=lambda i: (int(p0[i]), int(p1[i])))
        assert TK._radix_order(p0, p1).tolist() == want


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 128:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _reference_blocks(keys, trs, vals, block_size: int, restart_interval: int, gap: int):
    """The data blocks in Python (docs/formats.md): per entry varint shared, varint unshared,
    varint value length, the internal key's unshared bytes, the value; ``shared`` is the user
    keys' common prefix, reaching into the 8-byte trailer only between versions of one key; a
    block ends once it holds ``block_size`` bytes, never between versions of one key; then the
    u32 restart offsets, their u32 count and ``gap`` zero bytes."""
    import struct

    out, starts, sizes, lasts = bytearray(), [], [], []
    bstart, restarts, count = 0, [], 0
    for i, (k, t, v) in enumerate(zip(keys, trs, vals)):
        ik = k + struct.pack("<Q", t)
        shared = 0
        if count % restart_interval == 0:
            restarts.append(len(out) - bstart)
        else:
            pk = keys[i - 1]
            m = min(len(pk), len(k))
            while shared < m and pk[shared] == k[shared]:
                shared += 1
            if pk == k:
                pt = struct.pack("<Q", trs[i - 1])
                j = 0
                while j < 8 and pt[j] == ik[len(k) + j]:
                    j += 1
                shared += j
        out += _varint(shared) + _varint(len(ik) - shared) + _varint(len(v)) + ik[shared:] + v
        count += 1
        same_next = i + 1 < len(keys) and keys[i + 1] == k
        if i == len(keys) - 1 or (len(out) - bstart >= block_size and not same_next):
            out += b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))
            starts.append(bstart)
            sizes.append(len(out) - bstart)
            lasts.append(i)
            out += bytes(gap)
            bstart, restarts, count = len(out), [], 0
    return bytes(out), starts, sizes, lasts


@pytest.mark.parametrize("seed,block_size,restart", [(0, 4096, 16), (1, 512, 16), (2, 256, 1), (3, 1024, 3)])
def test_block_encoding_is_byte_for_byte_the_formats(seed, block_size, restart):
    """``encode_blocks`` (shared prefixes found 8 bytes at a time, the trailer stored in one
    word) writes exactly the bytes of a Python encoder of the format, and ``first_of_key`` marks
    the first version of each key, on awkward keys with several versions each."""
    from bloomdb.lsm.sstable import _block_kernels as BK

    rng = random.Random(seed)
    keys = sorted(_awkward_keys(rng, 700) + [b"0000000000%06d" % rng.randrange(10 ** 6) for _ in range(300)])
    ks, trs, vs = [], [], []
    seq = 10 ** 12
    for k in keys:
        for _ in range(rng.choice([1, 1, 2, 4])):
            seq -= rng.choice([1, 1, 256, 65536])  # versions whose trailers share some low bytes
            live = rng.random() > 0.2
            ks.append(k)
            trs.append((seq << 8) | int(live))
            vs.append(bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 100]))) if live else b"")
    kd, ko = pack_bytes(ks)
    vd, vo = pack_bytes(vs)
    tr = np.array(trs, np.uint64)
    order = list(range(len(ks)))
    vidx = np.array(order, np.int64)
    out, starts, sizes, lasts, vbytes = BK.encode_blocks(kd, ko, tr, vd, vo, vidx, block_size, restart, 5)
    want, ws, wz, wl = _reference_blocks(ks, trs, vs, block_size, restart, 5)
    assert out.tobytes() == want
    assert (starts.tolist(), sizes.tolist(), lasts.tolist(), int(vbytes)) == (ws, wz, wl, sum(map(len, vs)))
    assert BK.first_of_key(kd, ko).tolist() == [i == 0 or ks[i] != ks[i - 1] for i in range(len(ks))]
