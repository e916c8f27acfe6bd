"""Numba kernels for XXH3-64 (seed 0, default secret) and XXH64 (any seed).

Written from the xxHash 0.8 specification (Cyan4973/xxHash, ``xxhash.h``); every result is
bit-identical to the ``xxhash`` Python package (``xxh3_64_intdigest`` / ``xxh64_intdigest``).

Rules kept throughout, because numba's integer typing is unforgiving:

* every value that takes part in hash arithmetic is ``uint64``; every literal and every shift
  amount is wrapped in ``np.uint64`` (``uint64 op int64`` would silently become ``float64``);
* there are no module-level constants: primes are written as literals where they are used, and
  the 192-byte default secret is returned by :func:`_secret` as a tuple of 24 little-endian
  words (LLVM folds the reads at constant offsets);
* byte reads index the array with ``uint64`` positions (no negative-index wraparound code) and
  assemble little-endian words byte by byte, which LLVM merges into single loads; a read never
  touches a byte outside ``data[start:start + length]``;
* the 64x64->128-bit multiply is done with 32-bit halves.

Public kernels (all ``@njit(cache=True, nogil=True)``; callable from other njit code):

``xxh3_64_bytes(data, start, length)``, ``xxh3_64_u64(x)``, ``xxh64_bytes(data, start, length,
seed)``, ``xxh64_u64(x, seed)`` and the batch kernels ``xxh3_64_batch_ints(ints, out)``,
``xxh3_64_batch_bytes(data, offsets, out)``, ``xxh64_batch_ints(ints, seed, out)``,
``xxh64_batch_bytes(data, offsets, seed, out)``.

Performance note for callers writing their own njit loops: ``xxh3_64_u64``/``xxh64_u64`` take no
array and inline completely (the int batch loop vectorises). Any *non-inlined* call that takes
an array argument makes numba emit an atomic NRT incref/decref pair of that array per call
(about 4 ns). ``xxh3_64_bytes`` is too large to inline, so a per-key loop over byte keys should
do the length dispatch itself, as :func:`xxh3_64_batch_bytes` does, with the four public pieces
``xxh3_64_bytes_0to16`` / ``xxh3_64_bytes_17to128`` (both inline) / ``xxh3_64_bytes_129to240``
/ ``xxh3_64_bytes_241plus``. (Keep the long path a separate call: merged into a bigger function,
LLVM stops inlining its stripe helper and it runs ~3x slower.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _secret():
    """XXH3's 192-byte default secret (``kSecret``) as 24 little-endian uint64 words."""
    return (
        np.uint64(0xBE4BA423396CFEB8), np.uint64(0x1CAD21F72C81017C), np.uint64(0xDB979083E96DD4DE),
        np.uint64(0x1F67B3B7A4A44072), np.uint64(0x78E5C0CC4EE679CB), np.uint64(0x2172FFCC7DD05A82),
        np.uint64(0x8E2443F7744608B8), np.uint64(0x4C263A81E69035E0), np.uint64(0xCB00C391BB52283C),
        np.uint64(0xA32E531B8B65D088), np.uint64(0x4EF90DA297486471), np.uint64(0xD8ACDEA946EF1938),
        np.uint64(0x3F349CE33F76FAA8), np.uint64(0x1D4F0BC7C7BBDCF9), np.uint64(0x3159B4CD4BE0518A),
        np.uint64(0x647378D9C97E9FC8), np.uint64(0xC3EBD33483ACC5EA), np.uint64(0xEB6313FAFFA081C5),
        np.uint64(0x49DAF0B751DD0D17), np.uint64(0x9E68D429265516D3), np.uint64(0xFCA1477D58BE162B),
        np.uint64(0xCE31D07AD1B8F88F), np.uint64(0x280416958F3ACB45), np.uint64(0x7E404BBBCAFBD7AF),
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _sec(off):
    """The little-endian uint64 at byte offset ``off`` (0 <= off <= 184) of the default secret."""
    w = _secret()
    i = off >> 3
    sh = np.uint64((off & 7) * 8)
    if sh == np.uint64(0):
        return w[i]
    return (w[i] >> sh) | (w[i + 1] << (np.uint64(64) - sh))


@njit(cache=True, nogil=True)
def _r64(data, p):
    """Little-endian uint64 at ``data[p:p + 8]``."""
    i = np.uint64(p)
    return (
        np.uint64(data[i])
        | (np.uint64(data[i + np.uint64(1)]) << np.uint64(8))
        | (np.uint64(data[i + np.uint64(2)]) << np.uint64(16))
        | (np.uint64(data[i + np.uint64(3)]) << np.uint64(24))
        | (np.uint64(data[i + np.uint64(4)]) << np.uint64(32))
        | (np.uint64(data[i + np.uint64(5)]) << np.uint64(40))
        | (np.uint64(data[i + np.uint64(6)]) << np.uint64(48))
        | (np.uint64(data[i + np.uint64(7)]) << np.uint64(56))
    )


@njit(cache=True, nogil=True)
def _r32(data, p):
    """Little-endian uint32 at ``data[p:p + 4]``, widened to uint64."""
    i = np.uint64(p)
    return (
        np.uint64(data[i])
        | (np.uint64(data[i + np.uint64(1)]) << np.uint64(8))
        | (np.uint64(data[i + np.uint64(2)]) << np.uint64(16))
        | (np.uint64(data[i + np.uint64(3)]) << np.uint64(24))
    )


@njit(cache=True, nogil=True)
def _rotl(x, r):
    """Rotate the uint64 ``x`` left by the constant ``r`` (1..63)."""
    k = np.uint64(r)
    return (x << k) | (x >> (np.uint64(64) - k))


@njit(cache=True, nogil=True)
def _bswap64(x):
    m8 = np.uint64(0x00FF00FF00FF00FF)
    m16 = np.uint64(0x0000FFFF0000FFFF)
    x = ((x & m8) << np.uint64(8)) | ((x >> np.uint64(8)) & m8)
    x = ((x & m16) << np.uint64(16)) | ((x >> np.uint64(16)) & m16)
    return (x << np.uint64(32)) | (x >> np.uint64(32))


@njit(cache=True, nogil=True)
def _mul128_fold64(a, b):
    """Low 64 bits XOR high 64 bits of the 128-bit product ``a * b`` (32-bit halves)."""
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a_lo = a & m32
    a_hi = a >> s32
    b_lo = b & m32
    b_hi = b >> s32
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    hi_hi = a_hi * b_hi
    cross = (lo_lo >> s32) + (hi_lo & m32) + lo_hi
    upper = (hi_lo >> s32) + (cross >> s32) + hi_hi
    lower = (cross << s32) | (lo_lo & m32)
    return lower ^ upper


@njit(cache=True, nogil=True)
def _xxh64_avalanche(h):
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC2B2AE3D27D4EB4F)  # PRIME64_2
    h ^= h >> np.uint64(29)
    h *= np.uint64(0x165667B19E3779F9)  # PRIME64_3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True, nogil=True)
