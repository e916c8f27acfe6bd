"""db-bench and db-stress run end to end at tiny sizes (their figures are not asserted)."""

from __future__ import annotations

import pytest

from bloomdb.bench import db_bench, stress


def test_db_bench_all_phases_and_peers(tmp_path):
    phases = list(db_bench.PHASES + db_bench.EXTRA_PHASES)
    runs = [db_bench.run_engine("bloomdb", phases, 3000, "blocked:10", progress=False, folder=str(tmp_path))]
    cold = ("coldrandom", "coldmissing")
    want = [x for p in phases for x in ((p, p + "-first1k") if p in cold else (p,))]
    assert [p.phase for p in runs[0].results] == want
    st = runs[0].stats
    assert st["last_sequence"] == 6000  # the read phases ran on the fillrandom store, overwritten once
    assert st["filter_memory_bytes"] > 0 and st["index_memory_bytes"] > 0  # the cold reads loaded them
    scan = next(p for p in runs[0].results if p.phase == "scan")
    assert scan.ops == 3000  # the scan saw every key exactly once
    assert next(p for p in runs[0].results if p.phase == "coldmissing-first1k").ops == 1000
    for peer, mod in (("leveldb", "plyvel"), ("rocksdb", "rocksdict")):
        pytest.importorskip(mod)
        runs.append(db_bench.run_engine(peer, ["fillbatch", "overwrite", "readmissing", "scan", "coldmissing", "seekprefix"], 3000,
                                        None, False, str(tmp_path)))
        assert next(p for p in runs[-1].results if p.phase == "scan").ops == 3000
    text = db_bench.format_runs(runs)
    assert "ratio bloomdb / leveldb" in text and "readmissing" in text and "coldmissing-first1k" in text
    assert "memory held by filters" in text
    before = st["before_reopen"]  # the warm store's write amplification survives the cold phases' reopens
    assert before["write_amplification"] >= 0 and len(before["tables_per_level"]) == 7
    assert "before the first reopen" in text
    assert "seekprefix" in text and st["seekprefix_checks"] >= st["seekprefix_skips"] > 0


@pytest.mark.parametrize("engine,mod", [("bloomdb", "bloomdb"), ("leveldb", "plyvel"), ("rocksdb", "rocksdict")])
def test_db_bench_prefix_seeks_read_the_same_entries(tmp_path, engine, mod):
    """Every engine's ``seek_prefix`` (the seekprefix phase's op) reads the same entries."""
    pytest.importorskip(mod)
    db = db_bench.ENGINES[engine](str(tmp_path / engine), "blocked:10", None, prefix=db_bench.PREFIX)
    try:
        keys, shuffled, _, values = db_bench.make_keys(3000)
        db_bench.batches(db.write_batch, shuffled, values, None)
        db.settle()
        p = keys[1234][: db_bench.PREFIX]
        assert db.seek_prefix(p) == db_bench.SEEK_NEXTS  # 100 keys have it
        assert db.seek_prefix(p[:-1] + b".") == 0
        assert db.seek_prefix(b"%014d" % 29) == db_bench.SEEK_NEXTS and db.seek_prefix(b"%014d" % 30) == 0
    finally:
        db.close()


def test_db_stress_finds_no_divergence(tmp_path):
    assert stress.model_check(str(tmp_path / "m"), 3000, seed=5, report=lambda *_: None) == 0
    assert stress.kill_check(str(tmp_path / "k"), 4, kill_every=0.1, seed=5, report=lambda *_: None) == 0


def test_cli_parses(tmp_path, capsys):
    from bloomdb.cli.main import main

    assert main(["db-bench", "--num", "1500", "--benchmarks", "fillrandom,readmissing", "--no-progress",
                 "--dir", str(tmp_path)]) == 0
    assert "readmissing" in capsys.readouterr().out
    assert main(["db-stress", "--ops", "1000", "--kills", "2", "--dir", str(tmp_path)]) == 0


def test_db_bench_peers_settle_until_their_threads_are_idle():
    """A peer's settle (after a fill) waits until the process's background threads stop using
    CPU -- LevelDB and RocksDB compact in threads no API lets us wait for; their work must not run
    during the next engine's timed phase (bloomdb's scan came right after the fills)."""
    import threading
    import time

    from bloomdb.bench.db_bench import _LevelDB

    def compacting():  # stands in for a peer's compaction thread
        end = time.perf_counter() + 0.4
        while time.perf_counter() < end:
            pass

    t = threading.Thread(target=compacting)
    t.start()
    _LevelDB.settle(None)
    assert not t.is_alive()
    t.join()
