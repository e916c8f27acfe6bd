"""Run a compaction :class:`~.policy.Task`: read the inputs, merge newest-wins, write the outputs.

Merge rules (LevelDB's): entries are ordered by key, then sequence descending. A version is
dropped when a newer version of the same key is already visible to every snapshot (its sequence
is ``<= smallest_snapshot``). A deletion is dropped only when it is itself visible to every
snapshot *and* the task is ``bottom`` (no deeper level overlaps the key range, so no older value
can be hiding under it). Outputs are cut at ``table_bytes``, never between two versions of a key.
Range tombstones (:mod:`.tombstones`): an entry a tombstone visible to every snapshot hides is
dropped; the inputs' tombstones go to the first output table unless nothing older can be under
them any more.

Cost: every input entry is decoded once, merged once (a k-way merge over the sorted runs:
each L0 table, plus the next level's tables as one run) and encoded once, all in numba kernels
that release the GIL, so a compaction barely slows the writer; no Python object per entry. The
kept keys are gathered; the values are not (the builder reads each where decoding put it). The
inputs take two kernel calls whatever their number (decode; merge, gather and split): each
return to Python from this background thread may wait up to the interpreter's switch interval
for the GIL behind a busy writer, and it was four calls per input table and five more. The
output tables' files are written, fsynced and renamed by ``FILE_WRITERS`` file writer threads
while the next outputs are laid out (:class:`OutputFiles`): a compaction no longer waits for each
fsync in turn, and the fsyncs of several outputs overlap -- each one's wait, and each writer
thread's wait for the GIL after its system calls, which behind a busy writer took up to a switch
interval each (one file writer thread: ~7 ms per 2 MiB table in a 1M fillbatch, the compaction
thread waiting ~1 s of its ~3 s for it; docs/benchmarks.md, "the WAL's page faults").
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..sstable import Table
from ..sstable.cached_reader import open_table
from ...checksum import HW_RANGES
from ..sstable._block_kernels import gather
from ..sstable.builder import table_parts, write_table_file
from ..sstable.reader import decode_tables
from . import _merge_kernels as K
from . import tombstones
from .policy import Task


def table_path(folder: str, number: int) -> str:
    return os.path.join(folder, f"{number:06d}.sst")


def write_table(ctx, number: int, arrays, level: int, last_level: bool, range_dels=()):
    """Write the packed entries ``arrays`` (``kdata, koff, trailers, vdata, voff``, and optionally
    ``vidx``: entry ``i``'s value is item ``vidx[i]`` of ``vdata``/``voff``) and the range
    tombstones ``range_dels`` as table ``number`` for ``level`` under ``ctx``'s options (the
    level's filter, block size, compression); returns ``(TableInfo, Table)``.
    ``last_level``: nothing lives below ``level`` (the options may pick another filter there).
    Cost: one pass over the entries, one file.

    A flush's table (or recovery's: the only callers): its keys go into the store filter
    (``ctx.store_filter``, :meth:`bloomdb.lsm.store_filter.StoreFilter.flushed`) before the
    caller installs it."""
    info, finish = encode_table(ctx, number, arrays, level, last_level, range_dels)
    table = finish()
    sf = getattr(ctx, "store_filter", None)
    if sf is not None:
        sf.flushed(number, arrays[0], arrays[1])
    return info, table


def encode_table(ctx, number: int, arrays, level: int, last_level: bool, range_dels=()):
    """:func:`write_table` in two steps: the table's bytes are laid out now; the returned
    ``finish()`` writes, fsyncs and renames the file and opens the table (the ``Table``).
    ``(TableInfo, finish)``."""
    opts = ctx.options
    path = table_path(ctx.folder, number)
    if arrays[2].shape[0] == 0:
        arrays = tombstones.sentinel(range_dels)
    vidx = arrays[5] if len(arrays) > 5 else None
    parts, info = table_parts(number, *arrays[:5], opts.filter_for(level, last_level), opts.block_size,
                              opts.restart_interval, opts.compression, opts.partition_blocks(), tuple(range_dels),
                              opts.prefix_extractor, opts.whole_key_filtering, vidx)

    def finish():
        write_table_file(ctx.fs, path, parts)
        t = open_table(ctx.fs, path, number, ctx.cache, level)
        t.filter_copy_due = True  # its filter is read from a copy beside the others' (..probe.directory)
        return t

    return info, finish


#: threads writing compaction outputs (:func:`_file_writer`): their fsyncs overlap (ext4 commits them together)
FILE_WRITERS = 3
_POOLS: dict = {}  # the process-wide pools by name, made on first use (:func:`_pool`)
_POOLS_LOCK = threading.Lock()


def _pool(name: str, workers: int = 1) -> ThreadPoolExecutor:
    """The process-wide pool ``name`` of ``workers`` threads (one: FIFO), made on first use."""
    with _POOLS_LOCK:
        p = _POOLS.get(name)
        if p is None:
            p = _POOLS[name] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        return p


def _file_writer() -> ThreadPoolExecutor:
    """The process-wide ``FILE_WRITERS`` threads that write, fsync and rename compaction outputs."""
    return _pool("bloomdb-lsm-files", FILE_WRITERS)


def _forget_file_writer_in_child() -> None:
    """After a fork the child has none of the parent's threads: a pool (or a lock) inherited from
    the parent would take work and never run it. The child makes its own on first use."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_file_writer_in_child)


