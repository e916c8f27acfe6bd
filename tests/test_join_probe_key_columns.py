"""In right and full joins, ``columns=["probe.k"]`` is the probe row's own key (null on build-only
rows, as DuckDB's ``l.k``), ``"build.k"`` the build row's, and a plain ``"k"`` the joined key
(coalesced, as ``USING``): against DuckDB, from memory and Parquet probes, streamed or not."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb.join import hash_join

duckdb = pytest.importorskip("duckdb")

PROBE = pa.table({"k": pa.array([1, 2, 2, None, 5], pa.int64()), "a": ["x", "y", "y2", "n", "z"]})
BUILD = pa.table({"k": pa.array([2, 3, None, 5, 5], pa.int64()), "b": ["p", "q", "nb", "r", "r2"]})


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*t.to_pydict().values()), key=repr)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("source", ["memory", "parquet"])
@pytest.mark.parametrize("how", ["right", "full", "left", "inner"])
def test_probe_build_and_joined_key_columns_match_duckdb(tmp_path, how, source, stream):
    probe = PROBE
    if source == "parquet":
        pq.write_table(PROBE, tmp_path / "p.parquet", row_group_size=2)
        probe = str(tmp_path / "p.parquet")
    got = hash_join(probe, BUILD, on="k", how=how, stream=stream,
                    columns=["probe.k", "build.k", "k", "a", "b"])
    if stream:
        got = got.read_all()
    con = duckdb.connect()
    con.register("l", PROBE)
    con.register("r", BUILD)
    want = con.execute(f"SELECT l.k, r.k, COALESCE(l.k, r.k), a, b FROM l {how.upper()} JOIN r ON l.k = r.k").fetchall()
    assert _rows(got) == sorted(want, key=repr)
