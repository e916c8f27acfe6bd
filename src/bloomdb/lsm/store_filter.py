"""The store filter: ONE membership filter over the keys of every table of the store, which a point
lookup checks before anything else (:mod:`.probe._get_kernels`): a key it rejects is missing at
once -- one filter line per missing key, whatever the shape of the levels, instead of one line
per candidate table (1.7-2.1 of them at 1M keys, depending on what a fill leaves in L0/L1). A
plain membership filter over the whole store, in the spirit of "Chucky" (Dayan & Twitto,
SIGMOD'21: one global filter for an LSM tree).

Contract: never a false negative. The filter is a SUPERSET of the keys of the tables it
*covers* (``covered``: table numbers); keys compacted away or deleted may stay in it. A
version's probe directory carries the filter's record (header word ``SF``,
:mod:`.probe.layout`) only when every table of that version is covered, so a key held by any
table of such a version is in the filter. A version some table of which is not covered gets no
record: its lookups check the tables' filters as before, until the flush thread has added that
table's keys (then the current version's directory gets the record in place,
:meth:`.probe.directory.Directory.set_store_filter`).

How tables become covered:

* a flush (:meth:`flushed`, from :meth:`DB._write_table`) adds the XXH3 hashes of the keys it
  writes and covers its table BEFORE the version holding the table is installed (until then
  the immutable memtable answers for those keys, so a reader never misses one);
* a compaction's outputs hold only keys of its inputs: when all its inputs were covered, its
  outputs are (:meth:`installed`), nothing is added;
* any other way a table enters a version (a table written before this file existed, one a
  crash left uncovered, repair) leaves it uncovered: the flush thread scans it (:meth:`step`).

Sizing: none while the tables hold fewer than ``MIN_ENTRIES`` entries (dormant: a small
store's few per-table filters sit in cache); then built for ``GROW`` x an estimate of the
distinct keys (:func:`_capacity`, at least ``MIN_CAPACITY``): the old filter's fill estimate plus
the entries of the tables it does not cover, at most the tables' entries (with no filter yet, or
no usable file, the entries alone). Entries count every version of a key (overwrites,
tombstones): sized from them (4x, as before), a 1M store after an overwrite held 52 bits a
distinct key (6.5 MB). When the estimated distinct keys pass ``REBUILD_AT`` x the
capacity (12 bits a key), a bigger one is built from the keys of the current version's tables:
between rebuilds it holds ``BITS_PER_KEY`` to ``GROW`` x that a distinct key, and a store growing
to N keys rebuilds ~log2(N / MIN_ENTRIES) times, the last one decoding every table. A saturated
filter is still correct, only less selective. A read-only store's (:mod:`.readonly`) never grows:
it is built for the estimate itself and never rebuilt for its fill.

Races: the maintenance (:meth:`step`: a rebuild or the scan of uncovered tables) runs in the
flush thread only (or, with ``background_compaction=False``, in the writer under the store's
lock, as inline flushes do), a bounded number of entries per step, with flushes between steps:
so a flush and a step never run at once, and a flush during a job adds its keys to the job's
filter too and its table to the job's ``pending`` set. Compactions (the other thread) install
under the store's lock, where :meth:`installed` follows the covered sets of the live filter and
of the job; a job takes its tables' refs from the version it started on (so their bytes stay
mapped). ``state`` (filter, covered) is one tuple, swapped whole under the store's lock. Adding
to the live filter while lookups check it is safe: bits are only set, and a key being added is
still in a memtable the reader checks first.

Persisted as the derived file ``STOREFILTER`` (:meth:`save` at close, :meth:`load` at
recovery): a header (magic, version, count of covered tables, length of the filter's bytes, the
store's identity), per covered live table ``(number, file size, max sequence, CRC32C of its key
bounds)`` (so a file of another store, or of other tables with the same numbers, covers
nothing), a CRC32C of all that, padding (so the payload starts on a cache line), then the
filter's own self-checking envelope (:meth:`Filter.to_bytes`), read in place from the file's
private map at open (its CRC32C checked; the first flush adds to a copy). A missing, short, damaged or foreign file is ignored (the filter is
rebuilt), never trusted, never an error. Written only on :class:`.fs.RealFS` (like ``FILTERS``),
without fsync (a torn file fails its checks). The store deletes no file here; recovery ignores
the name (it matches no table or log pattern). No table or manifest format changes.

Cost: a flush hashes its keys once more (~3 ns a key) and adds them (~5 ns); a lookup pays one
filter line (12-24 bits a distinct key: 1.5-3 bytes a key of memory, reported by ``db.stats()``); a rebuild
decodes every table once (in the flush thread, ``STEP_ENTRIES`` entries at a time).
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ..checksum import crc32c
from ..filters import probe as FP
from ..filters.blocked import BlockedBloom
from ..errors import StaticFilterError
from ..filters.format import decode
from ..filters.registry import from_bytes
from ..hashing import hash_batch
from ..keys import KeyBatch
from .filter_file import replace_cache_file
from .fs import RealFS
from .probe.directory import kernel_record, record_words

NAME = "STOREFILTER"
MAGIC = b"BDBSTFL1"
VERSION = 1
BITS_PER_KEY = 12  #: ~0.4% false positives for the blocked family
MIN_CAPACITY = 1 << 16
#: below this many table entries the store keeps no store filter (dormant: none built, saved or
#: checked): a small store's per-table filters are few and in cache, and its tables' own filter
#: counters stay what they were; the first install past it starts a rebuild
MIN_ENTRIES = 1 << 16
GROW = 2  #: a rebuild sizes for GROW x the estimated distinct keys of the version's tables
REBUILD_AT = 1.0  #: estimated distinct keys / capacity past which a rebuild is due
STEP_ENTRIES = 1 << 18  #: table entries added per maintenance step (flushes run between steps)
MAX_FAILURES = 8  #: failed jobs (a table unreadable) before the store stops trying until reopened
_HEAD = struct.Struct("<8sIIQ32s")  # magic, version, covered tables, filter bytes, the store's identity
_ENTRY = 4  # u64 words per covered table: number, file size, max sequence, CRC32C of min key << 32 | of max key


def _store_id(fs, folder: str) -> bytes:
    """32 bytes naming the store (its identity file's tail, :mod:`.identity`; zeros without one):
    a file copied from another store covers nothing here."""
    try:
        data = bytes(fs.read_all(os.path.join(folder, "BLOOMDB")))
    except OSError:
        data = b""
    return data.rstrip(b"\n")[-32:].rjust(32, b"\0")


def _table_id(r) -> tuple:
    """What the file records of a covered table (``TableRef`` ``r``): number, size, max sequence
    and its key bounds' CRC32C -- a table of another history with the same number differs."""
    i = r.info
    return r.number, i.file_size, i.max_seq, (crc32c(i.min_key) << 32) | crc32c(i.max_key)


def _hashes(kdata, koff) -> np.ndarray:
    """XXH3-64 of every key of the packed arrays (the hash the blocked family adds and the
    lookup kernel checks)."""
    return hash_batch(KeyBatch(data=np.asarray(kdata, np.uint8), offsets=np.asarray(koff, np.int64)))


def _entries(version) -> int:
    """Entries in ``version``'s tables (from each table's facts: no file read)."""
    return sum(int(r.table.entries) for r in version.slots)


def stats(sf, version, checks: int, negatives: int) -> dict:
    """The store filter's fields of ``db.stats()`` (``sf``: None when the option is off)."""
    return {"store_filter_bytes": 0 if sf is None else sf.size_bytes(), "store_filter_checks": checks,
            "store_filter_negatives": negatives, "store_filter_covers": sf is not None and sf.covers(version)}


def _follow(cov: frozenset, deleted: set, added: list[int]) -> frozenset:
    """Covered set ``cov`` after an install deleting ``deleted`` and adding tables ``added``: a
    compaction's outputs are covered when all its inputs were (they hold only their keys); a
    table added with nothing deleted (a flush not added here, anything else) is not."""
    if deleted and deleted <= cov:
        return (cov - deleted) | frozenset(added)
    return cov - deleted if deleted else cov


def _capacity(f, todo, entries: int, grow: float) -> int:
    """Keys a rebuilt filter is sized for: ``grow`` x an estimate of the distinct keys of the
    tables -- the old filter ``f``'s fill estimate (the distinct keys added to it: a superset of
    its covered tables' keys) plus the entries of the tables ``todo`` it does not cover, at most
    the tables' ``entries``; without a filter the entries alone (an upper bound of the distinct
    keys: every version of a key counts)."""
    d = entries
    if f is not None:
        d = min(entries, f.estimated_count() + sum(int(r.table.entries) for r in todo))  # (inf: every bit set)
    return max(1, int(grow * d))


def _new_filter(capacity: int, bits_per_key: float) -> BlockedBloom:
    f = BlockedBloom(max(MIN_CAPACITY, int(capacity)), bits_per_key=bits_per_key)
    f.on_full = "ignore"  # saturated is still correct: a rebuild follows
    return f


class _Job:
    """A rebuild (``swap``: ``target`` is a new filter made the store's at the end) or the scan
    of uncovered tables into the live filter: the refs left to add (``todo``) and the table
    numbers the target covers once they are added (``pending``)."""

    __slots__ = ("target", "todo", "pending", "swap")

    def __init__(self, target, todo, pending, swap):
        self.target, self.todo, self.pending, self.swap = target, todo, pending, swap


class StoreFilter:
    """The store filter of one store (see the module docstring)."""

    def __init__(self, bits_per_key: float = BITS_PER_KEY, read_only: bool = False):
        self.bits_per_key = bits_per_key
        #: a read-only store's (:mod:`.readonly`): its tables never change, so a build is sized for
        #: the distinct keys it finds (no ``GROW`` headroom), and nothing is ever saved
        self.read_only = read_only
        #: ``(filter or None, frozenset of covered table numbers)``, swapped whole
        self.state: tuple = (None, frozenset())
        self.job: _Job | None = None
        self.due = False  #: the flush thread has work here (a rebuild or uncovered tables)
        self.failures = 0
        self._dirty = False  # changed since loaded or saved
        self._next_fill_check = 0
        self._rec = (None, None)  # (filter, its record words) of record_for

    # -- what the lookup kernel sees ------------------------------------------------------------
    def record_for(self, version):
        """``(record words, array)`` of the filter for ``version``'s directory when it covers every
        table of ``version``, else None."""
        f, cov = self.state
        if f is None or any(r.number not in cov for r in version.slots):
            return None
        if self._rec[0] is not f:
            self._rec = (f, record_words(kernel_record(f)))
        return self._rec[1]

    def covers(self, version) -> bool:
        f, cov = self.state
        return f is not None and all(r.number in cov for r in version.slots)

    def size_bytes(self) -> int:
        f = self.state[0]
        return 0 if f is None else int(f.size_bytes)

    # -- maintenance ----------------------------------------------------------------------------
    def flushed(self, number: int, kdata, koff) -> None:
        """A flush (or recovery) wrote table ``number`` with the keys ``kdata``/``koff`` (packed):
        add them and cover it, before the version holding it is installed. Never raises: a
        failure leaves the table uncovered (the flush thread scans it later)."""
        f, cov = self.state
        job = self.job
        if f is None and job is None:
            return
        try:
            h = _hashes(kdata, koff)
            if f is not None:
                f = _writable(f)  # (the new version's directory takes the copy)
                f.add_hashes(h)
                self.state = (f, cov | {number})
                self._dirty = True
            if job is not None:
                if job.target is not f:
                    job.target.add_hashes(h)
                job.pending.add(number)
            if f is not None and f.count >= self._next_fill_check:
                self._check_fill(f)
        except Exception:  # noqa: BLE001 - the store's flush must not fail for a derived filter
            self.due = True

    def _check_fill(self, f) -> None:
        """Set :attr:`due` when ``f`` holds more distinct keys than ``REBUILD_AT`` x its capacity
        (one popcount pass, at most every quarter capacity of adds)."""
        self._next_fill_check = f.count + f.capacity // 4
        if f.count > f.capacity and f.estimated_count() > REBUILD_AT * f.capacity and not self.read_only:
            self.due = True

    def installed(self, deleted: set, added: list, version) -> None:
        """An edit was installed (caller holds the store's lock): follow the covered sets;
        :attr:`due` when ``version`` (the new current one) is not covered."""
        numbers = [r.number for r in added]
        f, cov = self.state
        if f is None and self.job is None:  # dormant (or no usable file yet): due once the store is big enough
            self.due = self.due or _entries(version) >= MIN_ENTRIES
            return
        self.state = (f, _follow(cov, deleted, numbers))
        if self.job is not None:
            self.job.pending = set(_follow(frozenset(self.job.pending), deleted, numbers))
        if not self.covers(version):
            self.due = True

    def step(self, db) -> None:
        """One bounded piece of the work :attr:`due` says there is (the flush thread's, or the
        writer's under the store's lock when inline): start a job, add up to ``STEP_ENTRIES``
        table entries, or finish a job. Never raises (a failure drops the job: the filter the
        store uses is unchanged, still correct)."""
        try:
            self._step(db)
            return
        except Exception:  # noqa: BLE001 - a table that cannot be read now: retried, a few times
            self.job = None
            self.failures += 1
            if self.failures >= MAX_FAILURES:
                self.due = False

    def _step(self, db) -> None:
        job = self.job
        if job is None:
            with db._lock:
                self._start(db._version)
            return
        n = 0
        while job.todo and n < STEP_ENTRIES:
            t = job.todo.pop().table
            kd, ko = t.decode_arrays()[:2]
            job.target.add_hashes(_hashes(kd, ko))
            n += ko.shape[0] - 1
        if job.todo:
            return
        with db._lock:
            f = job.target
            self.state = (f, frozenset(job.pending))
            self.job = None
            self._dirty = True
            self.failures = 0
            self.due = False
            self._check_fill(f)  # (sets due when it is full already)
            ver = db._version
            if not self.covers(ver):  # a table that entered uncovered meanwhile
                self.due = True
            self.publish(ver)

    def _start(self, ver) -> None:
        """Start the job ``ver`` needs (caller holds the store's lock), or clear :attr:`due`."""
        f, cov = self.state
        refs = list(ver.slots)
        entries = _entries(ver)
        if f is None and entries < MIN_ENTRIES:  # dormant
            self.due = False
            return
        todo = [r for r in refs if r.number not in cov]
        grow = (f is not None and not self.read_only and f.count > f.capacity
                and f.estimated_count() > REBUILD_AT * f.capacity)
        if f is not None and not todo and not grow:
            self.due = False
            return
        if f is None or grow or f.estimated_count() + sum(int(r.table.entries) for r in todo) > REBUILD_AT * f.capacity:
            cap = _capacity(f, todo, entries, 1 if self.read_only else GROW)
            self.job = _Job(_new_filter(cap, self.bits_per_key), refs, {r.number for r in refs}, True)
        else:
            self.job = _Job(_writable(f), todo, set(cov) | {r.number for r in todo}, False)

    def run_all(self, db) -> None:
        """Every step :attr:`due` asks for, now (inline stores; tests)."""
        for _ in range(1 << 20):
            if not self.due:
                return
            self.step(db)

    def publish(self, ver) -> None:
        """Give ``ver``'s directory the filter's record if it is built and now covered (caller
        holds the store's lock; the version's own lock keeps a directory being built from
        missing it)."""
        rec = self.record_for(ver)
        if rec is None:
            return
        with ver._lock:
            if ver.directory is not None:
                ver.directory.set_store_filter(*rec)

    # -- the file ---------------------------------------------------------------------------
    def load(self, fs, folder: str, version) -> None:
        """At recovery: the file's filter and the live tables of ``version`` it covers (same
        number, size, max sequence and key bounds), or -- no usable file -- none (a rebuild is
        due when the tables hold ``MIN_ENTRIES`` entries). Never raises for the file's content."""
        f, cov = _read(fs, folder, version)
        self.state = (f, cov)
        self.due = not self.covers(version) and (f is not None or _entries(version) >= MIN_ENTRIES)
        if f is not None:
            self._check_fill(f)

    def save(self, fs, folder: str, version) -> None:
        """At close: write the file (filter and the live tables of ``version`` it covers) if
        anything changed since it was loaded or saved. A failed write removes it."""
        f, cov = self.state
        if f is None or not self._dirty or type(fs) is not RealFS or self.read_only:
            return
        path = os.path.join(folder, NAME)
        rows = np.array([_table_id(r) for r in version.slots if r.number in cov], np.uint64).reshape(-1, _ENTRY)
        body = f.to_bytes()
        head = _HEAD.pack(MAGIC, VERSION, rows.shape[0], len(body), _store_id(fs, folder)) + rows.tobytes()
        head += struct.pack("<I", crc32c(head))
        poff = decode(body, verify_payload=False).payload_offset  # the payload on a cache line in the file
        head += bytes((-(len(head) + poff)) % 64)
        if replace_cache_file(path, [head, body]):
            self._dirty = False


def _read(fs, folder: str, version) -> tuple:
    """``(filter, covered numbers)`` from the file, or ``(None, frozenset())``. The filter reads its
    payload in place from the file's private map (:meth:`.fs.RealFS.read_all`; no copy: a copy
    of a few MB takes a fresh-page fault per 4 KiB at open) -- its CRC32C checked first -- and
    is read-only: the first flush adds to a copy (:func:`_writable`)."""
    none = (None, frozenset())
    try:
        m = fs.read_all(os.path.join(folder, NAME))
    except OSError:
        return none
    try:
        buf = memoryview(m) if not isinstance(m, bytes) else memoryview(bytearray(m))
        if len(buf) < _HEAD.size:
            return none
        magic, version_no, count, nbody, sid = _HEAD.unpack_from(buf, 0)
        end = _HEAD.size + 8 * _ENTRY * count
        if magic != MAGIC or version_no != VERSION or end + 4 + nbody > len(buf) or sid != _store_id(fs, folder):
            return none
        if crc32c(buf[:end]) != struct.unpack_from("<I", buf, end)[0]:
            return none
        f = from_bytes(buf[len(buf) - nbody :], copy=False)
        d = f.probe_descriptor()
        if d is None or d.kind != FP.BLOCKED_V1 or not isinstance(f, BlockedBloom):
            return none  # the lookup kernel checks it on the key's XXH3 hash: blocked only
        f.on_full = "ignore"
        rows = np.frombuffer(buf, np.uint64, _ENTRY * count, _HEAD.size).reshape(count, _ENTRY).tolist()
    except Exception:  # noqa: BLE001 - a damaged derived file is ignored, never an error
        return none
    live = {r.number: r for r in version.slots}
    cov = frozenset(row[0] for row in rows if row[0] in live and tuple(row) == _table_id(live[row[0]]))
    return f, cov


def _writable(f):
    """``f``, or a writable copy when ``f`` is read in place from the file (read-only)."""
    try:
        f.add_hashes(np.empty(0, np.uint64))
        return f
    except StaticFilterError:
        g = f.copy()
        g.on_full = "ignore"
        return g