def _xxh3_avalanche(h):
    h ^= h >> np.uint64(37)
    h *= np.uint64(0x165667919E3779F9)  # PRIME_MX1
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True, nogil=True)
def _rrmxmx(h, length):
    h ^= _rotl(h, 49) ^ _rotl(h, 24)
    h *= np.uint64(0x9FB21C651E98DF25)  # PRIME_MX2
    h ^= (h >> np.uint64(35)) + length
    h *= np.uint64(0x9FB21C651E98DF25)
    h ^= h >> np.uint64(28)
    return h


@njit(cache=True, nogil=True)
def _mix16(data, p, s_lo, s_hi):
    return _mul128_fold64(_r64(data, p) ^ s_lo, _r64(data, p + 8) ^ s_hi)


# --------------------------------------------------------------------------------------------
# XXH3-64, seed 0
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def xxh3_64_u64(x):
    """XXH3-64 (seed 0) of the 8-byte little-endian encoding of the uint64 ``x``.

    The 4..8-byte path with ``len == 8``: the two 32-bit halves swap places, are keyed with
    ``secret[8:16] ^ secret[16:24]`` and finished by rrmxmx. Branch-free.
    """
    keyed = _rotl(np.uint64(x), 32) ^ np.uint64(0xC73AB174C5ECD5A2)
    return _rrmxmx(keyed, np.uint64(8))


