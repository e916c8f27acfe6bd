"""bloomdb.dask on a real dask.distributed LocalCluster (2 workers): distributed filter builds,
probes, and the filtered join against DuckDB's answers on the same data."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

dd = pytest.importorskip("dask.dataframe", reason="the dask extra is not installed")
distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
duckdb = pytest.importorskip("duckdb")

import dask.array as da  # noqa: E402
import dask.bag as db  # noqa: E402

from bloomdb import filters  # noqa: E402
from bloomdb import dask as bd  # noqa: E402
from bloomdb.errors import InvalidArgument  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """Two worker processes, as on a real cluster: every filter, build table and partition crosses
    a process boundary (pickled, CRC-checked on arrival). Started once per module."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _data(n=20_000, seed=1):
    rng = np.random.default_rng(seed)
    probe = pd.DataFrame({"k": rng.integers(0, 5000, n), "v": rng.integers(-50, 100, n),
                          "s": [f"user{i % 700}" for i in range(n)]})
    probe.loc[probe.index % 97 == 0, "k"] = None  # nullable keys: never match, kept by anti
    probe["k"] = probe["k"].astype("Int64")
    build = pd.DataFrame({"k": np.arange(0, 5000, 37), "w": np.arange(0, 5000, 37) * 2})
    build = pd.concat([build, build.iloc[:5]])  # duplicate build keys: inner joins emit both
    return probe, build


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    probe, build = _data()
    root = tmp_path_factory.mktemp("ds")
    for i in range(4):
        pq.write_table(pa.Table.from_pandas(probe.iloc[i * 5000:(i + 1) * 5000], preserve_index=False),
                       root / f"part-{i}.parquet", row_group_size=1000)
    return str(root), probe, build


@pytest.mark.parametrize("spec", ["blocked:10", "standard:8", "sbbf:10", "register:2", "counting:16", "cuckoo:12",
                                  "scalable:0.01"])
def test_build_filter_equals_one_filter_of_all_keys(client, spec):
    probe, _ = _data()
    if spec.startswith(("cuckoo", "counting")):  # they hold each copy of a key: give distinct keys
        probe = probe.drop_duplicates("k")
    ddf = dd.from_pandas(probe, npartitions=5)
    f = bd.build_filter(ddf, "k", spec)
    keys = probe["k"].dropna().to_numpy(np.int64)
    assert f.might_contain_many(keys).all()
    if spec.split(":")[0] in ("blocked", "standard", "sbbf", "register"):  # OR of bits: the same bits as one build
        one = filters.create(spec, capacity=len(keys))
        one.add_many(keys)
        assert f.to_bytes() == one.to_bytes()


@pytest.mark.parametrize("make", ["series", "array", "bag", "strings"])
def test_build_filter_takes_every_collection(client, make):
    probe, _ = _data()
    keys = probe["k"].dropna().to_numpy(np.int64)
    coll = {"series": lambda: dd.from_pandas(probe, npartitions=3)["k"],
            "array": lambda: da.from_array(keys, chunks=3000),
            "bag": lambda: db.from_sequence(keys.tolist(), npartitions=4),
            "strings": lambda: dd.from_pandas(probe, npartitions=3)["s"]}[make]()
    f = bd.build_filter(coll)
    want = probe["s"].tolist() if make == "strings" else keys
    assert f.might_contain_many(want).all()
    absent = np.arange(10**9, 10**9 + 20_000) if make != "strings" else [f"nobody{i}" for i in range(20_000)]
    assert f.might_contain_many(absent).mean() < 0.03


@pytest.mark.parametrize("spec", ["fuse8", "fuse16", "ribbon:10", "paired:10", "leveldb:10"])
def test_static_families_are_built_from_distinct_keys(client, spec):
    probe, _ = _data()
    f = bd.build_filter(dd.from_pandas(probe, npartitions=4), "s", spec)
    assert f.might_contain_many(probe["s"].tolist()).all() and f.count == probe["s"].nunique()
    with pytest.raises(InvalidArgument, match="max_static_keys"):
        bd.build_filter(dd.from_pandas(probe, npartitions=4), "s", spec, max_static_keys=100)


def test_bad_inputs_are_refused(client):
    probe, _ = _data()
    ddf = dd.from_pandas(probe, npartitions=2)
    with pytest.raises(InvalidArgument, match="column"):
        bd.build_filter(ddf)
    with pytest.raises(InvalidArgument, match="no column"):
        bd.build_filter(ddf, "nope")
    with pytest.raises(InvalidArgument):
        bd.build_filter(ddf, "k", "blocked:zz")
    with pytest.raises(InvalidArgument, match="Dask"):
        bd.build_filter(probe["k"])
    with pytest.raises(InvalidArgument, match="filter"):
        bd.might_contain(ddf["k"], "blocked:10")
    with pytest.raises(InvalidArgument, match="how"):
        bd.filtered_join(ddf, ddf, on="k", how="outer")


