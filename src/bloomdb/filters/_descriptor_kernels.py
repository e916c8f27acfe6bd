"""numba kernel reading a filter's probe descriptor straight from its envelope bytes
(:func:`read_descriptor`): what ``from_bytes(data, verify_payload=False, copy=False)
.probe_descriptor()`` gives, without a Python step -- for an engine that loads many filters
inside its own kernel (the LSM store's probe directory reads each table's filter on the table's
first lookup, in the lookup kernel: the Python way cost ~25 us a table, most of a reopened
store's first reads).

The envelope is checked as :func:`.format.decode` checks it (magic, envelope version, parameter
block inside the bytes, header CRC32C, zero padding, payload length; the payload's own CRC is the
caller's, as with ``verify_payload=False``), and the family's parameter block as the family's
``_from_parts`` checks it. Families read here (format version 1): ``blocked``, ``counting``,
``register``, ``standard``, ``sbbf`` (their parameter blocks: docs/formats.md). Anything else --
another family, another format version, anything ``from_bytes`` would refuse -- answers
"not read here" (``ok`` False): the engine then asks Python (``from_bytes``), which decides and
names the damage. A test pins every family's answer here to ``probe_descriptor()``'s.

Needs the SSE4.2 CRC32C kernel (:data:`bloomdb.checksum.HW_RANGES`): import this module only
where it runs. The CRC kernel lives in another file; edits to it reach this file's cache stamp
through :mod:`bloomdb._jit_cache`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._checksum_kernels import crc32c_extend
from .._intrinsics import le_uint as _le

FIXED_SIZE = 40  # format.FIXED_SIZE
ALIGN = 64  # format.ALIGN
ENVELOPE_VERSION = 1
MAGIC = 0x464D4C42  # b"BLMF" little-endian

# family tags (format.FAMILY_TAGS: tags are forever) and the parameter block sizes of format version 1
TAG_STANDARD, TAG_BLOCKED, TAG_SBBF, TAG_REGISTER, TAG_COUNTING = 1, 2, 4, 5, 8
CACHE_LINE_PARAMS = 21  # blocked, counting: u64 capacity, u64 num_lines, u8 k, u32 millibits
REGISTER_PARAMS = 24  # u64 capacity, u64 num_words, u8 k, 7 pad
STANDARD_PARAMS = 26  # u64 capacity, u64 num_bits, u8 k, f64 bits per key, 1 pad
SBBF_PARAMS = 16  # u64 capacity, u64 num_bytes
MAX_LINES = (1 << 32) - 1


@njit(cache=True, nogil=True)
def _family_args(tag, params, plen, paylen, buf):
    """``(ok, array elements, scalar 0, scalar 1)`` of the family ``tag`` (format version 1) whose
    parameter block is ``buf[params : params + plen]`` and payload ``paylen`` bytes: the
    probe descriptor's array length and scalars, checked as the family's ``_from_parts``."""
    if tag == TAG_BLOCKED or tag == TAG_COUNTING:
        if plen != CACHE_LINE_PARAMS:
            return False, 0, 0, 0
        lines = np.int64(_le(buf, params + 8, 8)) if _le(buf, params + 8, 8) <= np.uint64(MAX_LINES) else 0
        k = np.int64(buf[params + 16])
        kmax = 30 if tag == TAG_BLOCKED else 24
        if lines == 0 or paylen != lines * 64 or k < 1 or k > kmax:
            return False, 0, 0, 0
        return True, paylen // 4 if tag == TAG_BLOCKED else paylen, lines, k
    if tag == TAG_REGISTER:
        if plen != REGISTER_PARAMS:
            return False, 0, 0, 0
        w = _le(buf, params + 8, 8)
        k = np.int64(buf[params + 16])
        if w < np.uint64(1) or w > np.uint64(1 << 32) or paylen != 4 * np.int64(w) or k < 1 or k > 4:
            return False, 0, 0, 0
        return True, np.int64(w), np.int64(w), k
    if tag == TAG_STANDARD:
        if plen != STANDARD_PARAMS:
            return False, 0, 0, 0
        m = _le(buf, params + 8, 8)
        k = np.int64(buf[params + 16])
        if (m & np.uint64(63)) != 0 or m == 0 or m > np.uint64(1 << 62) or paylen != np.int64(m >> np.uint64(3)):
            return False, 0, 0, 0
        if k < 1 or k > 30 or _le(buf, params, 8) == 0:
            return False, 0, 0, 0
        return True, np.int64(m >> np.uint64(6)), np.int64(m), k
    if tag == TAG_SBBF:
        if plen != SBBF_PARAMS:
            return False, 0, 0, 0
        nb = _le(buf, params + 8, 8)
        if nb != np.uint64(paylen) or paylen % 32 != 0 or paylen == 0 or _le(buf, params, 8) == 0:
            return False, 0, 0, 0
        return True, paylen // 4, paylen // 32, 0
    return False, 0, 0, 0


@njit(cache=True, nogil=True)
def read_descriptor(buf, off, size):
    """The probe descriptor of the filter whose envelope is ``buf[off : off + size]`` (uint8; the
    caller checked the range lies inside ``buf``): ``(ok, family tag, format version, payload
    offset in buf, array elements, scalar 0, scalar 1)`` -- the descriptor's array is the payload
    read in place (``buf[payload offset:]`` viewed as the family's dtype, that many elements),
    its scalars those of ``probe_descriptor().args[1:]`` (``sbbf``: one). ``ok`` False: not
    read here (see the module). Cost: the header's CRC32C (~60 bytes); the payload is not read."""
    if size < FIXED_SIZE:
        return False, 0, 0, 0, 0, 0, 0
    if _le(buf, off, 4) != np.uint64(MAGIC) or buf[off + 4] != ENVELOPE_VERSION:
        return False, 0, 0, 0, 0, 0, 0
    tag = np.int64(_le(buf, off + 6, 2))
    ver = np.int64(_le(buf, off + 8, 2))
    plen = np.int64(_le(buf, off + 12, 4))
    paylen_u = _le(buf, off + 24, 8)
    if FIXED_SIZE + plen > size:
        return False, 0, 0, 0, 0, 0, 0
    c = crc32c_extend(0, buf, off, off + 36)
    if crc32c_extend(c, buf, off + FIXED_SIZE, off + FIXED_SIZE + plen) != _le(buf, off + 36, 4):
        return False, 0, 0, 0, 0, 0, 0
    start = (FIXED_SIZE + plen + ALIGN - 1) // ALIGN * ALIGN
    if start > size or paylen_u != np.uint64(size - start):
        return False, 0, 0, 0, 0, 0, 0
    for p in range(off + FIXED_SIZE + plen, off + start):
        if buf[p] != 0:
            return False, 0, 0, 0, 0, 0, 0
    if ver != 1:
        return False, 0, 0, 0, 0, 0, 0
    ok, n, s0, s1 = _family_args(tag, off + FIXED_SIZE, plen, size - start, buf)
    if not ok:
        return False, 0, 0, 0, 0, 0, 0
    return True, tag, ver, off + start, n, s0, s1