@njit(cache=True, nogil=True)
def xxh3_64_bytes_0to16(data, start, length):
    """XXH3-64 of ``data[start:start + length]`` for ``0 <= length <= 16`` (small, inlines)."""
    n = np.uint64(length)
    if length > 8:
        lo = _r64(data, start) ^ np.uint64(0x6782737BEA4239B9)  # secret[24:32] ^ secret[32:40]
        hi = _r64(data, start + length - 8) ^ np.uint64(0xAF56BC3B0996523A)  # [40:48] ^ [48:56]
        acc = n + _bswap64(lo) + hi + _mul128_fold64(lo, hi)
        return _xxh3_avalanche(acc)
    if length >= 4:
        in1 = _r32(data, start)
        in2 = _r32(data, start + length - 4)
        keyed = (in2 + (in1 << np.uint64(32))) ^ np.uint64(0xC73AB174C5ECD5A2)  # [8:16]^[16:24]
        return _rrmxmx(keyed, n)
    if length > 0:
        c1 = np.uint64(data[np.uint64(start)])
        c2 = np.uint64(data[np.uint64(start + (length >> 1))])
        c3 = np.uint64(data[np.uint64(start + length - 1)])
        combined = (c1 << np.uint64(16)) | (c2 << np.uint64(24)) | c3 | (n << np.uint64(8))
        return _xxh64_avalanche(combined ^ np.uint64(0x87275A9B))  # secret[0:4] ^ secret[4:8]
    return _xxh64_avalanche(np.uint64(0x8726F9105DC21DDC))  # secret[56:64] ^ secret[64:72]


@njit(cache=True, nogil=True)
def xxh3_64_bytes_17to128(data, start, length):
    """XXH3-64 of ``data[start:start + length]`` for ``17 <= length <= 128`` (inlines)."""
    w = _secret()
    end = start + length
    acc = np.uint64(length) * np.uint64(0x9E3779B185EBCA87)  # PRIME64_1
    if length > 32:
        if length > 64:
            if length > 96:
                acc += _mix16(data, start + 48, w[12], w[13])
                acc += _mix16(data, end - 64, w[14], w[15])
            acc += _mix16(data, start + 32, w[8], w[9])
            acc += _mix16(data, end - 48, w[10], w[11])
        acc += _mix16(data, start + 16, w[4], w[5])
        acc += _mix16(data, end - 32, w[6], w[7])
    acc += _mix16(data, start, w[0], w[1])
    acc += _mix16(data, end - 16, w[2], w[3])
    return _xxh3_avalanche(acc)


@njit(cache=True, nogil=True)
def xxh3_64_bytes_129to240(data, start, length):
    """XXH3-64 of ``data[start:start + length]`` for ``129 <= length <= 240``."""
    w = _secret()
    acc = np.uint64(length) * np.uint64(0x9E3779B185EBCA87)  # PRIME64_1
    for i in range(8):
        acc += _mix16(data, start + 16 * i, w[2 * i], w[2 * i + 1])
    acc = _xxh3_avalanche(acc)
    # rounds 8.. read the secret from offset 3 (XXH3_MIDSIZE_STARTOFFSET)
    for i in range(8, length >> 4):
        off = 16 * (i - 8) + 3
        acc += _mix16(data, start + 16 * i, _sec(off), _sec(off + 8))
    # last 16 bytes: secret offset 136 - 17 (SECRET_SIZE_MIN - MIDSIZE_LASTOFFSET)
    acc += _mix16(data, start + length - 16, _sec(119), _sec(127))
    return _xxh3_avalanche(acc)


@njit(cache=True, nogil=True)
def _lane(acc_self, acc_swap, data, p, key):
    """One lane of XXH3_accumulate_512: returns (new acc[i], new acc[i ^ 1])."""
    d = _r64(data, p)
    k = d ^ key
    return acc_self + (k & np.uint64(0xFFFFFFFF)) * (k >> np.uint64(32)), acc_swap + d


