"""Opening a store: which folder may be opened, the process lock, and the recovery of its state
(LevelDB's ``DB::Open`` / ``DBImpl::Recover``).

Order (each step is what makes the next safe): :func:`check_folder` classifies the folder and, for
a new store, writes its identity file first (:mod:`.identity`); :class:`StoreLock` keeps a second
process out; :func:`recover` lets the version set recover the table set (manifest, tables,
obsolete files: :meth:`.version_set.VersionSet.recover`), replays the write-ahead logs it names
into an L0 table, starts a new log and makes all of it durable in one manifest write before the
replayed logs are deleted -- or, when the one log left was read to a clean end, keeps its few
writes in the memtable and appends to that log (nothing written, no fsync), or hands many to the
flush thread as an immutable memtable (:func:`_resume`). A crash at any point leaves a store
that recovers the same way.

Cost: reading every live log once (a run of single puts found and checked by one kernel call,
~0.5 us a record of Python after it); then nothing more (a resumed log), or one table write when the
logs held anything and two manifest writes (4 fsyncs).
"""

from __future__ import annotations

import os

import numpy as np

from ..checksum import HW_RANGES
from ..errors import BloomDBError, InvalidArgument
from . import _replay_kernels as _RK, identity, wal
from .memtable import ENTRY_OVERHEAD, MemTable


def check_folder(fs, path: str, options) -> str:
    """The :mod:`.identity` kind of ``path`` after the open checks: raises
    :class:`InvalidArgument` for a folder that is not a store and not empty, or a missing/existing
    store against ``create_if_missing`` / ``error_if_exists``; claims a new folder (identity file
    first). A refused open creates nothing."""
    kind = identity.inspect(fs, path)
    exists = kind in (identity.STORE, identity.LEGACY)
    if exists and options.error_if_exists:
        raise InvalidArgument(f"{path}: store exists (error_if_exists=True)")
    if not exists and not options.create_if_missing:
        why = " (its creation was interrupted)" if kind == identity.HALF else ""
        raise InvalidArgument(f"{path}: no store here{why} (create_if_missing=False)")
    if kind == identity.ABSENT:
        identity.claim(fs, path)  # the identity file first: from now on the folder is ours
    return kind


class StoreLock:
    """An exclusive ``flock`` on ``path/LOCK`` for the life of an open store (POSIX; elsewhere a
    no-op). Raises :class:`BloomDBError` when another open store holds it (a second open in the
    same process too: ``flock`` locks belong to each open of the file)."""

    def __init__(self, path: str):
        self._file = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            return
        f = open(os.path.join(path, "LOCK"), "a+")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            raise BloomDBError(f"{path}: the store is open already (in this or another process): close it "
                               "there first, or open this one with read_only=True") from None
        self._file = f

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def replay(fs, path: str, logs: list[int], paranoid: bool, seq: int, ends: list | None = None) -> tuple[MemTable, int]:
    """The writes of logs ``logs`` (in order) as one memtable, and the last sequence seen (at
    least ``seq``). A torn tail is dropped; damage before intact records raises
    :class:`CorruptionError` unless ``paranoid`` is False -- then replay stops there, later logs
    included (their writes came after the damage). ``ends``: gets each log's clean end or
    ``None`` (:func:`.wal.read_log`)."""
    mem = MemTable()
    damage: list[int] = []
    for n in logs:
        if damage:
            break
        p = os.path.join(path, f"{n:06d}.log")
        last = seq
        add = mem.add
        data = fs.read_all(p)
        start, last = _single_puts(data, mem, last)
        for first, ops in wal.read_log(data, p, paranoid, damage, ends, start):
            if len(ops) == 1 and type(ops[0][1]) is bytes:  # one put: what most records hold
                add(first, ops[0][0], ops[0][1], True)
                last = first
            else:
                mem.apply(first, ops, True)
                last = first + len(ops) - 1
        seq = max(seq, last)  # sequences grow along the logs
    return mem, seq


