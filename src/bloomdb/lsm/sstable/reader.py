"""Open and read one table.

Opening reads the footer, meta and index blocks once (checked, kept in memory as Python lists
for ``bisect``); the file stays memory-mapped. The filter block is read on the first call of
:meth:`Table.filter` and kept; if it is damaged the table answers "may contain" for every key
(``filter_damaged`` is set; the store counts it). Data blocks are checked (CRC32C) the first
time they are read; compressed blocks are decompressed through the store's block cache.
Damaged data or index blocks raise :class:`~bloomdb.errors.CorruptionError` naming the file.
"""

from __future__ import annotations

import struct
import threading
from bisect import bisect_left

import numpy as np

from ... import filters
from ...checksum import HW_RANGES, crc32c, crc32c_ranges
from ...errors import CorruptionError
from . import _block_kernels as K
from . import _open_kernels as OK
from . import _table_kernels as TK
from .block import RAW, TRAILER, unframe
from .builder import PARTITION_MAGIC
from .footer import Handles, decode_footer, decode_meta

_U32 = struct.Struct("<I")

#: held while a table reads its filter block (once per table): one lock for every table, not a
#: lock object per table (a long-lived object the garbage collector tracks)
_FILTER_LOAD = threading.Lock()

MISSING = object()  #: the table holds no version of the key visible at the snapshot
DELETED = object()  #: the visible version is a deletion



def _copies(fb) -> bool:
    """Whether a filter read from block ``fb`` copies it: not when ``fb`` is a writable view of
    the table's private map (:meth:`RealFS.read_all`): the filter is then read in place, and
    loading it touches no new memory (the families' kernels take writable arrays only)."""
    return not (isinstance(fb, np.ndarray) and fb.flags.writeable)


def _parse_handles(b: bytes, p: int, n: int) -> tuple[list[bytes], list[int], list[int], int]:
    """``n`` entries of ``u64 offset, u32 size, u32 key length, key`` from ``p`` (the index block
    and the partition index share this layout); returns keys, offsets, sizes and the end position.
    Raises ``struct.error`` when the bytes run out."""
    keys, offs, sizes = [], [], []
    for _ in range(n):
        off, size, klen = struct.unpack_from("<QII", b, p)
        p += 16
        keys.append(b[p : p + klen])
        p += klen
        offs.append(off)
        sizes.append(size)
    return keys, offs, sizes, p

def parse_index_block(b, path: str, meta) -> np.ndarray:
    """The index block ``b`` as the kernel's index array (:func:`_table_kernels.parse_index`),
    checked against the meta block; raises CorruptionError. Cost: O(blocks) in numba, no Python
    object per block."""
    arr = np.frombuffer(b, np.uint8)
    if arr.shape[0] < 4:
        raise CorruptionError("malformed index block: too short", path)
    (n,) = struct.unpack_from("<I", b, 0)
    index, end = TK.parse_index(arr, 4, n)
    if end == -2:
        raise CorruptionError("index keys out of order", path)
    if end != len(arr):
        raise CorruptionError("malformed index block: index does not match the meta block", path)
    _check_index(index, path, meta)
    return index


def _check_index(index: np.ndarray, path: str, meta) -> None:
    """The index array agrees with the meta block: as many blocks, and the last block's last key
    is the table's largest key. Raises CorruptionError."""
    n = int(index[0])
    if n != meta.num_blocks or n == 0:
        raise CorruptionError("malformed index block: index does not match the meta block", path)
    e = index[1 : 1 + 6 * n].reshape(n, 6)
    if index.view(np.uint8)[e[-1, 2] : e[-1, 2] + e[-1, 3]].tobytes() != meta.max_key:
        raise CorruptionError("index keys out of order", path)


def _read_state(n: int) -> np.ndarray:
    """A table's read state for the lookup kernel (:func:`_table_kernels.read_state_size`
    zero bytes: ``n`` checked flags, then a hint per block), its hints on cache-line boundaries."""
    size = TK.read_state_size(n)
    raw = np.zeros(size + 63, np.uint8)
    a = -raw.ctypes.data % 64
    return raw[a : a + size]