def test_might_contain_and_filter_rows(client):
    probe, build = _data()
    f = filters.create("blocked:10", capacity=len(build))
    f.add_many(build["k"].to_numpy())
    ddf = dd.from_pandas(probe, npartitions=4)
    mask = bd.might_contain(ddf, f, column="k").compute()
    valid = probe["k"].notna()
    want = np.zeros(len(probe), bool)
    want[valid.to_numpy()] = f.might_contain_many(probe["k"][valid].to_numpy(np.int64))
    assert (mask.to_numpy() == want).all() and not mask[~valid].any()
    kept = bd.filter_rows(ddf, "k", f).compute()
    assert len(kept) == want.sum() and set(build["k"]) & set(probe["k"].dropna()) <= set(kept["k"])
    rest = bd.filter_rows(ddf, "k", f, invert=True).compute()
    assert len(kept) + len(rest) == len(probe)
    arr = bd.might_contain(da.from_array(build["k"].to_numpy(), chunks=40), f).compute()
    assert arr.dtype == bool and arr.all()
    assert all(bd.might_contain(db.from_sequence(build["k"].tolist(), npartitions=2), f).compute())


def test_the_filter_reaches_each_worker_once(client):
    f = filters.create("blocked:10", capacity=1000)
    f.add_many(range(1000))
    ddf = dd.from_pandas(pd.DataFrame({"k": np.arange(20_000)}), npartitions=20)
    before = {k for keys in client.has_what().values() for k in keys}
    m = bd.might_contain(ddf["k"], f)
    held = client.has_what()
    new = {k for keys in held.values() for k in keys} - before
    assert len(new) == 1 and all(new <= set(keys) for keys in held.values())  # one key, on both workers
    assert m.sum().compute() >= 1000


def _duck(probe, build, how, aggs=True):
    con = duckdb.connect()
    con.register("probe", probe)
    con.register("build", build)
    sel = "count(*), sum(v), min(v), max(v), avg(v)" if aggs else "p.*" + (", b.w" if how == "inner" else "")
    where = {"inner": "from probe p join build b on p.k = b.k",
             "semi": "from probe p where exists (select 1 from build b where b.k = p.k)",
             "anti": "from probe p where not exists (select 1 from build b where b.k = p.k)"}[how]
    return con.execute(f"select {sel} {where}").fetchdf()


@pytest.mark.parametrize("how", ["inner", "semi", "anti"])
@pytest.mark.parametrize("plan", ["broadcast", "shuffle"])
@pytest.mark.parametrize("source", ["parquet", "dask"])
def test_filtered_join_equals_duckdb(client, dataset, how, plan, source):
    root, probe, build = dataset
    src = root if source == "parquet" else dd.from_pandas(probe, npartitions=4)
    bdd = dd.from_pandas(build, npartitions=3)
    kw = dict(on="k", how=how, broadcast_rows=0 if plan == "shuffle" else 10**9)
    got = bd.filtered_join(src, bdd, aggregates=["count(*)", "sum(v)", "min(v)", "max(v)", "avg(v)"], **kw)
    want = _duck(probe, build, how).iloc[0].tolist()
    assert [got["count(*)"], got["sum(v)"], got["min(v)"], got["max(v)"]] == want[:4]
    assert got["avg(v)"] == pytest.approx(want[4], rel=1e-12)  # sum and count per partition, divided once
    rows = bd.filtered_join(src, bdd, **kw).compute()
    wrows = _duck(probe, build, how, aggs=False)
    cols = list(wrows.columns)
    norm = lambda d: sorted(map(tuple, d[cols].astype(object).where(d[cols].notna(), None).values.tolist()), key=repr)  # noqa: E731
    assert norm(rows) == norm(wrows)


def test_hive_dataset_string_keys_and_other_key_names(client, tmp_path):
    """A hive-partitioned folder (partition values are columns), string keys named differently on
    each side, and an aggregate over a build column: as DuckDB answers."""
    probe, build = _data()
    probe = probe.assign(region=np.where(probe.index % 2 == 0, "eu", "us"))
    for r in ("eu", "us"):
        (tmp_path / f"region={r}").mkdir()
        part = probe[probe.region == r].drop(columns=["region"])
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), tmp_path / f"region={r}" / "f.parquet")
    users = pd.DataFrame({"name": [f"user{i}" for i in range(0, 700, 9)], "score": np.arange(0, 700, 9) % 13})
    con = duckdb.connect()
    con.register("probe", probe)
    con.register("users", users)
    want = con.execute("select count(*), sum(v), sum(score) from probe join users on s = name "
                       "where region = 'eu'").fetchone()
    got = bd.filtered_join(str(tmp_path), dd.from_pandas(users, npartitions=2), left_on="s", right_on="name",
                           aggregates=["count(*)", "sum(v)", "sum(build.score)"], columns=None)
    total = con.execute("select count(*), sum(v), sum(score) from probe join users on s = name").fetchone()
    assert (got["count(*)"], got["sum(v)"], got["sum(build.score)"]) == total
    rows = bd.filtered_join(str(tmp_path), dd.from_pandas(users, npartitions=2), left_on="s", right_on="name",
                            columns=["region", "v", "score"]).compute()
    eu = rows[rows.region == "eu"]
    assert (len(eu), eu.v.sum(), eu.score.sum()) == want
    sh = bd.filtered_join(dd.from_pandas(probe, npartitions=3), dd.from_pandas(users, npartitions=2), left_on="s",
                          right_on="name", aggregates=["count(*)", "sum(v)", "sum(build.score)"], broadcast_rows=0)
    assert (sh["count(*)"], sh["sum(v)"], sh["sum(build.score)"]) == total


