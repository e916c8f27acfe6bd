"""The version set (issue 14): the one owner of the manifest, file numbers and the current version,
checked on its own, below the DB."""

from __future__ import annotations

import os

import pytest

from bloomdb.errors import CorruptionError
from bloomdb.lsm import DB
from bloomdb.lsm import manifest as mf
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.version_set import RESERVE, VersionSet
from lsm_helpers import ManifestHookFS, small_options


class _FailingManifest(ManifestHookFS):
    """Real files; the next ``fail`` manifest writes (replaces or appends) raise."""

    def __init__(self):
        super().__init__()
        self.fail = 0

    def before_manifest_write(self, path):
        if self.fail:
            self.fail -= 1
            raise OSError("injected manifest failure")


def _manifest(path) -> mf.ManifestState:
    with open(os.path.join(path, "MANIFEST"), "rb") as fh:
        return mf.decode(fh.read(), "MANIFEST")


def test_file_numbers_are_reserved_by_a_durable_manifest_before_they_are_handed_out(tmp_path):
    vs = VersionSet(RealFS(fsync=False), str(tmp_path), None)
    assert vs.recover(False) == []
    n = vs.new_file_number(5)
    assert _manifest(tmp_path).next_file >= n + RESERVE > n
    assert _manifest(tmp_path).last_seq == 5
    nums = [vs.new_file_number(5) for _ in range(RESERVE + 3)]
    assert nums == list(range(n + 1, n + RESERVE + 4))
    assert _manifest(tmp_path).next_file > nums[-1]  # a second reservation was written in time


def test_a_failed_reservation_hands_out_nothing_and_a_failed_edit_keeps_the_version(tmp_path):
    fs = _FailingManifest()
    vs = VersionSet(fs, str(tmp_path), None)
    vs.recover(False)
    fs.fail = 1
    with pytest.raises(OSError):
        vs.new_file_number(0)
    n = vs.new_file_number(0)  # the same number, now reserved
    assert n == 1 and _manifest(tmp_path).next_file >= n + RESERVE
    before = vs.current
    fs.fail = 1
    with pytest.raises(OSError):
        vs.log_and_apply(set(), [], 7, 0)
    assert vs.current is before and vs.log_number != 7


def test_recovery_reads_back_the_tables_and_names_the_logs_to_replay(tmp_path):
    p = str(tmp_path / "db")
    with DB.open(p, small_options()) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"v" * 50)
        db.flush()
        db.put(b"after", b"flush")  # only in the log
        tables = sorted(r.number for r in db._version.all_refs())
    vs = VersionSet(RealFS(fsync=False), p, None)
    logs = vs.recover(True)
    assert sorted(r.number for r in vs.current.all_refs()) == tables and tables
    assert len(logs) == 1 and os.path.exists(os.path.join(p, f"{logs[0]:06d}.log"))
    assert vs.next_file > max(tables + logs) and vs.last_seq >= 3000
    os.remove(os.path.join(p, f"{tables[0]:06d}.sst"))
    with pytest.raises(CorruptionError, match="missing"):
        VersionSet(RealFS(fsync=False), p, None).recover(True)