def release_later(holder: list):
    """Empty ``holder`` -- the compaction thread's last references to the version a compaction
    replaced -- in a process-wide release thread; returns its future. Dropping that version
    unmaps the input tables' files (deleted already: the kernel frees their pages then), each
    ``munmap`` a system call that releases the GIL, and taking it back behind a busy writer waits
    up to a switch interval: a compaction of ten inputs waited tens of milliseconds after its
    work was done (py-spy of a 2M fillrandom: ~14% of the compaction thread's samples in
    ``mmap_object_dealloc``). Not the file writer thread: outputs would queue behind it."""
    return _pool("bloomdb-lsm-release").submit(holder.clear)


class OutputFiles:
    """A compaction's output tables written beside the build of the next one: table ``k``'s file
    write, fsync (~3-12 ms of waiting on this disk), rename and open run in a file writer thread
    while the compaction thread lays out table ``k + 1`` (and the other file writer threads write
    tables ``k - 1``, ...). At most ``depth`` tables are waiting (their bytes held in memory: by
    default one more than there are file writer threads). :meth:`results` waits for every table, in order, and raises the
    first failure (a failed fsync, an injected fault) -- the edit is installed only after it, so
    every table the manifest names is durable, as before."""

    def __init__(self, depth: int = FILE_WRITERS + 1):
        self.depth = max(1, depth)
        self.pending: list = []

    def add(self, info, finish) -> None:
        if len(self.pending) >= self.depth:
            self.pending[-self.depth][1].result()  # bound the bytes held; a failure raises here
        self.pending.append((info, _file_writer().submit(finish)))

    def results(self) -> list:
        """``[(TableInfo, Table)]`` in the order added, every file durable; on a failure, waits for
        the other writes still running (nothing is left writing after the compaction ends), then
        raises it."""
        out, error = [], None
        for info, fut in self.pending:
            try:
                out.append((info, fut.result()))
            except BaseException as e:  # noqa: BLE001 - the first is re-raised below
                error = error or e
        if error is not None:
            raise error
        return out


def decode_inputs(tables):
    """Every entry of ``tables`` (in order) as packed ``(kdata, koff, trailers, vdata, voff)``
    and each table's entry count: in one kernel call (:func:`._merge_kernels.decode_inputs`,
    the mapped files read by address) when every table is mapped, raw and intact on a host with
    the SSE4.2 CRC; else table by table (:func:`..sstable.reader.decode_tables`, which decodes
    compressed blocks and raises ``CorruptionError`` naming a damaged one)."""
    views = [t.lookup_arrays() if HW_RANGES and hasattr(t, "lookup_arrays") else None for t in tables]
    if views and all(v is not None for v in views):
        words = np.array([(b.ctypes.data, b.shape[0], i.ctypes.data, i.shape[0]) for b, i, _ in views], np.int64)
        ok, *arrays, counts = K.decode_inputs(words.ravel())
        if ok:
            return tuple(arrays), counts.tolist()
    return decode_tables(tables)


