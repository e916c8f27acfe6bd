"""Shared helpers of the LSM store tests."""

from __future__ import annotations

from bloomdb.lsm import Options
from bloomdb.lsm.fs import RealFS


def small_options(**kw) -> Options:
    """Tiny memtables/tables/levels so flushes and compactions happen every few hundred ops."""
    base = dict(memtable_bytes=4096, table_bytes=4096, level1_bytes=12000, level_ratio=4, block_size=256,
                level0_trigger=3, level0_stop=6, fs=RealFS(fsync=False))
    base.update(kw)
    return Options(**base)
