"""filter-bench --equal-fpr: the memory each family needs for a target FP rate, found by search."""

from __future__ import annotations

import json

import pytest

from bloomdb.bench import equal_fpr as ef
from bloomdb.bench import filter_bench as fb
from bloomdb.cli.main import main


def test_search_finds_the_smallest_passing_spec():
    points = ef.equal_fpr(["blocked", "paired", "ribbon"], [1e-2], n=50_000, absent=400_000, steps=6)
    by = {p.family: p for p in points}
    for p in points:
        assert p.fpr <= 1e-2 and p.false_positives == round(p.fpr * p.absent_queries)
    assert 9.0 < by["blocked"].bits_per_key < 11.0
    assert by["ribbon"].saving >= 0.25 and by["ribbon"].bits_per_key < 7.4
    assert by["paired"].saving > -0.05  # at 1% paired and blocked need about the same memory
    # just below the answer the target is missed (bisection brackets it)
    number = float(by["blocked"].spec.split(":")[1])
    keys = fb.make_keys(50_000)
    probes = fb.make_keys(400_000, offset=1 << 40)
    assert ef._measure(f"blocked:{0.9 * number:.3f}", keys, probes, 50_000)[2] / 400_000 > 1e-2


def test_cli_equal_fpr_and_speed_ratios(tmp_path, capsys):
    out = tmp_path / "eq.json"
    rc = main(["filter-bench", "--equal-fpr", "1e-2", "--keys", "20000", "--absent", "200000",
               "--families", "blocked,ribbon", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "ribbon:" in text and "saving" in text
    assert {p["family"] for p in json.loads(out.read_text())} == {"blocked", "ribbon"}
    rc = main(["filter-bench", "--impl", "blocked,paired,ribbon", "--keys", "20000", "--repeats", "1"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "relative to blocked:10" in text and "paired:10" in text and "ribbon:10" in text


def test_sweep_includes_static_families(tmp_path):
    res = fb.sweep(["paired", "ribbon"], [8, 16], n=20_000, absent=200_000, repeats=1)
    assert [r.family for r in res] == ["paired", "paired", "ribbon", "ribbon"]
    rib = [r for r in res if r.family == "ribbon"]
    assert abs(rib[0].bits_per_key - 8) < 0.4 and abs(rib[1].bits_per_key - 16) < 0.6
    assert not any(r.fpr_is_bad() for r in res)
    assert fb.plot(res, str(tmp_path / "p.png")).endswith("p.png")


@pytest.mark.slow
def test_memory_at_1e4():
    """At FPR 1e-4 paired needs ~10% less memory than blocked, ribbon ~35% less.

    (The issue hoped for 16% with paired; no Bloom filter can do that: a textbook Bloom needs
    -ln(1e-4)/ln(2)^2 = 19.17 bits/key, only 13% under blocked's ~22.1.)
    """
    points = ef.equal_fpr(["blocked", "paired", "ribbon"], [1e-4], n=200_000, absent=3_000_000, steps=7)
    by = {p.family: p for p in points}
    assert 21.0 < by["blocked"].bits_per_key < 23.0
    assert by["paired"].saving >= 0.08
    assert by["paired"].bits_per_key > 19.17 * 0.98  # the textbook-Bloom bound, within noise
    assert by["ribbon"].saving >= 0.33
