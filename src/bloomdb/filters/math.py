"""False-positive-rate and sizing formulas shared by filters, benchmarks and the calculator.

Pure Python floats; nothing here allocates. Sources are cited in ``shared/docs/filter-facts.md``
(RocksDB ``BloomMath``, LevelDB ``bloom.cc``, the Parquet spec, Fan et al. 2014).
"""

from __future__ import annotations

import math

LN2 = math.log(2.0)


def standard_fpr(bits_per_key: float, k: int) -> float:
    """Textbook Bloom FP rate ``(1 - e^(-k/b))^k`` for ``b`` bits per key and ``k`` probes."""
    if bits_per_key <= 0:
        return 1.0
    return (1.0 - math.exp(-k / bits_per_key)) ** k


def optimal_k(bits_per_key: float) -> int:
    """``round(ln 2 * b)`` clamped to 1..30 (the standard family's choice)."""
    return max(1, min(30, int(round(LN2 * bits_per_key))))


def bits_per_key_for_fpr(fpr: float) -> float:
    """Bits per key of an optimally configured standard Bloom filter: ``-ln p / (ln 2)^2``."""
    return -math.log(fpr) / (LN2 * LN2)


def standard_bits_per_key_for_fpr(fpr: float, max_k: int = 30) -> float:
    """Bits per key at which a standard Bloom filter reaches exactly ``fpr`` with its whole k.

    Closed form: ``k = min(max_k, optimal_k(-ln p / (ln 2)^2))``, then the ``b`` solving
    ``(1 - e^(-k / b))^k = p``, i.e. ``-k / ln(1 - p^(1/k))`` (the textbook optimum rounds k, so
    it misses ``p`` by up to ~15%; past ``max_k`` probes only more bits reach ``p``).
    """
    k = min(max_k, optimal_k(bits_per_key_for_fpr(fpr)))
    return -k / math.log1p(-(fpr ** (1.0 / k)))


def smallest_step_meeting(fpr_at, target: float, lo: int, hi: int, step: int) -> int | None:
    """Smallest ``x`` in ``lo, lo + step, ..., hi`` with ``fpr_at(x) <= target`` (``fpr_at``
    non-increasing), or None when even ``hi`` misses it. Bisection: O(log((hi - lo) / step)) calls."""
    if fpr_at(hi) > target:
        return None
    a, b = 0, (hi - lo) // step  # fpr_at(lo + b * step) <= target
    while a < b:
        mid = (a + b) // 2
        if fpr_at(lo + mid * step) <= target:
            b = mid
        else:
            a = mid + 1
    return lo + a * step


def cache_local_fpr(bits_per_key: float, k: int, line_bits: int = 512) -> float:
    """RocksDB ``BloomMath::CacheLocalFpRate``: keys per line vary by ~sqrt(lambda) around lambda.

    The FP rate is the mean of the standard rate at ``lambda + sigma`` and ``lambda - sigma``
    keys per line (a two-point approximation of the Poisson spread of keys over lines).
    """
    if bits_per_key <= 0:
        return 1.0
    keys_per_line = line_bits / bits_per_key
    sigma = math.sqrt(keys_per_line)
    crowded = standard_fpr(line_bits / (keys_per_line + sigma), k)
    uncrowded = standard_fpr(line_bits / (keys_per_line - sigma), k) if keys_per_line > sigma else 0.0
    return (crowded + uncrowded) / 2.0


def fingerprint_fpr(num_keys: float, fingerprint_bits: int) -> float:
    """Chance that an absent key collides with some present key's ``fingerprint_bits``-bit hash."""
    x = num_keys / float(2**fingerprint_bits)
    if x <= 1e-4:
        return x - x * x / 2.0
    return 1.0 - math.exp(-x)


def independent_fpr(p1: float, p2: float) -> float:
    """Combine two independent FP sources: ``p1 + p2 - p1*p2``."""
    return p1 + p2 - p1 * p2


def poisson_pmf_iter(lam: float, cutoff: float = 1e-15):
    """Yield ``(j, P[Poisson(lam) = j])`` over every ``j`` whose probability is not negligible.

    Computed in log space from ``lgamma`` so a large ``lam`` (thousands of keys per line) does not
    underflow ``e^-lam``; ``j`` runs over ``lam ± 12·sqrt(lam)`` plus a margin, which holds all but
    ~1e-30 of the mass.
    """
    if lam <= 0:
        yield 0, 1.0
        return
    spread = 12.0 * math.sqrt(lam) + 40.0
    lo = max(0, int(lam - spread))
    hi = int(lam + spread) + 1
    log_lam = math.log(lam)
    for j in range(lo, hi + 1):
        p = math.exp(-lam + j * log_lam - math.lgamma(j + 1))
        if p >= cutoff * 1e-3 or j == lo:
            yield j, p


def word_blocked_fpr(keys_per_word: float, k: int, word_bits: int = 32) -> float:
    """FP of ``k`` bits set per key inside one ``word_bits``-bit word (register-blocked filter).

    ``sum_j Pois(j; lambda) * (1 - (1 - 1/w)^(k j))^k``.
    """
    q = 1.0 - 1.0 / word_bits
    return sum(p * (1.0 - q ** (k * j)) ** k for j, p in poisson_pmf_iter(keys_per_word))