class Table:
    """A read-only table. Thread-safe: its state only grows (checked blocks, loaded filter)."""

    #: the probe layer copies its filter block beside the other new tables' (set on a table this
    #: process wrote; see ``probe_filter_copy``)
    filter_copy_due = False

    def __init__(self, fs, path: str, number: int, cache=None):
        self.path = path
        self.number = number
        buf = fs.read_all(path)
        self._buf = buf
        # the map itself as the array's base (``np.frombuffer`` would put a memoryview and its
        # managed buffer between them: two more objects per table the garbage collector
        # tracks); the map lives as long as any array or view of it, and nothing closes it
        n = len(buf)
        self._arr = np.ndarray((n,), np.uint8, buffer=buf) if n else np.zeros(0, np.uint8)
        self.file_size = len(buf)
        self._meta = None  # decoded on first use (:attr:`meta`)
        self._facts = None  # (entries, deletions, has range tombstones) when the open kernel read them
        if not self._open_fast():
            self._open_checked()
        #: the lookup kernel's read state (:func:`_read_state`): the checked flags, then the blocks' hints
        self._state = _read_state(int(self._index[0]))
        self._checked = self._state[: int(self._index[0])]  # 1: block's CRC checked, raw
        self._cache = cache
        self._filter = None
        self._filter_loaded = False
        self.filter_damaged = False
        self.partitions = None
        self._prefix = None  # the prefix filter once read; False: the table holds no prefix; True: damaged
        # what the probe layer keeps on a table (:mod:`..probe.directory`, :mod:`..probe.seeks`),
        # named here so every table's attributes keep CPython's shared compact layout: set later,
        # in another order, they made CPython build a dict per table, tracked by the garbage
        # collector (long-lived tracked objects are what set off its full passes)
        self.seek_budget = self.probe_slot_words = self.probe_slot_index = None
        self.probe_record_words = self.probe_record_array = None
        #: the probe layer's filter-load words (int64, :data:`..probe.layout.TSTRIDE`): its lookup
        #: kernel reads this table's filter block from the map into them on the table's first
        #: lookup, without this object; word 0 is nonzero once it has, the last word is then the
        #: filter's payload bytes (what :attr:`filter_loaded` and :attr:`filter_memory` count)
        self.probe_filter_words = None
        #: a copy of the filter block (and its trailer) those words read instead of the map, made
        #: with the other tables of the table's first directory when ``filter_copy_due`` (set on a
        #: table this process wrote, :func:`..compaction.executor.encode_table`;
        #: :mod:`..probe.directory`); None: the map
        self.probe_filter_copy = None
        self.filter_copy_due = False

    def _open_fast(self) -> bool:
        """Footer, meta and index checked and the index parsed in one kernel call
        (:func:`._open_kernels.open_table`, on the mapped file: no block copied); False when the
        kernel does not accept the file (damage, or no SSE4.2 CRC kernel): :meth:`_open_checked`
        then decides and raises. The kernel reads the meta block's facts a store needs at once
        (entries, deletions, whether it holds range tombstones) and checks its block count and
        max key against the index; the rest is decoded on first use (:attr:`meta`: ~5 us of
        Python and a long-lived object the garbage collector tracks, per table)."""
        if not HW_RANGES:
            return False
        st, hs, index = OK.open_table(self._arr)
        if st != OK.ST_OK:
            return False
        fo, fs, mo, ms, io, isz, entries, deletions, rdel = hs.tolist()
        self._hs = (fo, fs, mo, ms, io, isz)
        self._facts = (entries, deletions, rdel)
        self._set_index(index)
        return True

    def _open_checked(self) -> None:
        """The open step by step in Python (every check named in its error)."""
        buf, path = self._buf, self.path
        h = decode_footer(buf, path)
        _, m = unframe(buf, h.meta_off, h.meta_size, path, "meta")
        self._meta = decode_meta(m if m is not None else bytes(buf[h.meta_off : h.meta_off + h.meta_size]), path)
        self._hs = (h.filter_off, h.filter_size, h.meta_off, h.meta_size, h.index_off, h.index_size)
        _, ib = unframe(buf, h.index_off, h.index_size, path, "index")
        ib = ib if ib is not None else bytes(buf[h.index_off : h.index_off + h.index_size])
        self._set_index(parse_index_block(ib, path, self.meta))

    @property
    def meta(self):
        """The meta block (:class:`.footer.Meta`), decoded on first use (checked at open: its
        CRC32C, and its block count and max key against the index)."""
        m = self._meta
        if m is None:
            mo, ms = self._hs[2], self._hs[3]
            m = self._meta = decode_meta(self._buf[mo : mo + ms], self.path)
        return m

    @meta.setter
    def meta(self, m) -> None:
        self._meta = m

    @property
    def min_key(self) -> bytes:
        return self.meta.min_key

    @property
    def max_key(self) -> bytes:
        return self.meta.max_key

    @property
    def entries(self) -> int:
        """Entries (values and deletions) in the table."""
        f = self._facts
        return self.meta.entries if f is None else f[0]

    @property
    def deletions(self) -> int:
        """Deletion entries in the table."""
        f = self._facts
        return self.meta.deletions if f is None else f[1]

    @property
    def range_dels(self) -> tuple:
        """The range tombstones ``(start, end, seq)`` the table carries (``()`` without reading
        the meta block when the open kernel saw none)."""
        f = self._facts
        return self.meta.range_dels if f is None or f[2] else ()

    @property
    def _handles(self) -> Handles:
        """The footer's block handles. Kept as a plain tuple of ints (``_hs``), which the garbage
        collector untracks, not as a :class:`Handles` object per table (a long-lived tracked
        object: those set off the collector's full passes)."""
        return Handles(*self._hs)

    def _set_index(self, index: np.ndarray) -> None:
        """Keep the kernel's index array; the blocks' offsets and sizes as lists and the last
        keys as bytes are made on first use (:attr:`offsets`, :attr:`sizes`, :attr:`last_keys`)."""
        self._index = index
        self._offsets = self._sizes = None
        self._last_keys = None

    def _entries(self) -> np.ndarray:
        idx = self._index
        return idx[1 : 1 + 6 * int(idx[0])].reshape(-1, 6)

    @property
    def offsets(self) -> list[int]:
        """Each data block's offset in the file (made from the index array on first use)."""
        o = self._offsets
        if o is None:
            o = self._offsets = self._entries()[:, 4].tolist()
        return o

    @property
    def sizes(self) -> list[int]:
        """Each data block's size (made from the index array on first use)."""
        s = self._sizes
        if s is None:
            s = self._sizes = self._entries()[:, 5].tolist()
        return s

    @property
    def last_keys(self) -> list[bytes]:
        """Each data block's last key (made from the index array on first use)."""
        keys = self._last_keys
        if keys is None:
            raw = self._index.view(np.uint8).tobytes()
            e = self._entries()
            keys = self._last_keys = [raw[o : o + n] for o, n in zip(e[:, 2].tolist(), e[:, 3].tolist())]
        return keys

    # -- filter -------------------------------------------------------------------------------
    def filter(self):
        """The table's whole-table filter (``None`` when it has none, it is damaged, or the table
        has partitioned filters -- see :meth:`partition_filter`). Loaded once."""
        if self._filter_loaded:
            return self._filter
        with _FILTER_LOAD:
            if not self._filter_loaded:
                if self._hs[1]:
                    try:
                        self._read_filter()
                    except Exception:  # noqa: BLE001 - a damaged filter fails open
                        self._filter = None
                        self.partitions = None
                        self.filter_damaged = True
                self._filter_loaded = True
        return self._filter

    def _read_filter(self) -> None:
        """Read the filter block: the whole-table filter, or the partitions' index."""
        fb = self._meta_block(self._hs[0], self._hs[1], "filter")
        if bytes(fb[:4]) == PARTITION_MAGIC:
            self._parse_partitions(bytes(fb))
        else:
            # the block's CRC32C covered it; a view of the mapped file is read in place (no copy)
            self._filter = filters.from_bytes(fb, verify_payload=False, copy=_copies(fb))

    def _meta_block(self, off: int, size: int, what: str):
        """Block ``[off, off + size)`` (a filter block: always stored raw) checked against its
        trailer's CRC32C: a view of the mapped file when it is raw and intact (checked by one
        kernel call, nothing copied), else what :func:`.block.unframe` gives (which raises
        naming the file when the block is damaged)."""
        if HW_RANGES and OK.block_ok(self._arr, off, size):
            return self._arr[off : off + size]
        _, data = unframe(self._buf, off, size, self.path, what)
        return data if data is not None else bytes(self._buf[off : off + size])

    def _parse_partitions(self, b: bytes) -> None:
        (n,) = struct.unpack_from("<I", b, 4)
        keys, offs, sizes, p = _parse_handles(b, 8, n)
        if p != len(b) or n == 0:
            raise ValueError("malformed partition index")
        self._part_filters = [None] * n
        self.partitions = (keys, offs, sizes)

    def prefix_may_match(self, name: str, prefix: bytes) -> bool:
        """Whether the table may hold a key with prefix ``prefix`` (the prefix of extractor
        ``name``): False only when its prefix filter, written under that same extractor, says
        no. A table without one, written under another extractor, or whose filter is damaged
        answers True. The filter is read from the meta block on the first call and kept."""
        f = self.prefix_filter(name)
        if f is True or f is False:
            return f
        return f.might_contain(prefix)

    def prefix_filter(self, name: str):
        """The table's prefix filter for extractor ``name``: a filter, or ``True`` (none usable:
        no filter, another extractor, damaged -- every prefix may match) or ``False`` (no key of
        the table has a prefix). Read from the meta block on the first call and kept."""
        m = self.meta
        if m.prefix_name != name:
            return True
        f = self._prefix
        if f is None:
            try:
                f = filters.from_bytes(m.prefix_filter) if m.prefix_filter else False
            except Exception:  # noqa: BLE001 - a damaged filter fails open
                self.filter_damaged = True
                f = True
            self._prefix = f
        return f

    @property
    def filter_loaded(self) -> bool:
        """Whether the filter block has been read (the probe directory reads it lazily: in its
        lookup kernel, or through :meth:`filter`)."""
        fw = self.probe_filter_words
        return self._filter_loaded or (fw is not None and fw[0] != 0)

    @property
    def filter_block(self) -> tuple[int, int]:
        """``(offset, size)`` of the filter block in the file (its trailer follows; size 0: no filter)."""
        return self._hs[0], self._hs[1]

    def partition_for(self, key: bytes) -> int | None:
        """Partitioned filters: the partition whose key range holds ``key`` (None: beyond the
        table's last key)."""
        i = bisect_left(self.partitions[0], key)
        return None if i == len(self.partitions[0]) else i

    def loaded_partition(self, i: int):
        """Partition ``i``'s filter if read, ``None`` if not read yet, ``False`` if damaged."""
        return self._part_filters[i]

    def partition_filter(self, i: int):
        """Partition ``i``'s filter, read and kept on first use (``None``: damaged, fail open --
        ``filter_damaged`` is set)."""
        f = self._part_filters[i]
        if f is None:
            keys, offs, sizes = self.partitions
            try:
                fb = self._meta_block(offs[i], sizes[i], "filter partition")
                f = filters.from_bytes(fb, verify_payload=False, copy=_copies(fb))
            except Exception:  # noqa: BLE001 - fail open
                self.filter_damaged = True
                f = False
            self._part_filters[i] = f
        return f if f is not False else None

    @property
    def filter_bytes(self) -> int:
        return self._hs[1]

    @property
    def filter_memory(self) -> int:
        """Bytes of the filters read so far and kept (the whole-table filter or the partitions
        read): ``0`` before the first lookup that needs one."""
        if self.partitions is not None:
            return sum(f.size_bytes for f in self._part_filters if f)
        if self._filter is not None:
            return self._filter.size_bytes
        fw = self.probe_filter_words
        return int(fw[-1]) if fw is not None and fw[0] != 0 else 0

    @property
    def index_memory(self) -> int:
        """Bytes the index holds in memory: the kernel's index array, the last keys, the
        per-block checked flags and hints (64 bytes a block: its restart keys)."""
        keys = self._last_keys
        return self._index.nbytes + self._state.nbytes + (sum(map(len, keys)) if keys is not None else 0)

    # -- blocks -------------------------------------------------------------------------------
    @property
    def value_bytes(self):
        """The file's bytes (the memory map): a raw block's value is ``value_bytes[a:b]``;
        ``None`` for a table with no mapped bytes (every lookup reads it through :meth:`get`)."""
        return self._buf if len(self._arr) else None

    def lookup_arrays(self):
        """``(file bytes, index array, read state)``: what the store's lookup kernel
        (:mod:`bloomdb.lsm.probe._get_kernels`) reads a point lookup through, by address, in the
        same call that probes the filters; ``None`` (an empty file) sends every read through
        :meth:`get`. The read state starts with a flag per block: a block whose flag is 0 (CRC32C
        not checked yet, or compressed) is handed back to :meth:`get`; the lookup kernel keeps
        each block's hint after the flags (:func:`_table_kernels.table_get_hinted`). The caller
        keeps the arrays referenced while it may read them."""
        if not len(self._arr):
            return None
        return self._arr, self._index, self._state

    def block(self, i: int):
        """``(array, bytes-like, offset, size)`` of data block ``i``, checked; may raise CorruptionError."""
        off = self.offsets[i]
        size = self.sizes[i]
        if self._checked[i] == 1:
            return self._arr, self._buf, off, size
        cache = self._cache
        if cache is not None:
            hit = cache.get((self.number, i))
            if hit is not None:
                return hit[0], hit[1], 0, len(hit[1])
        typ, data = unframe(self._buf, off, size, self.path, "data")
        if typ == RAW:
            self._checked[i] = 1
            return self._arr, self._buf, off, size
        arr = np.frombuffer(data, dtype=np.uint8)
        if cache is not None:
            cache.put((self.number, i), (arr, data), len(data))
        return arr, data, 0, len(data)

    def check_block(self, i: int) -> bool:
        """Check raw data block ``i``'s CRC32C once, in place (no copy of the block): True when it
        is raw and intact (it is marked checked: lookups read it in place from now on), False
        when it is compressed (read through :meth:`block`). Raises CorruptionError naming the
        file when the block is damaged or lies outside the file. Cost: one CRC32C call."""
        off = self.offsets[i]
        end = off + self.sizes[i]
        buf = self._buf
        if off < 0 or end + TRAILER > self.file_size:
            unframe(buf, off, self.sizes[i], self.path, "data")  # raises, naming the block
        if buf[end] != RAW:
            return False
        with memoryview(buf) as mv:
            crc = crc32c(mv[off : end + 1])
        if crc != _U32.unpack_from(buf, end + 1)[0]:
            raise CorruptionError(f"data block at offset {off} fails its CRC32C", self.path)
        self._checked[i] = 1
        return True

    def get(self, key: bytes, snap: int):
        """The newest version of ``key`` with sequence ``<= snap``: value bytes, DELETED or MISSING.
        Cost: one kernel call (index search and block search) for a block already checked; the
        first read of a block checks its CRC32C (and decompresses it) in Python."""
        st, i, vo, vl = TK.table_get(self._arr, self._index, self._checked, key, snap)
        if st == 1:
            return self._buf[vo : vo + vl]
        if st == 0:
            return MISSING
        if st == 2:
            return DELETED
        if st == TK.ST_UNCHECKED:
            arr, raw, off, size = self.block(i)
            st, vo, vl = K.block_get(arr, off, size, key, snap)
            if st == 1:
                return raw[vo : vo + vl]
            if st == 2:
                return DELETED
            if st == 0:
                return MISSING
        raise CorruptionError(f"data block {i} is malformed", self.path)

    def decode_arrays(self, first: int = 0, last: int | None = None):
        """Entries of blocks ``first..last`` (default: all) as packed arrays ``(kdata, koff,
        trailers, vdata, voff)`` (values copied): the input of compactions and scans. Each block
        is checked first; damage raises CorruptionError. Cost for raw blocks: one kernel call
        (:func:`._table_kernels.decode_range`: the CRC32C of every block not yet checked, then
        the decode); compressed or damaged blocks go the step-by-step way (which names the
        damage)."""
        last = self.num_blocks() - 1 if last is None else last
        if HW_RANGES and 0 <= first <= last < self.num_blocks():  # checked and decoded in one kernel call
            ok, *res = TK.decode_range(self._arr, self._index, self._checked, first, last)
            if ok:
                return tuple(res)
        if self._check_raw(first, last):
            offs = np.array(self.offsets[first : last + 1], np.int64)
            sizes = np.array(self.sizes[first : last + 1], np.int64)
            groups = [(self._arr, offs, sizes)]
        else:
            views = [self.block(i) for i in range(first, last + 1)]
            groups = [(v[0], np.array([v[2]], np.int64), np.array([v[3]], np.int64)) for v in views]
        return decode_groups(groups, self.path)

    def _check_raw(self, first: int, last: int) -> bool:
        """Check the CRC32C of every block of ``first..last`` not checked yet, if all of them are
        stored raw (then True: they can be decoded in place); False (nothing checked) when some
        block is compressed. Raises CorruptionError naming the first damaged block."""
        todo = (np.flatnonzero(self._checked[first : last + 1] == 0) + first).tolist()
        if not todo:
            return True
        offs = np.array([self.offsets[i] for i in todo], np.int64)
        sizes = np.array([self.sizes[i] for i in todo], np.int64)
        ends = offs + sizes
        if int(offs.min()) < 0 or int(ends.max()) + TRAILER > self.file_size:
            for i in todo:  # unframe names the block that lies outside the file
                unframe(self._buf, self.offsets[i], self.sizes[i], self.path, "data")
        if np.any(self._arr[ends] != RAW):
            return False
        stored = TK.get_u32(self._arr, ends + 1)
        bad = np.flatnonzero(crc32c_ranges(self._arr, offs, ends + 1) != stored)
        if bad.size:
            raise CorruptionError(f"data block at offset {int(offs[bad[0]])} fails its CRC32C", self.path)
        self._checked[todo] = 1
        return True

    def num_blocks(self) -> int:
        return int(self._index[0])  # the meta block says as many (checked at open)

    def first_block_for(self, key: bytes) -> int:
        return bisect_left(self.last_keys, key)


