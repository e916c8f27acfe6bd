"""The probe directory's layout: the one numbered struct shared by :mod:`.directory` (Python,
which writes it) and :mod:`._probe_kernels` (numba, which reads it). Every word is named here;
neither side uses a raw offset.

One int64 array per store version::

    [HEADER]             n0 = number of L0 slots (slots 0 .. n0-1, newest table first)
    [NUM_LEVELS]         number of further levels described below (L1, L2, ...)
    [LEVEL_FIRST + 2j]   first slot of level j+1
    [LEVEL_COUNT + 2j]   number of slots of level j+1 (tables sorted by key, non-overlapping)
    [ARRAY_BASE]         byte index where the filters' arrays start (8-byte aligned)
    [BYTE_BASE]          byte index where the key bounds start (same array, viewed as uint8)
    [C_CHECKS]           counter: filter probes done
    [C_USEFUL]           counter: probes that said "definitely not" (the read was saved)
    [C_POSITIVE]         counter: probes that said "may contain"
    [C_BLOCKS]           counter: data blocks the lookup kernel searched (:mod:`._get_kernels`)
    [C_LOOKUPS]          counter: keys the lookup kernel looked up in the tables
    [C_FOUND]            counter: lookups the kernel answered from a table (value or deletion)
    [C_SF_CHECKS]        counter: lookups checked against the store filter
    [C_SF_NEG]           counter: lookups the store filter answered "definitely not"
    [SEEK_DUE]           slot + 1 of the table whose seek budget a lookup just used up (0: none)
    [WORDS]              the array's length in words (a kernel given the array's address views
                         it with this length: :func:`._get_kernels.lookup_newest`)
    [SF + R_*]           the store filter's record (a filter record, below; family word 0: no
                         store filter covers this version's tables -- the kernel skips it).
                         Written once per directory, family word last (:mod:`bloomdb.lsm.store_filter`)
    [SLOTS + STRIDE*s..] slot s, fields S_*: kind, then for the min key and the max key each:
                         its two big-endian prefix words (read as uint64), its byte offset into
                         the array and its length, the table's read state (S_T*: addresses
                         and lengths of its mapped file, its index array and its checked-block
                         flags; address 0: Python reads it), the address of its seek budget,
                         the address of its filter-load words (T_*), then its filter record (R_*)
    partition entry      (``PSTRIDE`` words, fields P_*, for kind PARTITIONED) last key's two
                         prefix words, its offset and length, state, filter record
    filter record        (``RSTRIDE`` words, fields R_*) family code F_* (plus F_MAPPED), the
                         address and element count of the family's array (the filter's own,
                         in place: not copied), and the descriptor's scalars

then the key bounds' bytes (``ARRAY_BASE == BYTE_BASE``: no filter array is copied in).
Offsets stored in the array are absolute. Slot kinds: NONE (no usable filter: none, or damaged --
fail open, not counted), FILTER (the record names the family kernel), OTHER (a family with no
probe descriptor the kernel knows: Python asks the filter), LAZY (the filter is not read yet:
the kernel reads it on this first lookup through the slot's filter-load words, or hands the slot
to Python when it cannot), PARTITIONED (per-partition states P_LAZY, P_LOADED,
P_OTHER, P_DAMAGED; the kernel finds the partition by its last key). The probe returns
``-slot - 2`` for "Python decides". A slot is a
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
ARRAY_BASE = 18
BYTE_BASE = 19
C_CHECKS = 20
C_USEFUL = 21
C_POSITIVE = 22
C_BLOCKS = 23
C_LOOKUPS = 24
C_FOUND = 25
C_SF_CHECKS = 26  # counter: lookups checked against the store filter (:mod:`bloomdb.lsm.store_filter`)
C_SF_NEG = 27  # counter: of those, the ones it answered "definitely not" (MISSING, no table filter checked)
COUNTERS = slice(C_CHECKS, C_SF_NEG + 1)  #: every counter word, in this order
N_COUNTERS = C_SF_NEG + 1 - C_CHECKS
SEEK_DUE = 28  # slot + 1 of a table whose seek budget a lookup used up (0: none; Python clears it)
WORDS = 29  # the array's own length in words
SF = 30  # the store filter's record (RSTRIDE words, R_*): R_FAM 0 = none covers this version
SLOTS = 38  # header size: slot 0 starts here (SF + RSTRIDE)
MAX_LISTED_LEVELS = (ARRAY_BASE - LEVEL_FIRST) // 2  # levels below L0 the header has room for

# a filter record (RSTRIDE words, fields R_*), inside a slot (at S_REC) or a partition entry (at
# P_REC): the family's kernel code, its array (byte offset into the directory, element count)
# and up to five scalars (the probe descriptor's args after the array, as 64-bit words)
R_FAM = 0
R_OFF = 1
R_LEN = 2
R_P0 = 3
NUM_SCALARS = 5
RSTRIDE = R_P0 + NUM_SCALARS
assert SLOTS == SF + RSTRIDE

# slot fields (STRIDE words per slot)
S_KIND = 0
S_MIN_W = 1  # two prefix words
S_MIN_OFF = 3
S_MIN_LEN = 4
S_MAX_W = 5  # two prefix words
S_MAX_OFF = 7
S_MAX_LEN = 8
# the table's read state (written once when the directory is built): the lookup kernel reads
# the table through these addresses; the Directory keeps the arrays they point into alive (their
# owner, the mapped file, cannot be closed while they are referenced)
S_TBUF = 9  # address of the table file's bytes (0: no fast read, Python reads)
S_TLEN = 10  # its length
S_TIDX = 11  # address of the table's index array (int64, :func:`sstable._table_kernels.parse_index`)
S_TIDXLEN = 12  # its length in words
S_TCHK = 13  # address of its read state (uint8: a checked flag per block, then the blocks' hints)
S_SEEKS = 14  # address of the table's seek budget (int64[1], :mod:`.seeks`; 0: not charged)
S_TFW = 15  # address of the table's filter-load words (T_*, below; 0: Python reads the filter)
S_REC = 16  # the filter record; PARTITIONED: R_OFF = partition table index, R_LEN = partitions
STRIDE = S_REC + RSTRIDE

# a table's filter-load words (``TSTRIDE`` int64 words, kept on the table for its whole life,
# ``Table.probe_filter_words``): where its filter block lies in its mapped file, and the filter
# record the probe kernel makes when it reads the filter itself on the table's first lookup
# (:func:`._probe_kernels._load_lazy`; R_FAM, word 0, written last: nonzero once read), then
# copies into every directory slot of the table -- so each table's filter block is read once,
# whichever version's directory meets it first
T_FOFF = RSTRIDE  # the filter block's offset in the file (or in the buffer at T_FBUF)
T_FSIZE = RSTRIDE + 1  # its size (its trailer, type byte and CRC32C, follows)
T_FBUF = RSTRIDE + 2  # address of the buffer holding the block (0: the table's file, S_TBUF): a
T_FBUFLEN = RSTRIDE + 3  # copy in the store's filter file (:mod:`bloomdb.lsm.filter_file`); its length
T_BYTES = RSTRIDE + 4  # the filter's payload bytes (set with the record): memory it holds (the last word)
TSTRIDE = RSTRIDE + 5

# partition entry fields (PSTRIDE words per partition)
P_LAST_W = 0  # two prefix words; the bound search reads offset and length right after them
P_LAST_OFF = 2
P_LAST_LEN = 3
P_STATE = 4
P_REC = 5  # the partition's filter record; not loaded: R_OFF = byte offset reserved, R_LEN = bytes
PSTRIDE = P_REC + RSTRIDE

# slot kinds
NONE, FILTER, OTHER, LAZY, PARTITIONED = 0, 1, 2, 3, 4
# partition states
P_LAZY, P_LOADED, P_OTHER, P_DAMAGED = 0, 1, 2, 3

# family codes (R_FAM): which family's ``check_hash`` the probe kernel calls, and on which hash
# (``directory.FAMILY_CODES`` maps a probe descriptor's (tag, version) to these)
F_BLOCKED, F_REGISTER, F_SBBF, F_PAIRED, F_RIBBON, F_FUSE8, F_FUSE16 = 1, 2, 3, 4, 5, 6, 7
F_STANDARD, F_LEVELDB, F_COUNTING, F_CUCKOO = 8, 9, 10, 11
#: added to a family code: the record's ``R_OFF`` is the absolute address of the family's array
#: (not a byte offset into the directory): the array stays where its owner keeps it -- a table's
#: filter read in place from its mapped file, never copied (the probe directory's records); the
#: directory keeps the owner referenced while it can be probed
F_MAPPED = 64
