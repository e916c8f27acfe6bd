"""Shared helpers of the LSM store tests."""

from __future__ import annotations

from bloomdb.bench.stress import stress_options
from bloomdb.lsm import Options
from bloomdb.lsm.fs import RealFS


def small_options(**kw) -> Options:
    """Tiny memtables/tables/levels so flushes and compactions happen every few hundred ops."""
    kw.setdefault("fs", RealFS(fsync=False))
    return stress_options(**kw)
