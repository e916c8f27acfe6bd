"""Range scans: merge the memtables and every level into ``(key, value)`` pairs, chunk by chunk.

Each source (a memtable range, an L0 table, or one level's tables in key order) is read as
packed chunks of entries (``CHUNK_BLOCKS`` data blocks decoded by one kernel call). A round
takes, from every source, the entries up to a *bound* -- the smallest last key among the
chunks of sources that have more to read (forward; the largest first key in reverse) -- so no
entry beyond the bound can be missing from the round; versions of one key never straddle a
block or a table, so everything up to and including the bound key is complete. The round's
entries are merged by key and the visible version per key is picked by one kernel
(:func:`._scan_kernels.merge_gather`: newest sequence ``<= snap``; deletions drop the key), which
writes the visible keys and values packed in key order; they become Python bytes in two pyarrow
``to_pylist`` C loops and are handed out through ``zip``/``itertools.chain`` (no Python frame
per pair). A round with range tombstones (``hide``) or more than :data:`MAX_GATHER_RUNS` runs
takes the older path: concatenate, :func:`._scan_kernels.merge_visible`, pick by index.

Cost per entry (1M-key store, a memtable and three levels, thread CPU on a loaded 2-core
machine, docs/benchmarks.md "scan by stretches"): blocks checked and decoded in one kernel call
~33 ns (~53 ns on a block range's first read: its CRC32C and the map's page faults), merge and
gather ~20 ns (:func:`._scan_kernels.merge_visible` merges by stretches), bytes objects ~35 ns,
the caller's loop, ``zip`` and per-round Python ~90 ns; per round (about ``CHUNK_BLOCKS`` blocks of
every source) a few kernel calls and ~0.1 ms of Python: a 1M-entry scan (thread CPU per entry,
loaded machine) took 186 / 169 / 159 / 152 ns with 32 / 64 / 128 / 256 blocks a chunk, 165 /
175 / 174 ns with 256 / 512 / 1024 (the chunks then outgrow the caches). A round of several runs is
gathered in key order in both directions (a reverse scan reverses the round's two lists).
"""

from __future__ import annotations

import itertools
from operator import itemgetter
from typing import Iterator

import numpy as np
import pyarrow as pa

from . import _scan_kernels as SK
from .sstable.reader import concat_packed

CHUNK_BLOCKS = 256
#: a cursor's rounds (``first_blocks`` given: an iterator stepped by ``next()``/``prev()``) grow
#: to this many blocks only: its window copies each round's entries into lists of pairs, and
#: 256-block rounds made a stepped 1M iteration 298 -> 364 ns/entry (thread CPU, loaded machine)
CURSOR_CHUNK_BLOCKS = 64
MAX_GATHER_RUNS = 32  #: a round with more runs (many L0 tables) takes the concatenating path
#: the run counts :func:`._scan_kernels.merge_gather` is compiled for (a round's runs are padded)
GATHER_SIZES = (8, MAX_GATHER_RUNS)
_EMPTY = (np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint8),
          np.zeros(1, np.int64))


def _slice(p, a: int, b: int):
    """Entries ``a..b`` of packed ``p`` as a packed tuple whose offsets start at 0."""
    kd, ko, tr, vd, vo = p
    return (kd[ko[a] : ko[b]], ko[a : b + 1] - ko[a], tr[a:b], vd[vo[a] : vo[b]], vo[a : b + 1] - vo[a])


def _bytes_list(data, off, m: int) -> list[bytes]:
    """Items ``0..m`` of packed ``data``/``off`` as a list of bytes (one pyarrow C loop)."""
    return pa.Array.from_buffers(pa.large_binary(), m, [None, pa.py_buffer(off), pa.py_buffer(data)]).to_pylist()