@njit(cache=True, nogil=True)
def _stripe(a0, a1, a2, a3, a4, a5, a6, a7, data, p, k0, k1, k2, k3, k4, k5, k6, k7):
    """XXH3_accumulate_512 over the 64-byte stripe at ``p`` with secret words ``k0..k7``."""
    a0, a1 = _lane(a0, a1, data, p, k0)
    a1, a0 = _lane(a1, a0, data, p + 8, k1)
    a2, a3 = _lane(a2, a3, data, p + 16, k2)
    a3, a2 = _lane(a3, a2, data, p + 24, k3)
    a4, a5 = _lane(a4, a5, data, p + 32, k4)
    a5, a4 = _lane(a5, a4, data, p + 40, k5)
    a6, a7 = _lane(a6, a7, data, p + 48, k6)
    a7, a6 = _lane(a7, a6, data, p + 56, k7)
    return a0, a1, a2, a3, a4, a5, a6, a7


@njit(cache=True, nogil=True)
def _scramble(a, key):
    a ^= a >> np.uint64(47)
    a ^= key
    return a * np.uint64(0x9E3779B1)  # PRIME32_1


@njit(cache=True, nogil=True)
def xxh3_64_bytes_241plus(data, start, length):
    """XXH3-64 for ``length > 240``: 1024-byte blocks of 16 stripes, scramble after each block,
    then the last stripe."""
    w = _secret()
    a0 = np.uint64(0xC2B2AE3D)  # PRIME32_3
    a1 = np.uint64(0x9E3779B185EBCA87)  # PRIME64_1
    a2 = np.uint64(0xC2B2AE3D27D4EB4F)  # PRIME64_2
    a3 = np.uint64(0x165667B19E3779F9)  # PRIME64_3
    a4 = np.uint64(0x85EBCA77C2B2AE63)  # PRIME64_4
    a5 = np.uint64(0x85EBCA77)  # PRIME32_2
    a6 = np.uint64(0x27D4EB2F165667C5)  # PRIME64_5
    a7 = np.uint64(0x9E3779B1)  # PRIME32_1
    # (secret size 192 - stripe 64) / consume rate 8 = 16 stripes per 1024-byte block
    nb_blocks = (length - 1) // 1024
    for b in range(nb_blocks + 1):
        base = start + b * 1024
        nb_stripes = 16 if b < nb_blocks else ((length - 1) - 1024 * nb_blocks) // 64
        # stripe s uses secret words s..s+7: slide a window of 8 words (one variable-index
        # tuple read per stripe keeps the generated code, and compile time, small)
        k0, k1, k2, k3, k4, k5, k6, k7 = w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]
        for s in range(nb_stripes):
            a0, a1, a2, a3, a4, a5, a6, a7 = _stripe(
                a0, a1, a2, a3, a4, a5, a6, a7, data, base + 64 * s, k0, k1, k2, k3, k4, k5, k6, k7
            )
            k0, k1, k2, k3, k4, k5, k6, k7 = k1, k2, k3, k4, k5, k6, k7, w[s + 8]
        if b < nb_blocks:
            # scramble with the last 64 bytes of the secret (offset 128 = words 16..23)
            a0 = _scramble(a0, w[16])
            a1 = _scramble(a1, w[17])
            a2 = _scramble(a2, w[18])
            a3 = _scramble(a3, w[19])
            a4 = _scramble(a4, w[20])
            a5 = _scramble(a5, w[21])
            a6 = _scramble(a6, w[22])
            a7 = _scramble(a7, w[23])
    # last stripe: the final 64 bytes, secret offset 192 - 64 - 7 = 121
    a0, a1, a2, a3, a4, a5, a6, a7 = _stripe(
        a0, a1, a2, a3, a4, a5, a6, a7, data, start + length - 64,
        _sec(121), _sec(129), _sec(137), _sec(145), _sec(153), _sec(161), _sec(169), _sec(177),
    )  # fmt: skip
    # merge the accumulators with the secret from offset 11
    r = np.uint64(length) * np.uint64(0x9E3779B185EBCA87)  # PRIME64_1
    r += _mul128_fold64(a0 ^ _sec(11), a1 ^ _sec(19))
    r += _mul128_fold64(a2 ^ _sec(27), a3 ^ _sec(35))
    r += _mul128_fold64(a4 ^ _sec(43), a5 ^ _sec(51))
    r += _mul128_fold64(a6 ^ _sec(59), a7 ^ _sec(67))
    return _xxh3_avalanche(r)


