"""A flushed memtable's sorted run, read from its write-ahead log instead of its dict.

:func:`table_arrays` answers what :meth:`MemTable.table_arrays <.memtable.MemTable.table_arrays>`
answers -- the newest version of each key in table order -- from the bytes of the memtable's
log, in one numba call that releases the GIL (:func:`._logrun_kernels.log_run`): the flush
thread then holds the GIL only to read the file and to call the kernel, where packing the dict
held it for ~0.3-0.5 us per key, time taken from the writer thread (docs/benchmarks.md).

It is used only when it must give the same answer, else ``None`` (the caller packs the dict):
the memtable keeps no older versions (``history``: a snapshot was live), its log is the plain
real file system's (a test's file system may inject faults into reads), the log reads as
well-formed records, and what they hold matches the memtable exactly -- the bytes it counted,
its number of keys (when no batch put is pending: ``MemTable.defer``) and of range deletions. A
memtable holds exactly its log's writes (a write is logged, then applied, under the store's
lock; a new memtable gets a new log; a reused log's memtable is its replay), so the check fails
only if that ever stops being true. Cost: one read of the log (its size plus at most 1 MiB of
reserved zeros), the kernel's two passes, one sort.
"""

from __future__ import annotations

import numpy as np

from . import _logrun_kernels as K
from .fs import RealFS


def table_arrays(mem, fs, path: str):
    """``(kdata, koff, trailers, vdata, voff)`` of memtable ``mem`` read from its log at
    ``path`` (``fs``: the store's file system), or ``None`` when the dict must be used (see the
    module's docstring)."""
    if mem.history or mem.log_number <= 0 or type(fs) is not RealFS:
        return None
    try:
        data = np.fromfile(path, np.uint8)
    except OSError:
        return None
    ok, kd, ko, tr, vd, vo, nbytes, nranges = K.log_run(data)
    if not ok or nbytes != mem.bytes or nranges != len(mem.rdels):
        return None
    if not mem.pending_keys and tr.shape[0] != len(mem.latest):  # (pending batch puts: the dict is not whole)
        return None
    return kd, ko, tr, vd, vo
