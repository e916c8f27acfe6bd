"""Probe inputs of many files (issue 16): folders, hive partitions, globs, lists of paths,
``pyarrow.dataset`` Datasets and RecordBatchReaders, every answer compared with DuckDB; files
whose statistics exclude every build key are skipped, and ``explain`` reports per file."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join
from bloomdb.join.dataset import ProbeFile, dataset_files, open_probe

duckdb = pytest.importorskip("duckdb")

N_FILES = 6
ROWS = 3000


def _probe_table() -> pa.Table:
    rng = np.random.default_rng(5)
    n = N_FILES * ROWS
    part = np.repeat(np.arange(N_FILES), ROWS)
    return pa.table({
        "k": part * 10_000 + rng.integers(0, 10_000, n),  # file i holds keys [i*1e4, (i+1)*1e4)
        "v": pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.1),
        "part": part,
    })  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds")
    t = _probe_table()
    flat = root / "flat"
    flat.mkdir()
    for i in range(N_FILES):
        pq.write_table(t.filter(pa.compute.equal(t["part"], i)), flat / f"f{i}.parquet", row_group_size=1000)
    hive = root / "hive"
    pq.write_to_dataset(t, hive, partition_cols=["part"], row_group_size=1000)
    rng = np.random.default_rng(6)
    # build keys only in files 1 and 4, duplicates included
    keys = np.concatenate([rng.integers(10_000, 20_000, 300), rng.integers(40_000, 50_000, 300)])
    build = pa.table({"k": keys, "w": np.arange(keys.shape[0])})
    return {"table": t, "flat": flat, "hive": hive, "build": build}


def _duck(sql: str, **tables) -> list[tuple]:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return con.sql(sql).fetchall()


def _sorted(rows):
    return sorted(rows, key=lambda r: tuple((x is None, repr(x)) for x in r))


def _inputs(data):
    flat, hive = data["flat"], data["hive"]
    files = sorted(str(p) for p in flat.glob("*.parquet"))
    return {
        "folder": str(flat),
        "glob": str(flat / "f*.parquet"),
        "list": files,
        "hive": str(hive),
        "dataset": ds.dataset(str(hive), format="parquet", partitioning="hive"),
    }


@pytest.mark.parametrize("kind", ["folder", "glob", "list", "hive", "dataset", "reader", "memory_dataset"])
@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti"])
def test_every_input_matches_duckdb(data, kind, how):
    t, build = data["table"], data["build"]
    if kind == "reader":
        probe = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=777))
    elif kind == "memory_dataset":  # not a set of local files: read as a stream of batches
        probe = ds.dataset(t)
    else:
        probe = _inputs(data)[kind]
    cols = ["k", "v", "w"] if how in ("inner", "left") else ["k", "v"]
    got = hash_join(probe, build, on="k", how=how, columns=cols, chunk_rows=1000)
    sel = "p.k, p.v, b.w" if how in ("inner", "left") else "p.k, p.v"
    want = _duck(f"SELECT {sel} FROM p {how.upper()} JOIN b ON p.k = b.k", p=t, b=build)
    assert _sorted(zip(*[got[c].to_pylist() for c in cols])) == _sorted(want)


def test_files_outside_the_build_keys_are_skipped_and_explained(data):
    got, stats = hash_join(str(data["flat"]), data["build"], on="k", aggregates=["count(*)", "sum(v)"], explain=True)
    want = _duck("SELECT count(*), sum(p.v) FROM p JOIN b ON p.k = b.k", p=data["table"], b=data["build"])[0]
    assert (got["count(*)"], got["sum(v)"]) == want
    assert len(stats.files) == N_FILES
    read = {name for name, f in stats.files.items() if f.skipped_minmax < f.chunks}
    assert sorted(n.rsplit("/", 1)[1] for n in read) == ["f1.parquet", "f4.parquet"]
    for f in stats.files.values():
        assert f.rows == ROWS
    text = stats.explain()
    assert "f0.parquet" in text and "skipped by min/max" in text


def test_hive_partition_columns_are_columns(data):
    got, st = hash_join(str(data["hive"]), data["build"], on="k", columns=["k", "part"], where=("part", "in", [4]),
                        explain=True)
    assert st.chunks_skipped_where == st.chunks - ROWS // 1000  # only part=4's row groups are read
    want = _duck("SELECT p.k, p.part FROM p JOIN b ON p.k = b.k WHERE p.part = 4", p=data["table"], b=data["build"])
    assert _sorted(zip(got["k"].to_pylist(), got["part"].to_pylist())) == _sorted(want)
    assert got.num_rows > 0


def test_dataset_files_is_the_listing_a_partitioned_runner_needs(data):
    files, schema = dataset_files(str(data["hive"]))
    assert len(files) == N_FILES and all(isinstance(f, ProbeFile) for f in files)
    assert "part" in schema.names and sorted(f.partition["part"] for f in files) == list(range(N_FILES))
    # a subset of the files joined on its own gives that subset's share of the answer
    sub = [f for f in files if f.partition["part"] in (1, 2)]
    src = open_probe(sub)
    assert src.num_chunks == 2 * (ROWS // 1000)
    got = hash_join(sub, data["build"], on="k", aggregates=["count(*)"])
    t = data["table"].filter(pa.compute.is_in(data["table"]["part"], pa.array([1, 2])))
    assert got["count(*)"] == _duck("SELECT count(*) FROM p JOIN b ON p.k = b.k", p=t, b=data["build"])[0][0]


def test_stream_over_a_dataset_reads_to_the_end(data):
    reader = hash_join(str(data["flat"]), data["build"], on="k", how="left", columns=["k", "w"], stream=True,
                       chunk_rows=1000)
    assert isinstance(reader, pa.RecordBatchReader)
    n = sum(b.num_rows for b in reader)
    want = _duck("SELECT count(*) FROM p LEFT JOIN b ON p.k = b.k", p=data["table"], b=data["build"])[0][0]
    assert n == want


def test_bad_dataset_inputs(tmp_path, data):
    with pytest.raises(InvalidArgument, match="no file matches"):
        hash_join(str(tmp_path / "nothing*.parquet"), data["build"], on="k")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidArgument):
        hash_join(str(empty), data["build"], on="k")
    reader = pa.RecordBatchReader.from_batches(data["table"].schema, data["table"].to_batches())
    hash_join(reader, data["build"], on="k", aggregates=["count(*)"])
    with pytest.raises(InvalidArgument):
        hash_join(reader, data["build"], on="k", aggregates=["count(*)"])  # consumed


def test_stream_reads_its_input_as_it_goes():
    """stream=True returns batches while the probe is still being read: a result larger than
    memory never sits in RAM (at most a few chunks are scanned ahead of the reader)."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    pulled = []

    def batches():
        for i in range(200):
            pulled.append(i)
            yield pa.record_batch([pa.array(np.arange(i * 100, (i + 1) * 100)), pa.array(np.full(100, i))],
                                  schema=schema)

    build = pa.table({"k": np.arange(0, 20_000, 3)})
    reader = hash_join(pa.RecordBatchReader.from_batches(schema, batches()), build, on="k", how="left", stream=True,
                       threads=2, chunk_rows=100)
    first = reader.read_next_batch()
    assert first.num_rows == 100 and len(pulled) < 20
    rest = sum(b.num_rows for b in reader)
    assert first.num_rows + rest == 20_000 and len(pulled) == 200