def _gather_round(takes, snap: int, reverse: bool, values: bool):
    """One round's runs merged by :func:`._scan_kernels.merge_gather` (the visible entries
    packed in scan order). The runs go in as tuples padded with empty runs to
    :data:`GATHER_SIZES` (one compiled variant per size: few, so a process loads them once --
    loading a cached variant costs ~10 ms, a scan's first round paid it per store shape); every
    array is writable (memtable chunks are copied when made), so every tuple holds one array type."""
    k = GATHER_SIZES[0] if len(takes) <= GATHER_SIZES[0] else MAX_GATHER_RUNS
    runs = list(takes) + [_EMPTY] * (k - len(takes))
    kds, kos, trs, vds, vos = zip(*runs)
    return SK.merge_gather(kds, kos, trs, vds, vos, snap, reverse, values)


def _one_run(p, reverse: bool, values: bool):
    """``(keys, values)`` of a run that is its own output (:func:`._scan_kernels.all_visible`),
    made straight from its packed arrays, in scan order."""
    n = len(p[2])
    keys = _bytes_list(p[0], p[1], n)
    vals = _bytes_list(p[3], p[4], n) if values else None
    if reverse:
        keys.reverse()
        if vals is not None:
            vals.reverse()
    return keys, vals


def _key_at(p, i: int) -> np.ndarray:
    return p[0][p[1][i] : p[1][i + 1]]


def table_chunks(tables, start, end, reverse: bool, first_blocks: int | None = None) -> Iterator[tuple]:
    """Packed chunks of the tables' blocks that may hold keys in ``[start, end)``, in key order
    (tables in key order, non-overlapping), or in reverse (each chunk still ascending inside).
    ``first_blocks``: the first chunk decodes that many blocks and each next one twice as many, up
    to ``CURSOR_CHUNK_BLOCKS`` (a cursor that seeks and reads a few entries decodes a block or two,
    not ``CHUNK_BLOCKS``); default ``CHUNK_BLOCKS`` from the start (a scan)."""
    order = reversed(tables) if reverse else tables
    cap = CHUNK_BLOCKS if first_blocks is None else CURSOR_CHUNK_BLOCKS
    step = cap if first_blocks is None else max(1, min(first_blocks, cap))
    for t in order:
        nb = t.num_blocks()
        a = 0 if start is None else t.first_block_for(start)
        b = nb - 1 if end is None else min(nb - 1, t.first_block_for(end))
        if a > b or a >= nb:
            continue
        if not reverse:
            i = a
            while i <= b:
                j = min(b, i + step - 1)
                yield t.decode_arrays(i, j)
                i = j + 1
                step = min(cap, step * 2)
        else:
            j = b
            while j >= a:
                i = max(a, j - step + 1)
                yield t.decode_arrays(i, j)
                j = i - 1
                step = min(cap, step * 2)


class _Source:
    """One sorted input: its current chunk (clipped to ``[start, end)``) and the chunks to come."""

    __slots__ = ("chunks", "cur", "more", "lo", "hi", "reverse")

    def __init__(self, chunks, lo, hi, reverse):
        self.chunks = chunks
        self.cur = _EMPTY
        self.more = True
        self.lo = lo
        self.hi = hi
        self.reverse = reverse

    def fill(self) -> None:
        """Load chunks until the current one holds an entry in range, or the source ends."""
        while self.more and len(self.cur[2]) == 0:
            p = next(self.chunks, None)
            if p is None:
                self.more = False
                return
            n = len(p[2])
            a = 0 if self.lo is None else SK.count_below(p[0], p[1], self.lo, False)
            b = n if self.hi is None else SK.count_below(p[0], p[1], self.hi, False)
            if (not self.reverse and b < n) or (self.reverse and a > 0):
                self.more = False  # the range ends inside this chunk
            self.cur = p if (a, b) == (0, n) else _slice(p, a, b)


def merged(sources: list[Iterator[tuple]], start, end, reverse: bool, snap: int, on_close=None) -> Iterator[tuple[bytes, bytes]]:
    """``(key, value)`` of the visible versions of the merged ``sources`` (each an iterator of
    packed chunks in scan order, newest source first) with ``start <= key < end``.
    ``on_close()`` is called once when the iteration ends, fails or is dropped.

    The pairs of a round come from a C ``zip``, chained by ``itertools.chain``: no Python frame
    runs per pair, only per round."""
    return itertools.chain.from_iterable(_rounds(sources, start, end, reverse, snap, on_close))