def decode_tables(tables) -> tuple[tuple, list[int]]:
    """Every entry of ``tables``, one after the other, as one packed ``(kdata, koff, trailers,
    vdata, voff)``, and each table's entry count: the input of a compaction. Raw tables are
    decoded straight into one set of arrays sized by a first pass (no concatenation holding the
    GIL); compressed ones go through :meth:`Table.decode_arrays`."""
    if not all(t._check_raw(0, t.num_blocks() - 1) for t in tables):
        parts = [t.decode_arrays() for t in tables]
        return concat_packed(parts), [len(p[2]) for p in parts]
    plans = []
    n = kb = vb = 0
    for t in tables:
        offs = np.array(t.offsets, np.int64)
        sizes = np.array(t.sizes, np.int64)
        m, k, v = K.decoded_sizes(t._arr, offs, sizes)
        if m < 0:
            raise CorruptionError("a data block is malformed", t.path)
        plans.append((t, offs, sizes, n, m))
        n += m
        kb += k
        vb += v
    kdata = np.empty(kb, np.uint8)
    koff = np.zeros(n + 1, np.int64)
    trailers = np.empty(n, np.uint64)
    vdata = np.empty(vb, np.uint8)
    voff = np.zeros(n + 1, np.int64)
    for t, offs, sizes, first, _ in plans:
        K.decode_into(t._arr, offs, sizes, kdata, koff, trailers, vdata, voff, first)
    return (kdata, koff, trailers, vdata, voff), [p[4] for p in plans]