def split_block_fpr(bits_per_key: float, block_bits: int = 256, words: int = 8) -> float:
    """Parquet split-block filter: one bit per 32-bit word, ``words`` words per block."""
    lam = block_bits / bits_per_key
    q = 1.0 - 1.0 / (block_bits // words)
    return sum(p * (1.0 - q**j) ** words for j, p in poisson_pmf_iter(lam))


def cuckoo_fpr(fingerprint_bits: int, bucket_size: int = 4, load: float = 1.0) -> float:
    """Cuckoo filter upper bound ``1 - (1 - 2^-f)^(2 b load)``."""
    return 1.0 - (1.0 - 2.0 ** (-fingerprint_bits)) ** (2 * bucket_size * load)


# ---- RocksDB FastLocalBloom parameters ---------------------------------------------------

def rocksdb_millibits_per_key(bits_per_key: float) -> int:
    """RocksDB ``BloomLikeFilterPolicy`` rounding of bits/key to millibits (NaN/>=100 -> 100000)."""
    if math.isnan(bits_per_key) or bits_per_key >= 100.0:
        return 100_000
    if bits_per_key < 0.5:
        return 0
    if bits_per_key < 1.0:
        return 1000
    return int(bits_per_key * 1000.0 + 0.500001)


_ROCKSDB_PROBE_TABLE = (
    (2080, 1), (3580, 2), (5100, 3), (6640, 4), (8300, 5), (10070, 6),
    (11720, 7), (14001, 8), (16050, 9), (18300, 10), (22001, 11), (25501, 12),
)


def rocksdb_num_probes(millibits_per_key: int) -> int:
    """RocksDB ``FastLocalBloomImpl::ChooseNumProbes`` (cache-local k is about bits/key / 2)."""
    for limit, k in _ROCKSDB_PROBE_TABLE:
        if millibits_per_key <= limit:
            return k
    if millibits_per_key <= 50000:
        return (millibits_per_key - 1) // 2000 - 1
    return 24


def blocked_expected_fpr(bits_per_key: float, k: int, num_keys: float = 0.0) -> float:
    """Expected FP of the 512-bit cache-line filter with a 64-bit hash (RocksDB's estimate)."""
    return independent_fpr(cache_local_fpr(bits_per_key, k, 512), fingerprint_fpr(num_keys, 64))


def keys_before_fpr(fpr_of_n, target: float, hi: int) -> int:
    """Largest ``n`` in ``[0, hi * 64]`` with ``fpr_of_n(n) <= target`` (monotone bisection)."""
    top = max(1, hi) * 64
    return top if fpr_of_n(top) <= target else largest_within(fpr_of_n, target, 0, top)


def largest_within(fpr_of_n, target: float, lo: int, hi: int) -> int:
    """Largest ``n`` in ``[lo, hi)`` with ``fpr_of_n(n) <= target``, given ``fpr_of_n(lo) <= target
    < fpr_of_n(hi)`` and ``fpr_of_n`` non-decreasing (bisection: O(log(hi - lo)) calls)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fpr_of_n(mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def line_blocked_fpr(bits_per_key: float, k: int, line_bits: int = 512) -> float:
    """FP of a filter whose keys each set k bits in one ``line_bits``-bit line (Poisson keys/line).

    ``sum_j Pois(j; L/b) * (1 - (1 - 1/L)^(k j))^k`` — tighter than RocksDB's two-point
    ``cache_local_fpr`` (within ~2% of measurement up to 16 bits/key, against 5% for the latter).
    """
    if bits_per_key <= 0:
        return 1.0
    q = 1.0 - 1.0 / line_bits
    return sum(p * (1.0 - q ** (k * j)) ** k for j, p in poisson_pmf_iter(line_bits / bits_per_key))



def word_blocked_fpr_exact(keys_per_word: float, k: int, word_bits: int = 32) -> float:
    """Exact FP of the register-blocked filter (k independent uniform bits per key in one word).

    ``sum_j Pois(j; lambda) E[(X_{kj} / w)^k]``, X_{kj} the set bits after ``k j`` uniform draws.
    :func:`word_blocked_fpr` multiplies the per-bit marginals instead, which by Jensen slightly
    underestimates (5.69% vs 5.76% at lambda = 4, k = 2; 4.07% vs 4.28% at k = 4).
    Cost: O(k j_max w) float operations (j_max ~ lambda + 8 sqrt(lambda)); ~1 ms at lambda = 4.
    """
    w = word_bits
    dist = [1.0] + [0.0] * w  # distribution of the number of set bits after `draws` draws
    draws = 0
    total = 0.0
    for j, p in poisson_pmf_iter(keys_per_word):
        while draws < k * j:
            nxt = [0.0] * (w + 1)
            for x, q in enumerate(dist):
                if q:
                    nxt[x] += q * x / w
                    if x < w:
                        nxt[x + 1] += q * (w - x) / w
            dist = nxt
            draws += 1
        total += p * sum(q * (x / w) ** k for x, q in enumerate(dist))
    return total
# ---- counting Bloom (4-bit counters, 128 counters per 64-byte line) ---------------------

def counting_fpr(bits_per_key: float, k: int) -> float:
    """FP of the ``counting`` filter at ``bits_per_key`` bits of counter memory per key.

    A 4-bit counter answers like one bit, so this is the line-blocked FP at ``bits_per_key / 4``
    counters per key with lines of 128 counters (the counting filter is a ``blocked`` filter at
    "bits of counters / 4", with 128- instead of 512-position lines).
    """
    if bits_per_key <= 128 * 4 / 700.0:
        # > 700 keys per line: exp(-lambda) underflows in poisson_pmf_iter; every counter is set
        return 1.0
    return line_blocked_fpr(bits_per_key / 4.0, k, line_bits=128)


def counting_num_probes(bits_per_key: float) -> int:
    """The k in 1..24 minimising :func:`counting_fpr` (about 0.6 x counters per key at 10)."""
    return min(range(1, 25), key=lambda k: counting_fpr(bits_per_key, k))
