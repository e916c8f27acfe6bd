"""The command-line tools run end to end and say what they promise."""

from __future__ import annotations

import json

import pytest

from bloomdb.bench import filter_bench as fb
from bloomdb.cli.main import main


def test_filter_bench_one_family(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["filter-bench", "--impl", "blocked", "--bits-per-key", "10", "--keys", "20000",
                 "--absent", "200000", "--repeats", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "blocked:10" in text and "FPR" in text
    (r,) = json.loads(out.read_text())
    assert r["keys"] == 20000 and r["num_probes"] == 6
    assert 0.005 < r["fpr"] < 0.015 and r["build_ns"] > 0


def test_filter_bench_refuses_bad_fp_rate(capsys, monkeypatch):
    from bloomdb.filters.blocked import BlockedBloom

    monkeypatch.setattr(BlockedBloom, "expected_fpr", classmethod(lambda cls, b, k=None: 1e-6))
    args = ["filter-bench", "--impl", "blocked:10", "--keys", "20000", "--absent", "100000", "--repeats", "1"]
    assert main(args) == 1
    assert "far above the expected" in capsys.readouterr().err
    assert main(args + ["--allow-bad-fp-rate"]) == 0


def test_filter_bench_sweep_and_plot(tmp_path, capsys):
    plot = tmp_path / "fpr.png"
    assert main(["filter-bench", "--sweep", "--families", "standard,blocked", "--sweep-bits", "6,10",
                 "--keys", "10000", "--absent", "100000", "--repeats", "1", "--plot", str(plot)]) == 0
    assert plot.stat().st_size > 10_000
    text = capsys.readouterr().out
    assert "standard:6" in text and "blocked:10" in text


def test_filter_bench_str_keys():
    r = fb.run_one("standard:8", n=5000, key_type="str", absent=50_000, repeats=1)
    assert r.key_type == "str" and 0.01 < r.fpr < 0.04


def test_calc(capsys):
    assert main(["calc", "--keys", "1000000", "--fpr", "0.01"]) == 0
    text = capsys.readouterr().out
    lines = {ln.split()[0]: ln.split() for ln in text.splitlines() if ln.startswith(("standard", "blocked"))}
    std = lines["standard"]
    assert 9.5 < float(std[3]) < 9.7 and std[4] == "7"
    assert float(std[5].rstrip("%")) <= 1.0 and int(std[6].replace(",", "")) >= 1_000_000
    assert main(["calc", "--keys", "1000000", "--fpr", "0.01", "--bytes", "1000000"]) == 0
    text = capsys.readouterr().out
    std = [ln for ln in text.splitlines() if ln.startswith("standard")][0].split()
    assert int(std[6].replace(",", "")) < 1_000_000  # 8 bits/key cannot hold 1M keys at 1%


@pytest.mark.slow
def test_demo_runs(tmp_path, capsys):
    plot = tmp_path / "demo.png"
    assert main(["demo", "--keys", "100000", "--sweep-keys", "20000", "--plot", str(plot)]) == 0
    assert plot.exists()
    assert "blocked:10" in capsys.readouterr().out
