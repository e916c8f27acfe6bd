"""A data block's point search (``_block_kernels.block_get``) against a brute-force model of the
block's entries: variable-length keys that are prefixes of one another, several versions per key,
deletions, snapshots -- the cases where comparing from the first byte that may differ (the bytes a
key shares with the one before it are not compared again) could go wrong."""

from __future__ import annotations

import numpy as np
import pytest

from bloomdb.lsm.sstable import _block_kernels as BK
from bloomdb.lsm.sstable.block import TRAILER
from bloomdb.lsm.sstable.builder import pack_bytes


def _entries(seed: int, n: int):
    rng = np.random.default_rng(seed)
    alphabet = b"ab\x00\xff"
    keys = set()
    while len(keys) < n:  # short keys over a tiny alphabet: many are prefixes of others
        keys.add(bytes(alphabet[i] for i in rng.integers(0, len(alphabet), int(rng.integers(0, 7)))))
    ks, trs, vs = [], [], []
    seq = 10 * n
    for k in sorted(keys):
        for _ in range(int(rng.integers(1, 4))):
            live = int(rng.random() > 0.25)
            ks.append(k)
            trs.append((seq << 8) | live)
            vs.append(b"v%d" % seq if live else b"")
            seq -= int(rng.integers(1, 5))
    return ks, trs, vs


def _model(ks, trs, vs, key, snap):
    for k, t, v in zip(ks, trs, vs):
        if k == key and (t >> 8) <= snap:
            return (1, v) if t & 0xFF else (2, b"")
    return (0, b"")


@pytest.mark.parametrize("seed,restart", [(1, 16), (2, 4), (3, 1), (4, 16)])
def test_block_get_answers_like_a_scan_of_the_entries(seed, restart):
    ks, trs, vs = _entries(seed, 400)
    kd, ko = pack_bytes(ks)
    vd, vo = pack_bytes(vs)
    tr = np.array(trs, np.uint64)
    buf, offs, sizes = BK.encode_blocks(kd, ko, tr, vd, vo, np.arange(len(ks), dtype=np.int64), 512, restart, TRAILER)[:3]
    seqs = sorted({t >> 8 for t in trs})
    checked = 0
    for off, size in zip(offs.tolist(), sizes.tolist()):
        ok, bkd, bko, btr, bvd, bvo = BK.decode_blocks(buf, np.array([off], np.int64), np.array([size], np.int64))
        assert ok
        bk = [bytes(bkd[bko[i] : bko[i + 1]]) for i in range(len(btr))]
        bv = [bytes(bvd[bvo[i] : bvo[i + 1]]) for i in range(len(btr))]
        bt = [int(t) for t in btr]
        probes = set(bk)
        for k in bk:
            probes |= {k[:-1], k + b"\x00", k + b"a", k[:-1] + b"\xff"}
        for key in sorted(probes):
            for snap in (seqs[0] - 1, seqs[len(seqs) // 2], seqs[-1], (1 << 56) - 1):
                st, p, n = BK.block_get(buf, off, size, key, snap)
                assert (st, bytes(buf[p : p + n]) if st == 1 else b"") == _model(bk, bt, bv, key, snap), (key, snap)
                checked += 1
    assert checked > 1000
