"""Run a compaction :class:`~.policy.Task`: read the inputs, merge newest-wins, write the outputs.

Merge rules (LevelDB's): entries are ordered by key, then sequence descending. A version is
dropped when a newer version of the same key is already visible to every snapshot (its sequence
is ``<= smallest_snapshot``). A deletion is dropped only when it is itself visible to every
snapshot *and* the task is ``bottom`` (no deeper level overlaps the key range, so no older value
can be hiding under it). Outputs are cut at ``table_bytes``, never between two versions of a key.

Cost: every input entry is decoded once (numba, per block), sorted once (Python's timsort over
already-sorted runs, i.e. a k-way merge in C), and encoded once (numba).
"""

from __future__ import annotations

import os

from ..sstable import Table, build_table
from ..version import TableRef, Version
from .policy import Task


def table_path(folder: str, number: int) -> str:
    return os.path.join(folder, f"{number:06d}.sst")


def merge_entries(tables, smallest_snapshot: int, bottom: bool):
    """Merged ``(keys, trailers, values)`` of ``tables`` after applying the drop rules."""
    rows = []
    for t in tables:
        for i in range(t.num_blocks()):
            keys, trs, vals = t.decode_block(i)
            rows.extend(zip(keys, [-x for x in trs], vals))
    rows.sort()  # (key, -trailer) pairs are unique, so values are never compared
    out_k, out_t, out_v = [], [], []
    last_key = None
    last_seq = -1
    for k, ntr, v in rows:
        tr = -ntr
        seq = tr >> 8
        if k != last_key:
            last_key = k
            last_seq = -1
        drop = last_seq != -1 and last_seq <= smallest_snapshot
        if not drop and (tr & 0xFF) == 0 and bottom and seq <= smallest_snapshot:
            drop = True
        last_seq = seq
        if not drop:
            out_k.append(k)
            out_t.append(tr)
            out_v.append(v)
    return out_k, out_t, out_v


def split_points(keys: list[bytes], values: list[bytes], table_bytes: int) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of the merged entries, one per output table."""
    out = []
    start = 0
    size = 0
    n = len(keys)
    for i in range(n):
        size += len(keys[i]) + len(values[i]) + 12
        if size >= table_bytes and (i + 1 == n or keys[i + 1] != keys[i]):
            out.append((start, i + 1))
            start = i + 1
            size = 0
    if start < n:
        out.append((start, n))
    return out


def run(task: Task, version: Version, ctx) -> tuple[set[int], list[TableRef], int]:
    """Execute ``task`` against ``version``. ``ctx`` gives ``fs``, ``folder``, ``options``,
    ``cache``, ``new_file_number()`` and ``smallest_snapshot``. Returns
    ``(deleted table numbers, added table refs, bytes written)``; the caller installs the edit.
    """
    by_number = {r.number: r for r in version.all_refs()}
    out_level = task.level + 1
    if task.trivial_move:
        r = by_number[task.inputs[0]]
        return {r.number}, [TableRef(out_level, r.info, r.table)], 0
    inputs = [by_number[n].table for n in task.all_inputs]
    keys, trs, vals = merge_entries(inputs, ctx.smallest_snapshot, task.bottom)
    opts = ctx.options
    last_level = all(not version.levels[i] for i in range(out_level + 1, len(version.levels)))
    spec = opts.filter_for(out_level, last_level)
    added = []
    written = 0
    for a, b in split_points(keys, vals, opts.table_bytes):
        number = ctx.new_file_number()
        path = table_path(ctx.folder, number)
        info = build_table(ctx.fs, path, number, keys[a:b], trs[a:b], vals[a:b], spec,
                           opts.block_size, opts.restart_interval, opts.compression)
        written += info.file_size
        added.append(TableRef(out_level, info, Table(ctx.fs, path, number, ctx.cache)))
    return set(task.all_inputs), added, written