@njit(cache=True, nogil=True)
def xxh3_64_bytes(data, start, length):
    """XXH3-64 (seed 0) of ``data[start:start + length]`` (``data`` a uint8 array).

    ``start``/``length`` are integers with ``data[start:start + length]`` inside ``data`` (not
    checked: bounds are the caller's job). Returns a uint64.
    """
    if length <= 16:
        return xxh3_64_bytes_0to16(data, start, length)
    if length <= 128:
        return xxh3_64_bytes_17to128(data, start, length)
    if length <= 240:
        return xxh3_64_bytes_129to240(data, start, length)
    return xxh3_64_bytes_241plus(data, start, length)


@njit(cache=True, nogil=True)
def xxh3_64_batch_ints(ints, out):
    """``out[i] = xxh3_64_u64(ints[i])``."""
    for i in range(ints.shape[0]):
        out[i] = xxh3_64_u64(ints[i])


@njit(cache=True, nogil=True)
def xxh3_64_batch_bytes(data, offsets, out):
    """``out[i] = XXH3-64(data[offsets[i]:offsets[i + 1]])`` (Arrow layout, int32/int64 offsets)."""
    for i in range(offsets.shape[0] - 1):
        s = np.int64(offsets[i])
        n = np.int64(offsets[i + 1]) - s
        # the length dispatch of xxh3_64_bytes, done here so that the short paths inline into
        # this loop: a non-inlined call taking ``data`` costs an NRT incref/decref pair per key
        if n <= 16:
            out[i] = xxh3_64_bytes_0to16(data, s, n)
        elif n <= 128:
            out[i] = xxh3_64_bytes_17to128(data, s, n)
        elif n <= 240:
            out[i] = xxh3_64_bytes_129to240(data, s, n)
        else:
            out[i] = xxh3_64_bytes_241plus(data, s, n)


# --------------------------------------------------------------------------------------------
# XXH64, any seed
# --------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _xxh64_round(acc, lane):
    acc += lane * np.uint64(0xC2B2AE3D27D4EB4F)  # PRIME64_2
    acc = _rotl(acc, 31)
    return acc * np.uint64(0x9E3779B185EBCA87)  # PRIME64_1


@njit(cache=True, nogil=True)
def _xxh64_merge(h, v):
    h ^= _xxh64_round(np.uint64(0), v)
    return h * np.uint64(0x9E3779B185EBCA87) + np.uint64(0x85EBCA77C2B2AE63)  # P1, P4


@njit(cache=True, nogil=True)
def _xxh64_tail(h, data, p, end):
    """XXH64 finalisation: fold the remaining ``data[p:end]`` (< 32 bytes) into ``h``, avalanche."""
    p1 = np.uint64(0x9E3779B185EBCA87)
    p2 = np.uint64(0xC2B2AE3D27D4EB4F)
    p3 = np.uint64(0x165667B19E3779F9)
    p4 = np.uint64(0x85EBCA77C2B2AE63)
    p5 = np.uint64(0x27D4EB2F165667C5)
    while p + 8 <= end:
        h ^= _xxh64_round(np.uint64(0), _r64(data, p))
        h = _rotl(h, 27) * p1 + p4
        p += 8
    if p + 4 <= end:
        h ^= _r32(data, p) * p1
        h = _rotl(h, 23) * p2 + p3
        p += 4
    while p < end:
        h ^= np.uint64(data[np.uint64(p)]) * p5
        h = _rotl(h, 11) * p1
        p += 1
    return _xxh64_avalanche(h)


