"""The command-line tools run end to end and say what they promise."""

from __future__ import annotations

import json

import pytest

from bloomdb import filters
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


def test_filter_bench_families_without_a_sweep_is_refused_not_ignored(capsys):
    """``--families`` chooses the families of ``--sweep`` / ``--equal-fpr``; alone it used to be
    ignored (the default ``blocked:10`` was benched instead of the family asked for)."""
    with pytest.raises(SystemExit) as e:
        main(["filter-bench", "--families", "ribbon", "--keys", "1000", "--repeats", "1"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "--impl ribbon" in err and "Traceback" not in err


def test_filter_bench_str_keys():
    r = fb.run_one("standard:8", n=5000, key_type="str", absent=50_000, repeats=1)
    assert r.key_type == "str" and 0.01 < r.fpr < 0.04


def test_calc(capsys):
    assert main(["calc", "--keys", "1000000", "--fpr", "0.01"]) == 0
    text = capsys.readouterr().out
    lines = {ln.split()[0]: ln.split() for ln in text.splitlines() if ln.startswith(("standard", "blocked"))}
    std = lines["standard"]
    assert 9.5 < float(std[3]) < 9.7 and std[5] == "7" and 1.4 < float(std[4].rstrip("x")) < 1.5
    assert float(std[6].rstrip("%")) <= 1.0 and int(std[7].replace(",", "")) >= 1_000_000
    assert main(["calc", "--keys", "1000000", "--fpr", "0.01", "--bytes", "1000000"]) == 0
    text = capsys.readouterr().out
    std = [ln for ln in text.splitlines() if ln.startswith("standard")][0].split()
    assert int(std[7].replace(",", "")) < 1_000_000  # 8 bits/key cannot hold 1M keys at 1%


@pytest.mark.parametrize("keys", [100_000_000_000, 2**64 - 1])
def test_calc_of_more_keys_than_a_family_sizes_gives_every_row(capsys, keys):
    """A key count some families cannot size (cuckoo's 2^32 buckets, capacities past 2^63 - 1,
    LevelDB's 32-bit hash at 1%) gives those families a row saying why; the command failed on the
    first such family before, and the wide numbers ran into each other."""
    assert main(["calc", "--keys", str(keys), "--fpr", "0.01"]) == 0
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines()[3:-2]}
    assert set(rows) == {i.name for i in filters.available()}
    assert "32-bit hash" in rows["leveldb"]
    assert all(len(ln.split()) >= 8 for ln in rows.values())
    assert "cuckoo" in rows["cuckoo"] and float(rows["ribbon"].split()[3]) > 7


@pytest.mark.parametrize("size", [None, 1_000_000])
def test_calc_knows_every_family(size):
    """Every installed family gets a row (leveldb, register, ribbon and cuckoo were missing), the
    expected FP rate meets the target unless the size is fixed, and bits/key over the bound
    log2(1/FP) is at least 1 (nothing beats the information-theoretic bound)."""
    from bloomdb.bench.calc import calculate

    rows = {r.family: r for r in calculate(1_000_000, 0.001, size)}
    want = {i.name for i in filters.available()} - {"fuse8"}  # fuse8 cannot reach 0.1%: no row
    assert want <= set(rows), want - set(rows)
    for r in rows.values():
        assert not r.over_bound < 1.0, r  # NaN: no FP rate at N (a cuckoo table too small for N)
        if size is None:
            assert r.expected_fpr <= 0.001 * 1.0001 and r.keys_that_fit != 0, r
    assert rows["ribbon"].over_bound < 1.1 and rows["fuse16"].over_bound < 1.2


@pytest.mark.slow
def test_demo_runs(tmp_path, capsys):
    plot = tmp_path / "demo.png"
    assert main(["demo", "--keys", "30000", "--sweep-keys", "5000", "--plot", str(plot)]) == 0
    assert plot.exists()
    out = capsys.readouterr().out
    assert "blocked:10" in out
    import re

    numbers = [int(m) for m in re.findall(r"^(\d+)\. ", out, flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 6, numbers


BAD_INPUTS = [
    ["calc", "--keys", "-5", "--fpr", "0.01"],
    ["calc", "--keys", "10", "--fpr", "2"],
    ["calc", "--keys", "ten", "--fpr", "0.01"],
    ["demo", "--keys", "0"],
    ["demo", "--plot", "/no/such/folder/fpr.png"],
    ["demo", "--plot", "fpr.txt"],
    ["filter-bench", "--equal-fpr", "2"],
    ["filter-bench", "--impl", "nosuch", "--keys", "1000"],
    ["filter-bench", "--impl", "blocked:-1", "--keys", "1000"],
    ["filter-bench", "--sweep", "--sweep-bits", "4,x"],
    ["filter-bench", "--keys", "0"],
    ["db-bench", "--num", "abc"],
    ["db-bench", "--num", "-3"],
    ["db-bench", "--benchmarks", "fillseq,nosuch"],
    ["db-bench", "--compare", "mysql"],
    ["db-bench", "--filter", "register:9", "--num", "100"],
    ["db-bench", "--dir", "/no/such/folder"],
    ["db-stress", "--ops", "-1"],
    ["db-stress", "--kills", "-2"],
    ["db-stress", "--kill-every", "0"],
    ["join-bench", "--rows", "0"],
    ["join-bench", "--fractions", "0,2"],
    ["join-bench", "--compare", "spark"],
    ["join-bench", "--modes", "sometimes"],
    ["dask-bench", "--rows", "0"],
    ["dask-bench", "--fractions", "2"],
    ["dask-bench", "--engines", "spark"],
]


@pytest.mark.parametrize("argv", BAD_INPUTS, ids=[" ".join(a) for a in BAD_INPUTS])
def test_bad_input_is_one_line_and_status_2(argv, capsys):
    """Every command refuses bad input as argparse does: status 2, one 'error:' line, no traceback."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(errors) == 1 and errors[0].startswith(f"bloomdb {argv[0]}: error: "), err


def test_bad_input_in_a_real_process_prints_no_traceback():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "bloomdb.cli.main", "calc", "--keys", "-5", "--fpr", "0.01"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == "bloomdb calc: error: argument --keys: must be a positive integer, got -5"


def test_error_raised_while_running_is_one_line(capsys, monkeypatch):
    from bloomdb.bench import calc
    from bloomdb.errors import CorruptionError

    def broken(*a, **k):
        raise CorruptionError("block 3 of x.sst: bad checksum\n(details)")

    monkeypatch.setattr(calc, "calculate", broken)
    with pytest.raises(SystemExit) as exc:
        main(["calc", "--keys", "10", "--fpr", "0.01"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == "bloomdb calc: error: block 3 of x.sst: bad checksum (details)\n"


def test_version(capsys):
    from bloomdb import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"bloomdb {__version__}"


def test_plot_fits_the_data_and_bounds_zero_fp_points(tmp_path):
    """No axis down to 1e-16 for a model line; a point with no FP is an upper bound at 3/N, not 1e-9."""
    rs = [fb.run_one(s, n=5000, absent=20_000, repeats=1) for s in ("blocked:6", "ribbon:24")]
    assert rs[1].false_positives == 0  # 24 bits/key ribbon: ~1e-7, none in 20K queries
    (x0, x1), (y0, y1) = fb.plot_limits(rs)
    assert x0 < rs[0].bits_per_key < rs[1].bits_per_key < x1 < rs[1].bits_per_key + 2
    assert y1 == 1.0 and y0 == pytest.approx(fb.zero_fp_bound(20_000) / 4)
    assert fb.plot(rs, str(tmp_path / "p.png")) and (tmp_path / "p.png").stat().st_size > 10_000


def test_calc_shows_the_k_each_family_uses(capsys):
    assert main(["calc", "--keys", "10", "--fpr", "0.01", "--bytes", "1"]) == 0
    sbbf = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("sbbf")][0].split()
    assert sbbf[5] == "8"  # split-block Bloom sets one bit in each of 8 words, whatever the size


def test_filter_bench_and_calc_know_scalable(capsys):
    """filter-bench lets a scalable filter grow from its own first level; calc sizes its chain."""
    r = fb.run_one("scalable:0.01", n=50_000, absent=200_000, repeats=1)
    assert r.fpr < 0.01 and r.expected_fpr < 0.01 and r.bits_per_key > 12  # 6 levels, not one
    assert main(["filter-bench", "--impl", "scalable", "--bits-per-key", "10", "--keys", "20000",
                 "--absent", "100000", "--repeats", "1"]) == 0
    assert "scalable:0.00" in capsys.readouterr().out
    assert main(["calc", "--keys", "1000000", "--fpr", "0.01"]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("scalable")][0].split()
    from bloomdb.filters.scalable import ScalableBloom

    bits, k, levels = ScalableBloom.plan(1_000_000, 0.01)
    g = filters.create("scalable:0.01")
    g.add_many(range(1_000_000))
    assert int(row[1].replace(",", "")) == bits == g.num_bits and len(g.levels) == levels
    assert row[7] == "unlimited"
