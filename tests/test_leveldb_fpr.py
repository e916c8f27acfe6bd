"""The ``leveldb`` family's FP model (issue 13 part 4 follow-up): LevelDB's own probe scheme
(rotate-and-add over a 32-bit hash, whose third probe takes at most 2^18 values) and 32-bit hash
collisions, checked against exact false-positive counts of real filters — no widened tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from bloomdb.filters import leveldb_fpr
from bloomdb.filters import math as fm
from bloomdb.filters.leveldb import LevelDBBloom


def _keys(n, offset):
    x = np.arange(offset, offset + n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return x ^ (x >> np.uint64(31))


def test_third_probe_distribution_is_exact():
    """The closed form of ``(h + 2 rotr(h, 17)) mod 2^32`` against the probe itself, and its
    weights sum to one over at most 2^18 values."""
    positions, p = leveldb_fpr.third_probe(1 << 32)
    assert p.sum() == pytest.approx(1.0) and positions.size <= 1 << 18
    h = np.random.default_rng(1).integers(0, 1 << 32, 100_000, dtype=np.uint64)
    g2 = leveldb_fpr.probe_positions(h, 2, 1 << 32)
    assert np.isin(g2, positions).all()
    # the probes agree with the kernel: a filter built from one hash has exactly those k bits set
    filt = np.zeros(1001, np.uint8)
    filt[-1] = 6
    from bloomdb.filters import _leveldb_kernels as K

    K.add_hashes(filt, 6, h[:1])
    bits = np.flatnonzero(np.unpackbits(filt[:-1], bitorder="little"))
    assert set(bits) == {int(leveldb_fpr.probe_positions(h[:1], i, 8000)[0]) for i in range(6)}


@pytest.mark.parametrize("n", [10_000, 100_000])
@pytest.mark.parametrize("bits_per_key", [6, 10, 16, 20])
def test_expected_fpr_matches_measured_counts(n, bits_per_key):
    """Measured FP (exact counts over 2M absent keys, LevelDB's real hash) within 0.8–1.25x of
    the model at every point; the textbook misses by up to 1.7x at 100K keys."""
    f = LevelDBBloom.build(_keys(n, 0), bits_per_key=bits_per_key)
    absent = _keys(2_000_000, 1 << 40)
    hits = int(f.might_contain_many(absent).sum())
    expected = f.bench_expected_fpr() * absent.shape[0]
    sigma = expected**0.5
    assert 0.8 * expected - 4 * sigma <= hits <= 1.25 * expected + 4 * sigma, (hits, expected)


def test_textbook_is_too_low_where_the_model_is_not():
    """Where the model matters: at 100K keys and 10 bits/key the textbook (with 32-bit
    collisions) says ~0.85%; LevelDB's scheme gives ~1.4%, and so does the model."""
    f = LevelDBBloom.build(_keys(100_000, 0), bits_per_key=10)
    measured = f.might_contain_many(_keys(2_000_000, 1 << 40)).mean()
    textbook = fm.independent_fpr(fm.standard_fpr(10, 6), fm.fingerprint_fpr(100_000, 32))
    assert measured > 1.4 * textbook
    assert f.bench_expected_fpr() == pytest.approx(measured, rel=0.15)