def _rounds(sources, start, end, reverse, snap, on_close):
    try:
        for keys, vals in visible_rounds(sources, start, end, reverse, snap):
            yield zip(keys, vals)
    finally:
        if on_close is not None:
            on_close()


def visible_rounds(sources, start, end, reverse: bool, snap: int, values: bool = True, hide=None):
    """Per round, ``(keys, values)`` of the visible entries of the merged ``sources`` with
    ``start <= key < end`` in scan order: two sequences of ``bytes`` (``values`` is ``None`` when
    ``values=False``: no value becomes a Python object). ``hide(kdata, koff, trailers, sel)``, if
    given, returns the entries of ``sel`` (merged indexes) to keep (range tombstones)."""
    lo = None if start is None else np.frombuffer(start, np.uint8)
    hi = None if end is None else np.frombuffer(end, np.uint8)
    srcs = [_Source(s, lo, hi, reverse) for s in sources]
    while True:
        for s in srcs:
            s.fill()
        srcs = [s for s in srcs if len(s.cur[2])]
        if not srcs:
            return
        pending = [s for s in srcs if s.more]
        takes = []
        if pending:
            if not reverse:  # the smallest last key among sources with more to come
                bound = min((_key_at(s.cur, len(s.cur[2]) - 1).tobytes() for s in pending))
            else:  # the largest first key among them
                bound = max((_key_at(s.cur, 0).tobytes() for s in pending))
            b = np.frombuffer(bound, np.uint8)
            for s in srcs:
                p = s.cur
                n = len(p[2])
                if not reverse:
                    c = SK.count_below(p[0], p[1], b, True)  # entries <= bound
                    takes.append(p if c == n else _slice(p, 0, c))
                    s.cur = _EMPTY if c == n else _slice(p, c, n)
                else:
                    c = SK.count_below(p[0], p[1], b, False)  # entries < bound stay
                    takes.append(p if c == 0 else _slice(p, c, n))
                    s.cur = _EMPTY if c == 0 else _slice(p, 0, c)
        else:
            takes = [s.cur for s in srcs]
            for s in srcs:
                s.cur = _EMPTY
        takes = [p for p in takes if len(p[2])]
        if not takes:
            continue
        if hide is None and len(takes) == 1 and SK.all_visible(takes[0][0], takes[0][1], takes[0][2], snap):
            yield _one_run(takes[0], reverse, values)  # nothing to merge or drop: no copy
            continue
        if hide is None and len(takes) <= MAX_GATHER_RUNS:
            # gathered ascending (stretches of a run copied whole), reversed as lists: a round's
            # visible entries do not depend on the direction
            kd, ko, vd, vo, m = _gather_round(takes, snap, False, values)
            if m:
                keys = _bytes_list(kd, ko, m)
                vals = _bytes_list(vd, vo, m) if values else None
                if reverse:
                    keys.reverse()
                    if vals is not None:
                        vals.reverse()
                yield keys, vals
            continue
        kd, ko, tr, vd, vo = concat_packed(takes)
        run_starts = np.cumsum([0] + [len(p[2]) for p in takes])
        sel = SK.merge_visible(kd, ko, tr, run_starts, snap, reverse)
        if hide is not None and sel.shape[0]:
            sel = hide(kd, ko, tr, sel)
        if sel.shape[0] == 0:
            continue
        n = tr.shape[0]
        keys = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(ko), pa.py_buffer(kd)]).to_pylist()
        vals = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(vo), pa.py_buffer(vd)]).to_pylist() if values else None
        if sel.shape[0] == 1:
            i = int(sel[0])
            yield (keys[i],), (None if vals is None else (vals[i],))
        else:
            pick = itemgetter(*sel.tolist())
            yield pick(keys), (None if vals is None else pick(vals))
