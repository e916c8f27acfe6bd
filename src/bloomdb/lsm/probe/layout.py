"""The probe directory's layout: the one numbered struct shared by :mod:`.directory` (Python,
which writes it) and :mod:`._probe_kernels` (numba, which reads it). Every word is named here;
neither side uses a raw offset.

One int64 array per store version::

    [HEADER]             n0 = number of L0 slots (slots 0 .. n0-1, newest table first)
    [NUM_LEVELS]         number of further levels described below (L1, L2, ...)
    [LEVEL_FIRST + 2j]   first slot of level j+1
    [LEVEL_COUNT + 2j]   number of slots of level j+1 (tables sorted by key, non-overlapping)
    [W32_BASE]           32-bit index where the filter words start (same array, viewed as uint32)
    [BYTE_BASE]          byte index where the key bounds start (same array, viewed as uint8)
    [C_CHECKS]           counter: filter probes done
    [C_USEFUL]           counter: probes that said "definitely not" (the read was saved)
    [C_POSITIVE]         counter: probes that said "may contain"
    [SLOTS + STRIDE*s..] slot s, fields S_*: kind, word offset (or partition table index),
                         lines (or partition count, or words reserved), k, then for the min key
                         and the max key each: its two big-endian prefix words (read as uint64),
                         its byte offset into the array and its length
    partition entry      (``PSTRIDE`` words, fields P_*, for kind PARTITIONED) last key's two
                         prefix words, its offset and length, state, word offset, lines (or words
                         reserved), k

then the filters' 32-bit words, then the key bounds' bytes. Offsets stored in the array are
absolute. Slot kinds: NONE (no usable filter: none, or damaged -- fail open, not counted),
BLOCKED (a filter of kind ``directory.KERNEL_FAMILY``: its words at ``S_WOFF``), OTHER (another
family: Python asks it), LAZY (the filter is not read yet: Python reads it on this first lookup),
PARTITIONED (per-partition states P_LAZY, P_LOADED, P_OTHER, P_DAMAGED; the kernel finds the
partition by its last key). The probe returns ``-slot - 2`` for "Python decides". A slot is a
candidate only when ``min key <= key <= max key`` (full bytewise comparison), so a lookup probes
at most one table per level below L0.

Changing a number here changes no file format (the directory lives in memory only); the kernel
modules import this one, so their numba cache is invalidated with it (:mod:`bloomdb._jit_cache`).
"""

from __future__ import annotations

# header words
N_L0 = 0
NUM_LEVELS = 1
LEVEL_FIRST = 2  # + 2j
LEVEL_COUNT = 3  # + 2j
W32_BASE = 18
BYTE_BASE = 19
C_CHECKS = 20
C_USEFUL = 21
C_POSITIVE = 22
SLOTS = 24  # header size: slot 0 starts here
MAX_LISTED_LEVELS = (W32_BASE - LEVEL_FIRST) // 2  # levels below L0 the header has room for

# slot fields (STRIDE words per slot)
STRIDE = 12
S_KIND = 0
S_WOFF = 1  # word offset; PARTITIONED: partition table index; LAZY: word offset too
S_LINES = 2  # lines; PARTITIONED: partition count; LAZY: words reserved
S_K = 3
S_MIN_W = 4  # two prefix words
S_MIN_OFF = 6
S_MIN_LEN = 7
S_MAX_W = 8  # two prefix words
S_MAX_OFF = 10
S_MAX_LEN = 11

# partition entry fields (PSTRIDE words per partition)
PSTRIDE = 8
P_LAST_W = 0  # two prefix words; the bound search reads offset and length right after them
P_LAST_OFF = 2
P_LAST_LEN = 3
P_STATE = 4
P_WOFF = 5
P_LINES = 6  # lines; not loaded: words reserved
P_K = 7

# slot kinds
NONE, BLOCKED, OTHER, LAZY, PARTITIONED = 0, 1, 2, 3, 4
# partition states
P_LAZY, P_LOADED, P_OTHER, P_DAMAGED = 0, 1, 2, 3