def test_explain_reports_rejections_and_bytes(client, dataset):
    root, probe, build = dataset
    res, st = bd.filtered_join(root, dd.from_pandas(build, npartitions=2), on="k", explain=True)
    assert len(res.compute()) == len(_duck(probe, build, "inner", aggs=False))
    assert st.plan == "broadcast" and len(st.partitions) == 4 and st.workers == 2
    assert st.total("rows_scanned") == len(probe) and st.total("rows_rejected") > 0.9 * len(probe)
    assert st.bytes_moved * 3 < st.bytes_plain_merge
    assert "plain dd.merge" in st.explain()
    _, sh = bd.filtered_join(root, dd.from_pandas(build, npartitions=2), on="k", broadcast_rows=0,
                             aggregates=["count(*)"], explain=True)
    assert sh.plan == "shuffle" and sh.total("rows_shipped") < 0.1 * len(probe)


def test_a_torn_filter_is_refused_on_arrival():
    """What a worker receives is unpickled through the filter's checked path: a flipped bit in the
    out-of-band buffer raises instead of answering."""
    from bloomdb.errors import CorruptionError

    f = filters.create("blocked:10", capacity=1000)
    f.add_many(range(1000))
    bufs = []
    data = pickle.dumps(f, protocol=5, buffer_callback=bufs.append)
    raw = [bytearray(b.raw()) for b in bufs]
    raw[-1][len(raw[-1]) // 2] ^= 1
    with pytest.raises(CorruptionError):
        pickle.loads(data, buffers=raw)


def _slow_part(i):
    time.sleep(0.4)
    return pd.DataFrame({"k": np.arange(i * 1000, (i + 1) * 1000)})


def test_a_worker_killed_mid_build_retries_on_the_other():
    """Two worker processes; one is killed (SIGKILL) while partitions are being built: the
    scheduler reruns its tasks and the filter still holds every key."""
    from dask import delayed

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    try:
        with distributed.Client(cluster) as c:
            ddf = dd.from_delayed([delayed(_slow_part)(i) for i in range(16)],
                                  meta=pd.DataFrame({"k": np.zeros(0, np.int64)}))
            pids = c.run(os.getpid)
            out = {}
            t = threading.Thread(target=lambda: out.update(f=bd.build_filter(ddf, "k", capacity=16_000)))
            t.start()
            time.sleep(1.5)
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            t.join(120)
            f = out["f"]
            assert f.might_contain_many(np.arange(16_000)).all()
            assert f.count == 16_000  # no partition added twice, none lost
            assert set(c.run(os.getpid).values()) != set(pids.values())  # the killed worker was replaced
    finally:
        cluster.close()


def test_dask_bench_engines_agree(client, tmp_path):
    """The bench's engines (bloomdb broadcast and shuffle plans, dd.merge, DuckDB) give the same
    sums at every match fraction (the run cross-checks them), and bloomdb moves fewer bytes."""
    from bloomdb.bench import dask_bench

    runs = dask_bench.run(rows=30_000, files=3, fractions=(0.01, 1.0), scheduler=client.scheduler.address,
                          repeats=1, workdir=str(tmp_path), log=lambda s: None)
    assert {r.engine for r in runs} == {"bloomdb.dask broadcast", "bloomdb.dask shuffle", "dd.merge (hash shuffle)",
                                        "duckdb (one process)"}
    at1 = {r.engine: r for r in runs if r.fraction == 0.01}
    assert at1["bloomdb.dask broadcast"].bytes_moved < at1["dd.merge (hash shuffle)"].bytes_moved
    assert "x fewer" in dask_bench.format_table(runs)


@pytest.mark.parametrize("pushdown", ["on", "off", "adaptive"])
def test_shuffle_plan_pushdown_modes_agree(client, dataset, pushdown):
    """Filtering only drops rows that cannot match: every mode gives DuckDB's answer; "off" ships
    every non-null row, "on" ships few, "adaptive" filters a partition whose sample it rejects."""
    root, probe, build = dataset
    got, st = bd.filtered_join(dd.from_pandas(probe, npartitions=2), dd.from_pandas(build, npartitions=2), on="k",
                               aggregates=["count(*)", "sum(v)"], broadcast_rows=0, pushdown=pushdown, explain=True)
    assert [got["count(*)"], got["sum(v)"]] == _duck(probe, build, "inner").iloc[0].tolist()[:2]
    nonnull = int(probe["k"].notna().sum())
    shipped = st.total("rows_shipped")
    assert shipped == nonnull if pushdown == "off" else shipped < 0.1 * nonnull