@njit(cache=True, nogil=True)
def _xxh64_small(data, start, length, seed):
    """XXH64 of a key shorter than 32 bytes (no stripe loop).

    Repeats :func:`_xxh64_tail` instead of calling it so that the whole function stays small
    and call-free, and inlines into the batch loop.
    """
    p1 = np.uint64(0x9E3779B185EBCA87)
    p2 = np.uint64(0xC2B2AE3D27D4EB4F)
    p3 = np.uint64(0x165667B19E3779F9)
    p4 = np.uint64(0x85EBCA77C2B2AE63)
    p5 = np.uint64(0x27D4EB2F165667C5)
    h = np.uint64(seed) + p5 + np.uint64(length)
    p = start
    end = start + length
    while p + 8 <= end:
        h ^= _xxh64_round(np.uint64(0), _r64(data, p))
        h = _rotl(h, 27) * p1 + p4
        p += 8
    if p + 4 <= end:
        h ^= _r32(data, p) * p1
        h = _rotl(h, 23) * p2 + p3
        p += 4
    while p < end:
        h ^= np.uint64(data[np.uint64(p)]) * p5
        h = _rotl(h, 11) * p1
        p += 1
    return _xxh64_avalanche(h)


@njit(cache=True, nogil=True)
def _xxh64_large(data, start, length, seed):
    """XXH64 of a key of 32 bytes or more: four lanes over 32-byte stripes, merge, tail."""
    p1 = np.uint64(0x9E3779B185EBCA87)
    p2 = np.uint64(0xC2B2AE3D27D4EB4F)
    sd = np.uint64(seed)
    p = start
    end = start + length
    v1 = sd + p1 + p2
    v2 = sd + p2
    v3 = sd
    v4 = sd - p1
    while p + 32 <= end:
        v1 = _xxh64_round(v1, _r64(data, p))
        v2 = _xxh64_round(v2, _r64(data, p + 8))
        v3 = _xxh64_round(v3, _r64(data, p + 16))
        v4 = _xxh64_round(v4, _r64(data, p + 24))
        p += 32
    h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    h = _xxh64_merge(h, v1)
    h = _xxh64_merge(h, v2)
    h = _xxh64_merge(h, v3)
    h = _xxh64_merge(h, v4)
    return _xxh64_tail(h + np.uint64(length), data, p, end)


@njit(cache=True, nogil=True)
def xxh64_bytes(data, start, length, seed):
    """XXH64 of ``data[start:start + length]`` with the uint64 ``seed``."""
    if length < 32:
        return _xxh64_small(data, start, length, seed)
    return _xxh64_large(data, start, length, seed)


@njit(cache=True, nogil=True)
def xxh64_u64(x, seed):
    """XXH64 of the 8-byte little-endian encoding of the uint64 ``x`` with the uint64 ``seed``."""
    h = np.uint64(seed) + np.uint64(0x27D4EB2F165667C5) + np.uint64(8)  # seed + PRIME64_5 + len
    h ^= _xxh64_round(np.uint64(0), np.uint64(x))
    h = _rotl(h, 27) * np.uint64(0x9E3779B185EBCA87) + np.uint64(0x85EBCA77C2B2AE63)
    return _xxh64_avalanche(h)


@njit(cache=True, nogil=True)
def xxh64_batch_ints(ints, seed, out):
    """``out[i] = xxh64_u64(ints[i], seed)``."""
    sd = np.uint64(seed)
    for i in range(ints.shape[0]):
        out[i] = xxh64_u64(ints[i], sd)


@njit(cache=True, nogil=True)
def xxh64_batch_bytes(data, offsets, seed, out):
    """``out[i] = XXH64(data[offsets[i]:offsets[i + 1]], seed)`` (int32/int64 offsets)."""
    sd = np.uint64(seed)
    for i in range(offsets.shape[0] - 1):
        s = np.int64(offsets[i])
        n = np.int64(offsets[i + 1]) - s
        if n < 32:  # dispatch here so the short path inlines (see xxh3_64_batch_bytes)
            out[i] = _xxh64_small(data, s, n, sd)
        else:
            out[i] = _xxh64_large(data, s, n, sd)
