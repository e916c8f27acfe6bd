"""The join-bench command and the join demo section run end to end at a tiny size."""

from __future__ import annotations

import json

import pytest

from bloomdb.bench import join_bench
from bloomdb.cli.main import main

pytest.importorskip("duckdb")
pytest.importorskip("polars")


def test_join_bench_cli_runs_every_engine_and_cross_checks(tmp_path, capsys):
    out = tmp_path / "runs.json"
    rc = main(["join-bench", "--rows", "40000", "--repeats", "1", "--fractions", "0.01,1.0",
               "--modes", "adaptive,off", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for engine in ("bloomdb columnar adaptive", "bloomdb columnar off", "bloomdb parquet adaptive",
                   "duckdb native", "duckdb parquet", "polars in-memory"):
        assert text.count(engine) >= 4, engine  # progress line + table line, for both fractions
    runs = json.loads(out.read_text())
    assert len(runs) == 12
    low = [r for r in runs if r["engine"] == "bloomdb columnar adaptive" and r["fraction"] == 0.01][0]
    # the second pass decoded about 1% of each payload column
    assert low["rows_decoded"]["i0"] < 0.03 * low["rows_decoded"]["k"]
    counts = {r["result"]["count(*)"] for r in runs if r["fraction"] == 1.0}
    assert counts == {40000}


def test_workload_match_fractions():
    import numpy as np

    probe = join_bench.make_probe(100_000, 1000)
    for f in (0.0, 0.1, 0.5, 1.0):
        build = join_bench.make_build(1000, f)
        assert build.num_rows == 1000 and len(np.unique(build["k"].to_numpy())) == 1000
        frac = np.isin(probe["k"].to_numpy(), build["k"].to_numpy()).mean()
        assert abs(frac - f) < 0.02


def test_demo_join_section(capsys):
    join_bench.demo(rows=30_000)
    text = capsys.readouterr().out
    assert "filter off" in text and "filter adaptive" in text and "skipped" in text


def test_bad_peer_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["join-bench", "--rows", "1000", "--compare", "sqlite"])
    assert exc.value.code == 2 and "unknown 'sqlite'" in capsys.readouterr().err


def test_join_bench_shapes_run_every_engine_and_cross_check(tmp_path, capsys):
    out = tmp_path / "shapes.json"
    rc = main(["join-bench", "--rows", "20000", "--repeats", "1", "--no-fractions", "--shapes",
               "m2m,m2m_rows,multikey,groupby,left_rows,dataset", "--cpu-time", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for shape in ("m2m", "m2m_rows", "multikey", "groupby", "left_rows", "dataset"):
        for engine in ("bloomdb", "duckdb", "polars"):
            assert any(line.split()[:2] == [shape, engine] for line in text.splitlines()), (shape, engine)
    runs = json.loads(out.read_text())
    assert len(runs) == 18
    # the shapes' answers are cross-checked inside the run (an engine that disagrees raises)
    (m2m_rows,) = {r["result"]["rows"] for r in runs if r["engine"].startswith("m2m_rows")}
    assert 0.8 * 20000 < m2m_rows < 1.2 * 20000  # 10% of probe rows match, 10 build rows each


def test_unknown_shape_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["join-bench", "--rows", "1000", "--no-fractions", "--shapes", "cube"])
    assert exc.value.code == 2 and "unknown join shape cube" in capsys.readouterr().err