def merge_arrays(runs, smallest_snapshot: int, bottom: bool, range_dels=(), table_bytes: int = 2 << 20):
    """Merge sorted runs (each a list of tables in key order) with the drop rules: the kept
    entries in order as ``(kdata, koff, trailers, vdata, voff, vidx)`` -- keys and trailers
    gathered, values left where decoding put them (entry ``i``'s value is item ``vidx[i]``: the
    builder reads it there, so values are copied once less) -- and the end of each output table
    of about ``table_bytes`` (:func:`._merge_kernels.split_points`). ``range_dels``: tombstones
    whose hidden entries may go (those visible to every snapshot are used). Cost: two kernel
    calls without live tombstones (decode; merge, gather and split)."""
    tables = [t for run in runs for t in run]
    (kdata, koff, trs, vdata, voff), counts = decode_inputs(tables)
    starts = [0]
    i = 0
    for run in runs:
        starts.append(starts[-1] + sum(counts[i : i + len(run)]))
        i += len(run)
    starts = np.array(starts, np.int64)
    live = [t for t in range_dels if t[2] <= smallest_snapshot]
    if not live:
        idx, kd, ko, tr, cuts = K.merge_and_split(kdata, koff, trs, voff, starts, smallest_snapshot, bottom, table_bytes)
        return (kd, ko, tr, vdata, voff, idx), cuts.tolist()
    idx = K.merge_runs(kdata, koff, trs, starts, smallest_snapshot, bottom)
    idx = idx[tombstones.Fragments(live).not_covered(kdata, koff, trs, idx)]
    kd, ko = gather(kdata, koff, idx)
    vsizes = np.zeros(idx.shape[0] + 1, np.int64)  # the kept values' sizes, as offsets
    np.cumsum(voff[idx + 1] - voff[idx], out=vsizes[1:])
    cuts = K.split_points(kd, ko, vsizes, table_bytes).tolist() if idx.shape[0] else []
    return (kd, ko, trs[idx], vdata, voff, idx), cuts


def run(task: Task, version, ctx) -> tuple[set[int], list[tuple[int, object, Table]], int]:
    """Execute ``task`` against ``version`` (its ``all_refs()``: objects with ``number``,
    ``level``, ``info`` and ``table``; its ``levels``). ``ctx`` gives ``fs``, ``folder``,
    ``options``, ``cache``, ``new_file_number()`` and ``smallest_snapshot``. Returns
    ``(deleted table numbers, added (level, TableInfo, Table), bytes written)``; the caller
    installs the edit.
    """
    by_number = {r.number: r for r in version.all_refs()}
    out_level = task.level + 1
    if task.trivial_move:
        refs = [by_number[n] for n in task.inputs]
        return {r.number for r in refs}, [(out_level, r.info, r.table) for r in refs], 0
    runs = [[by_number[n].table] for n in task.inputs]  # L0 tables overlap: one run each
    below = sorted((by_number[n] for n in task.next_inputs), key=lambda r: r.info.min_key)
    if below:
        runs.append([r.table for r in below])  # one level's tables: a single sorted run
    every = [t for r in version.all_refs() for t in r.table.range_dels]
    (kd, ko, tr, vd, vo, vidx), cuts = merge_arrays(runs, ctx.smallest_snapshot, task.bottom, every,
                                                    ctx.options.table_bytes)
    inputs = set(task.all_inputs)
    others = [r for r in version.all_refs() if r.number not in inputs]
    keep = [t for n in task.all_inputs for t in by_number[n].table.range_dels
            if not tombstones.droppable(t, others, ctx.smallest_snapshot)]
    last_level = all(not version.levels[i] for i in range(out_level + 1, len(version.levels)))
    files = OutputFiles()
    a = 0
    if not cuts and keep:
        cuts = [0]  # no entry kept: one table carries the tombstones
    try:
        for b in cuts:
            arrays = (kd[ko[a] : ko[b]], ko[a : b + 1] - ko[a], tr[a:b], vd, vo, vidx[a:b])
            files.add(*encode_table(ctx, ctx.new_file_number(), arrays, out_level, last_level, keep))
            keep = ()  # the first output carries the tombstones
            a = b
    finally:
        tables = files.results()  # every output durable (or the first failure raised) before the edit
    added = [(out_level, info, table) for info, table in tables]
    return inputs, added, sum(info.file_size for info, _ in tables)
