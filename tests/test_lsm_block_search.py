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


def _hinted_blocks(ks, trs, vs, block_size, restart):
    """Encode the entries; per block: ``(off, size, keys, trailers, values)``."""
    kd, ko = pack_bytes(ks)
    vd, vo = pack_bytes(vs)
    tr = np.array(trs, np.uint64)
    buf, offs, sizes = BK.encode_blocks(kd, ko, tr, vd, vo, np.arange(len(ks), dtype=np.int64), block_size,
                                        restart, TRAILER)[:3]
    out = []
    for off, size in zip(offs.tolist(), sizes.tolist()):
        ok, bkd, bko, btr, bvd, bvo = BK.decode_blocks(buf, np.array([off], np.int64), np.array([size], np.int64))
        assert ok
        out.append((off, size, [bytes(bkd[bko[i] : bko[i + 1]]) for i in range(len(btr))], [int(t) for t in btr],
                    [bytes(bvd[bvo[i] : bvo[i + 1]]) for i in range(len(btr))]))
    return buf, out


@pytest.mark.parametrize("seed,block_size,restart,prefix", [(5, 512, 16, b""), (6, 256, 4, b""), (7, 512, 16, b"P" * 16),
                                                            (8, 256, 4, b"Q" * 14), (9, 512, 1, b"")])
def test_a_hinted_block_search_answers_like_a_scan_of_the_entries(seed, block_size, restart, prefix):
    """The search through a block's hint (its restart keys' prefix words, kept in memory) gives
    block_get's answers: keys that tie on their prefix words (a common 16-byte prefix, keys that
    differ only by trailing zero bytes), versions of one key across restart points, snapshots;
    a block with too many restarts has no hint (searched whole); and a hint whose key words are
    stale (zero: read while another thread wrote it) never gives a wrong answer, only ST_RETRY."""
    ks, trs, vs = _entries(seed, 300)
    ks = [prefix + k for k in ks]
    buf, blocks = _hinted_blocks(ks, trs, vs, block_size, restart)
    seqs = sorted({t >> 8 for t in trs})
    hinted = retried = 0
    for off, size, bk, bt, bv in blocks:
        state = np.zeros(8 * BK.HINT_WORDS, np.uint8)
        h = int(BK.block_hint(buf, off, size, state, 0))
        assert h == int(state[:8].view(np.uint64)[0]) != 0
        nr = int(np.frombuffer(bytes(buf[off + size - 4 : off + size]), "<u4")[0])
        assert (h == BK.HINT_NONE) == (nr > BK.HINT_RESTARTS)
        stale = state.copy()
        stale[8:] = 0  # word 0 seen, key words not yet
        probes = set(bk)
        for k in bk:
            probes |= {k[:-1], k + b"\x00", k + b"a", k[:-1] + b"\xff"}
        for key in sorted(probes):
            k0, k1 = (np.uint64(w) for w in BK.key_words(np.frombuffer(key, np.uint8), 0, len(key)))
            for snap in (seqs[0] - 1, seqs[len(seqs) // 2], seqs[-1], (1 << 56) - 1):
                want = _model(bk, bt, bv, key, snap)
                got = BK.block_get(buf, off, size, key, snap)
                assert (got[0], bytes(buf[got[1] : got[1] + got[2]]) if got[0] == 1 else b"") == want
                if h == BK.HINT_NONE:
                    continue
                st, p, n = BK.block_get_hinted(buf, off, size, np.uint64(h), state, 0, key, k0, k1, snap)
                assert (st, bytes(buf[p : p + n]) if st == 1 else b"") == want, (key, snap)
                hinted += 1
                st, p, n = BK.block_get_hinted(buf, off, size, np.uint64(h), stale, 0, key, k0, k1, snap)
                if st == BK.ST_RETRY:
                    retried += 1
                else:
                    assert (st, bytes(buf[p : p + n]) if st == 1 else b"") == want, (key, snap)
    if restart == 1:
        assert hinted == 0  # one restart per entry: more than a hint holds
    else:
        assert hinted > 1000 and retried > 0