def _single_puts(data, mem: MemTable, last: int) -> tuple[int, int]:
    """Replay the log ``data``'s leading run of intact single-put records into ``mem`` (found and
    checked by one kernel call, :mod:`._replay_kernels`); returns where the first record not
    replayed starts (:func:`.wal.read_log` goes on from there) and the last sequence seen."""
    if not HW_RANGES or len(data) < 64:
        return 0, last
    arr = np.frombuffer(data, np.uint8)
    out = np.empty((len(data) // (_RK.HEAD + _RK.PUT1 + 4) + 1, 5), np.int64)
    n, end = _RK.single_puts(arr, 0, out)
    if n == 0:
        return end, last
    rows = out[:n]
    # by column, no list per record: 10K+ short-lived tracked lists made the collector run full
    # passes over the whole process's objects (~0.2 s each in a process holding large lists)
    seqs = rows[:, 0].tolist()
    keys = _fields(data, arr, rows, 1)
    vals = _fields(data, arr, rows, 3)
    _add_puts(mem, seqs, keys, vals, int(rows[:, 2].sum()) + int(rows[:, 4].sum()))
    return end, seqs[-1]


#: :func:`_fields` pads every field to the longest; past this many bytes of padding per byte of
#: fields (one value far longer than the rest) it slices instead
_PAD_SHARE = 2


def _fields(data, arr, rows, col: int) -> list[bytes]:
    """Field ``col`` (key: 1, value: 3) of each replayed record as ``bytes``, made in C by the
    ``tolist()`` of a fixed-width byte-string array (~12 ns a key, ~27 ns a 100-byte value,
    against ~75 / ~100 ns for a slice each in a list comprehension): a strided view of the log
    itself when every record has the same size (fixed-size keys and values: evenly spaced
    fields), else the fields gathered by one kernel call, zero padded. A field numpy would cut
    short (its last byte zero) is sliced again. Falls back to slicing when padding to the
    longest field would cost more than ``_PAD_SHARE`` times the fields' bytes."""
    offs, lens = rows[:, col], rows[:, col + 1]
    n = len(lens)
    width = int(lens.max())
    if width == 0:
        return [b""] * n
    step = int(offs[1] - offs[0]) if n > 1 else width
    if int(lens.min()) == width and step >= width and (n == 1 or (np.diff(offs) == step).all()):
        # records of one size (fixed-size keys and values): the fields read in place, strided
        view = np.ndarray((n,), f"S{width}", buffer=data, offset=int(offs[0]), strides=(step,))
        out = view.tolist()
        del view
        zeros = int(np.count_nonzero(arr[offs + (width - 1)] == 0))
    elif width * n > _PAD_SHARE * int(lens.sum()) + 65536:
        return [data[a : a + b] for a, b in zip(offs.tolist(), lens.tolist())]
    else:
        dst = np.empty(width * n, np.uint8)
        zeros = _RK.gather_fields(arr, rows, col, width, dst)
        out = dst.view(f"S{width}").tolist()
    if zeros:
        for i in np.flatnonzero((lens > 0) & (arr[offs + np.maximum(lens, 1) - 1] == 0)).tolist():
            a = int(offs[i])
            out[i] = data[a : a + int(lens[i])]
    return out


def _add_puts(mem: MemTable, seqs: list[int], keys: list[bytes], vals: list[bytes], nbytes: int) -> None:
    """``mem.add(seqs[i], keys[i], vals[i], True)`` for each ``i`` in order (puts, ascending
    sequences; ``nbytes``: the keys' and values' bytes): one ``dict.update`` when no key repeats
    and none is in ``mem`` yet (what a log of distinct keys holds: nothing goes to ``history``),
    else record by record. An empty ``mem`` (the first log) is updated at once and the update
    undone when it came out shorter than ``keys`` (a key repeats): no set of the keys is made
    first. Cost: ~0.1 us a record (two dict updates) instead of ~0.3."""
    latest = mem.latest
    if not latest and not mem.seqs and not mem.history:
        latest.update(zip(keys, vals))
        if len(latest) != len(keys):
            latest.clear()
            return _add_each(mem, seqs, keys, vals)
    elif len(set(keys)) != len(keys) or not latest.keys().isdisjoint(keys):
        return _add_each(mem, seqs, keys, vals)
    else:
        latest.update(zip(keys, vals))
    mem.seqs.update(zip(keys, seqs))
    mem.bytes += nbytes + ENTRY_OVERHEAD * len(keys)


def _add_each(mem: MemTable, seqs: list[int], keys: list[bytes], vals: list[bytes]) -> None:
    add = mem.add
    for q, k, v in zip(seqs, keys, vals):
        add(q, k, v, True)


#: A replayed log holding more than ``memtable_bytes // RESUME_SHARE`` of writes is not kept as
#: the memtable for good: replaying it costs ~0.3 us per record at every open (in Python), so its
#: writes are flushed -- by the flush thread, while the store already serves reads.
RESUME_SHARE = 16


def _resume(db, kind: str, logs: list[int], ends: list, mem: MemTable) -> bool:
    """Open without writing anything synchronously when the store's single log was read to a
    clean end (no torn tail, no damage; a store of today's kind); True when done. The replayed
    writes stay the memtable and that log is appended to again (LevelDB's ``reuse_logs``): no
    table, manifest or fsync at open. Safe because the manifest already names the log as needed
    (``log_number`` at or below it): a crash replays it again, with whatever was appended.

    * few writes in it (``mem.bytes <= memtable_bytes // RESUME_SHARE``): that is all;
    * more (background threads only): the flush thread switches that memtable out as soon as it
      runs, at close at the latest (``db._switch_due``: a new log, its number reserved by one manifest write, exactly a
      writer's memtable switch, so a crash before the flush replays both logs in order) and
      flushes it. The open itself waits for no fsync (a manifest write at open took 10-60 ms of
      wall time on a loaded disk); a writer that fills the memtable first switches it itself."""
    if kind != identity.STORE or len(logs) != 1 or len(ends) != 1 or ends[0] is None:
        return False
    n = logs[0]
    mem.log_number = n
    big = mem.bytes > db.options.memtable_bytes // RESUME_SHARE
    if big and db._bg.thread is None:
        return False  # inline work: the flush would be synchronous anyway (recover's path)
    try:
        db._log = wal.LogWriter(db._fs, os.path.join(db.path, f"{n:06d}.log"), n, db.options.wal_buffer_bytes,
                                ends[0])
    except ValueError:
        if not big:
            return False
        new = db._new_file_number()  # a log that cannot be appended to: switched now
        db._log = wal.LogWriter(db._fs, os.path.join(db.path, f"{new:06d}.log"), new, db.options.wal_buffer_bytes)
        db._imm = mem
        db._mem = MemTable(new, db._seq + 1)
        return True
    mem.base = db._seq + 1  # the sequences of writes the fast paths will add (:mod:`.memtable`)
    db._mem = mem
    if big:
        db._switch_due = mem
    return True


def recover(db, kind: str) -> None:
    """Recover ``db``'s state (a :class:`~.db.DB` being opened, folder of ``kind``): the table set,
    the logs replayed into an L0 table, a new log and memtable, one manifest write, then the old
    logs deleted. Sets ``db._seq``, ``db._log``, ``db._mem``, ``db._imm`` and ``db._state``."""
    fs, vs = db._fs, db._vs
    exists = kind in (identity.STORE, identity.LEGACY)
    logs = vs.recover(exists, kind == identity.LEGACY)
    if vs.store_filter is not None:  # before a replayed log is written as a table: that table is added to it
        vs.store_filter.load(fs, db.path, vs.current)
    ends: list = []
    mem, db._seq = replay(fs, db.path, logs, db.options.paranoid_checks, vs.last_seq, ends)
    db._imm = None
    if _resume(db, kind, logs, ends, mem):
        db._state = (db._mem, db._imm, vs.current)
        return
    if len(mem):
        ref = db._write_table(mem, 0)
        vs.current = vs.current.apply(set(), [ref])  # made durable by the save below
    log_number = db._new_file_number()
    db._log = wal.LogWriter(fs, os.path.join(db.path, f"{log_number:06d}.log"), log_number, db.options.wal_buffer_bytes)
    db._mem = MemTable(log_number, db._seq + 1)
    db._imm = None
    vs.save(log_number, db._seq)
    for n in logs:
        fs.remove(os.path.join(db.path, f"{n:06d}.log"))
    if kind == identity.LEGACY:  # after the first manifest with reservations is durable
        identity.claim(fs, db.path)
    db._state = (db._mem, None, vs.current)
