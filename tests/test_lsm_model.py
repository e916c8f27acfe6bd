"""Model-based tests: the store against a dict, with tiny memtables so flushes and compactions
happen constantly; snapshots against frozen copies of the dict; scans against sorted items."""

from __future__ import annotations

import pytest

from bloomdb.bench import stress

from lsm_helpers import small_options


def _run_model(path, ops, seed, **opt):
    problems: list[str] = []
    bad = stress.model_check(path, ops, seed, report=problems.append, options=small_options(**opt))
    assert bad == 0, problems[:10]


@pytest.mark.parametrize("bg", [False, True])
def test_model_small(tmp_path, bg):
    _run_model(str(tmp_path / "db"), 15000, seed=7 + bg, background_compaction=bg)


def test_model_compressed_and_other_filters(tmp_path):
    _run_model(str(tmp_path / "z"), 2500, seed=3, compression="zstd", block_cache_bytes=4096,
               background_compaction=False)
    _run_model(str(tmp_path / "l"), 2500, seed=4, compression="lz4", filter="standard:8",
               filter_per_level={0: "blocked:16", 2: None}, optimize_filters_for_hits=True)
    _run_model(str(tmp_path / "n"), 1500, seed=5, filter=None)
    _run_model(str(tmp_path / "p"), 3000, seed=6, partitioned_filters=True, filter_partition_blocks=2,
               background_compaction=False)


def test_model_with_prefix_filters(tmp_path):
    from bloomdb.lsm.prefix import CappedPrefix, FixedPrefix

    _run_model(str(tmp_path / "f"), 4000, seed=12, prefix_extractor=FixedPrefix(5), background_compaction=False)
    _run_model(str(tmp_path / "c"), 3000, seed=13, prefix_extractor=CappedPrefix(6), whole_key_filtering=False)


@pytest.mark.slow
def test_model_large(tmp_path):
    _run_model(str(tmp_path / "db"), 50000, seed=11)
