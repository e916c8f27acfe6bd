"""Crash safety: a forked child writes batches with ``sync=True`` and is killed with SIGKILL at
random moments (while flushes and compactions run in its background thread). After every kill
the store reopens with every acknowledged batch present and no batch half-applied."""

from __future__ import annotations

import pytest

from bloomdb.bench import stress


def _cycles(tmp_path, n, seed):
    """``n`` SIGKILL cycles (bench.stress.kill_check); every problem it finds fails the test."""
    problems: list[str] = []
    bad = stress.kill_check(str(tmp_path / "db"), n, seed=seed, report=problems.append)
    assert bad == 0 and not problems, problems[:10]


def test_sigkill_crash_50(tmp_path):
    _cycles(tmp_path, 50, seed=1)


@pytest.mark.slow
def test_sigkill_crash_many(tmp_path):
    _cycles(tmp_path, 100, seed=2)
