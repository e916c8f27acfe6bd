"""A process forked from one that has used a store can open and compact stores of its own
(``multiprocessing``'s default start method on Linux is fork): the threads and locks the LSM
keeps process-wide are made afresh in the child, never inherited half-alive."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from bloomdb.lsm import DB
from lsm_helpers import small_options

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _fill_and_compact(path: str) -> None:
    with DB.open(path, small_options()) as db:
        for i in range(3000):
            db.put(b"k%06d" % i, b"v" * 50)
        db.compact_range()
        assert db.get(b"k000042") == b"v" * 50


def _child(path: str) -> None:
    _fill_and_compact(path)
    os._exit(0)


def test_a_forked_child_compacts_its_own_store(tmp_path):
    _fill_and_compact(str(tmp_path / "parent"))  # the parent's compactions started the LSM's threads
    child = multiprocessing.get_context("fork").Process(target=_child, args=(str(tmp_path / "child"),))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child hung in its store's compaction")
    assert child.exitcode == 0
    with DB.open(str(tmp_path / "child"), small_options()) as db:
        assert db.get(b"k002999") == b"v" * 50
