"""Shared helpers of the LSM store tests."""

from __future__ import annotations

import os

import pytest

from bloomdb.bench.stress import stress_options
from bloomdb.lsm import Options
from bloomdb.lsm.fs import RealFS


def small_options(**kw) -> Options:
    """Tiny memtables/tables/levels so flushes and compactions happen every few hundred ops."""
    kw.setdefault("fs", RealFS(fsync=False))
    return stress_options(**kw)


def store_filter_options(**kw) -> Options:
    """:func:`small_options` with 3000-byte memtables: the store-filter tests' stores."""
    kw.setdefault("memtable_bytes", 3000)
    return small_options(**kw)


@pytest.fixture
def store_filter_from_the_first_table(monkeypatch):
    """The store filter from the first table on (a store under ``MIN_ENTRIES`` entries keeps none)."""
    from bloomdb.lsm import store_filter

    monkeypatch.setattr(store_filter, "MIN_ENTRIES", 0)


def check_cursors_like_plyvel(db, ldb, p: bytes, snap, lsnap, takes=(3, 12, None)) -> None:
    """The store's prefix iterators (read ``takes`` entries), at a snapshot, keys only, a bounded
    range and seeks then a few steps, all as LevelDB's (``ldb``, ``lsnap``) answer them."""
    import itertools

    for take in takes:
        got = list(itertools.islice(db.iterator(prefix=p), take))
        assert got == list(itertools.islice(ldb.iterator(prefix=p), take)), (p, take)
    assert list(db.iterator(prefix=p, snapshot=snap)) == list(lsnap.iterator(prefix=p)), p
    assert list(db.iterator(prefix=p, include_value=False)) == list(ldb.iterator(prefix=p, include_value=False))
    stop = p + b"5"
    assert list(db.iterator(start=p, stop=stop)) == list(ldb.iterator(start=p, stop=stop)), p
    with db.iterator() as it, ldb.iterator() as lit:  # seek, read a few, seek again, step back
        for target in (p, p + b"1", p[:-1]):
            it.seek(target)
            lit.seek(target)
            assert list(itertools.islice(it, 7)) == list(itertools.islice(lit, 7)), target
            assert it.prev() == lit.prev(), target


class ManifestHookFS(RealFS):
    """Real files (no fsync) that call :meth:`before_manifest_write` before every write of the
    manifest: an atomic replace (``write_atomic``) or an append to it (:mod:`bloomdb.lsm.manifest`
    appends a record per edit) -- so a test can fail or hold manifest writes of either kind."""

    def __init__(self):
        super().__init__(fsync=False)

    def before_manifest_write(self, path: str) -> None:
        """Override: raise to fail the write, block to hold it."""

    def write_atomic(self, path, data):
        if os.path.basename(path) == "MANIFEST":
            self.before_manifest_write(path)
        super().write_atomic(path, data)

    def open_append(self, path):
        f = super().open_append(path)
        if os.path.basename(path) == "MANIFEST":
            write, hook = f.write, self.before_manifest_write

            def hooked(data):
                hook(path)
                write(data)

            f.write = hooked
        return f