def decode_groups(groups, path: str):
    """Entries of the blocks of ``groups`` (each ``(array, offsets, sizes)``, blocks checked) as
    one packed ``(kdata, koff, trailers, vdata, voff)``: one decode kernel call per group."""
    parts = []
    for arr, offs, sizes in groups:
        ok, *res = K.decode_blocks(arr, offs, sizes)
        if not ok:
            raise CorruptionError("a data block is malformed", path)
        parts.append(res)
    return concat_packed(parts)


def concat_packed(parts):
    """Concatenate ``(kdata, koff, trailers, vdata, voff)`` tuples into one."""
    if len(parts) == 1:
        return tuple(parts[0])
    kdata = np.concatenate([p[0] for p in parts])
    vdata = np.concatenate([p[3] for p in parts])
    trailers = np.concatenate([p[2] for p in parts])
    koffs, voffs = [], []
    kb = vb = 0
    for p in parts:
        koffs.append(p[1][:-1] + kb)
        voffs.append(p[4][:-1] + vb)
        kb += int(p[1][-1])
        vb += int(p[4][-1])
    koffs.append(np.array([kb], np.int64))
    voffs.append(np.array([vb], np.int64))
    return kdata, np.concatenate(koffs), trailers, vdata, np.concatenate(voffs)


class BlockCache:
    """A small LRU of decompressed blocks (``capacity`` bytes), shared by the store's tables."""

    def __init__(self, capacity: int):
        from collections import OrderedDict

        self.capacity = capacity
        self._d: "OrderedDict" = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def bytes(self) -> int:
        """Bytes of the blocks held now."""
        return self._bytes

    def get(self, key):
        with self._lock:
            v = self._d.get(key)
            if v is None:
                self.misses += 1
                return None
            self._d.move_to_end(key)
            self.hits += 1
            return v[0]

    def put(self, key, value, nbytes: int) -> None:
        if nbytes > self.capacity:
            return
        with self._lock:
            if key in self._d:
                return
            self._d[key] = (value, nbytes)
            self._bytes += nbytes
            while self._bytes > self.capacity:
                _, (_, b) = self._d.popitem(last=False)
                self._bytes -= b