# ---- the build side as a dataset ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", "glob", "list", "hive", "dataset", "reader"])
@pytest.mark.parametrize("how", ["inner", "right", "full", "anti"])
def test_build_side_of_many_files_matches_duckdb(data, kind, how):
    """The dataset as the build side, a small in-memory probe: every form of input reads the
    same rows (hive partition values included), answers equal DuckDB's."""
    t = data["table"]
    rng = np.random.default_rng(7)
    probe = pa.table({"k": np.concatenate([rng.choice(t["k"].to_numpy(), 400), rng.integers(0, 60_000, 100)]),
                      "x": np.arange(500)})
    build = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=777)) if kind == "reader" \
        else _inputs(data)[kind]  # fmt: skip
    cols = ["x", "v", "part"] if how != "anti" else ["x"]
    got = hash_join(probe, build, on="k", how=how, columns=cols)
    sel = ", ".join(("p." if c == "x" else "b.") + c for c in cols)
    want = _duck(f"SELECT {sel} FROM p {how.upper()} JOIN b ON p.k = b.k", p=probe, b=t)
    assert _sorted(zip(*[got[c].to_pylist() for c in cols])) == _sorted(want)
    agg = hash_join(probe, build if kind != "reader" else t, on="k", aggregates=["count(*)", "sum(build.v)"],
                    how="inner")
    assert (agg["count(*)"], agg["sum(build.v)"]) == tuple(
        _duck("SELECT count(*), sum(b.v) FROM p JOIN b ON p.k = b.k", p=probe, b=t)[0])


def test_build_side_dataset_errors(tmp_path, data):
    with pytest.raises(InvalidArgument, match="no file matches"):
        hash_join(data["table"], str(tmp_path / "none*.parquet"), on="k")
    with pytest.raises(InvalidArgument, match="no column|has no key"):
        hash_join(data["table"], str(data["flat"]), on="nope")
    files, _ = dataset_files(str(data["hive"]))
    with pytest.raises(InvalidArgument, match="partition"):
        hash_join(data["table"], files, on="k")
