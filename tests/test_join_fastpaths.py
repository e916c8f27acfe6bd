"""The join's fast paths for issue 16's query shapes, each against DuckDB or a plain-Python model:
group-by on a dimension attribute folded per matched probe row with its key's build-row count as a
weight (no (probe row, build row) pairs built), build columns of fanned-out / left-join rows
written with their Arrow validity bitmap by one kernel, left joins keeping every probe row of a
chunk, and a column chunk decoded once per chunk however often the join reads it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from bloomdb import columnar
from bloomdb.join import _join_kernels as K
from bloomdb.join import hash_join, outer
from bloomdb.join.build import BuildSide
from test_join_outer import _same

duckdb = pytest.importorskip("duckdb")


def _rows(t) -> list[tuple]:
    rows = t.fetchall() if hasattr(t, "fetchall") else list(zip(*[c.to_pylist() for c in t.columns]))
    return sorted(rows, key=lambda r: tuple((x is None, repr(x)) for x in r))


def _star(rng, dup_same_region: bool):
    n = 30_000
    fact = pa.table({"k": pa.array(rng.integers(0, 400, n), mask=rng.random(n) < 0.02),
                     "amount": pa.array(rng.integers(-1000, 1000, n), pa.int32(), mask=rng.random(n) < 0.05),
                     "price": np.where(rng.random(n) < 0.01, np.nan, rng.normal(size=n))})
    keys = np.arange(0, 600, 2)
    region = np.array([f"r{i % 7}" for i in range(keys.shape[0])], dtype=object)
    region[::11] = None
    if dup_same_region:  # some keys held by 3 dimension rows of the same region: weight 3
        keys = np.concatenate([keys, np.repeat(keys[:40], 2)])
        region = np.concatenate([region, np.repeat(region[:40], 2)])
    else:  # one key in two regions: pairs are needed
        keys = np.concatenate([keys, keys[:1]])
        region = np.concatenate([region, np.array(["other"], dtype=object)])
    return fact, pa.table({"k": keys, "region": pa.array(list(region), pa.string())})


AGGS = ["count(*)", "sum(amount)", "count(amount)", "avg(price)", "min(price)", "max(amount)", "sum(price)"]
SQL = "count(*), sum(amount), count(amount), avg(price), min(price), max(amount), sum(price)"


@pytest.mark.parametrize("how", ["inner", "left", "right", "full"])
def test_star_schema_group_by_builds_no_pairs_and_matches_duckdb(monkeypatch, how):
    """The dimension attribute's code and the key's build-row count ride on each matched probe row
    (main built one (probe row, build row) pair per result row: BuildSide.expand / outer.pairs)."""
    fact, dim = _star(np.random.default_rng(5), dup_same_region=True)

    def refuse(*a, **k):
        raise AssertionError("pairs built for a group-by on a dimension attribute")

    monkeypatch.setattr(BuildSide, "expand", refuse)
    monkeypatch.setattr(outer, "pairs", refuse)
    _check_group_by(fact, dim, how, threads=2)


def test_key_in_two_groups_still_matches_duckdb():
    """A key whose build rows fall in two groups cannot carry one code: pairs are built."""
    fact, dim = _star(np.random.default_rng(6), dup_same_region=False)
    _check_group_by(fact, dim, "inner")


def _check_group_by(fact: pa.Table, dim: pa.Table, how: str, **kw) -> None:
    got = hash_join(fact, dim, on="k", how=how, aggregates=AGGS, group_by="region", chunk_rows=4096, **kw)
    con = duckdb.connect()
    con.register("p", fact)
    con.register("b", dim)
    want = _rows(con.execute(f"SELECT b.region, {SQL} FROM p {how.upper()} JOIN b ON p.k = b.k GROUP BY b.region"))
    got_rows = _rows(got)
    assert len(got_rows) == len(want)
    for g, w in zip(got_rows, want):
        assert all(_same(x, y) for x, y in zip(g, w)), (g, w)


def _model_fill(groups, start, grouped, valid):
    out, ok = [], []
    for g in groups:
        if g < 0:
            out.append(0)
            ok.append(False)
            continue
        for r in range(start[g], start[g + 1]):
            out.append(grouped[r])
            ok.append(True if valid is None else bool(valid[r]))
    return out, ok


@pytest.mark.parametrize("seed", range(6))
def test_fill_groups_bitmap_matches_a_model(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 4, 50)
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    grouped = rng.integers(-(2**40), 2**40, int(start[-1]))
    valid = None if seed % 2 else rng.random(int(start[-1])) < 0.7
    m = int(rng.integers(0, 70))
    groups = np.where(rng.random(m) < 0.4, -1, rng.integers(0, 50, m)).astype(np.int64)
    want, ok = _model_fill(groups, start, grouped, valid)
    total = len(want)
    out = np.empty(total, np.int64)
    bits = np.full((total + 7) >> 3, 0xAB, np.uint8)  # stale bytes: every byte must be written whole
    nulls = K.fill_groups_bitmap(groups, start, grouped, valid if valid is not None else np.zeros(1, np.bool_),
                                 valid is not None, True, out, bits)
    assert nulls == ok.count(False)
    assert out.tolist() == want
    assert np.unpackbits(bits, count=total, bitorder="little").astype(bool).tolist() == ok
    live = groups[groups >= 0]  # no nulls possible: values only, no bitmap
    out2 = np.empty(int((start[live + 1] - start[live]).sum()), np.int64)
    assert K.fill_groups_bitmap(live, start, grouped, np.zeros(1, np.bool_), False, False, out2, bits) == 0
    assert out2.tolist() == _model_fill(live, start, grouped, None)[0]


def test_left_join_rows_match_duckdb_with_every_probe_row_kept(tmp_path):
    rng = np.random.default_rng(9)
    n = 20_000
    probe = pa.table({"k": pa.array(rng.integers(0, 5000, n), mask=rng.random(n) < 0.03), "i": np.arange(n)})
    columnar.write(tmp_path / "p", probe, chunk_rows=3000)
    build = pa.table({"k": rng.integers(0, 10_000, 700), "v": pa.array(rng.random(700), mask=rng.random(700) < 0.2)})
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    for where, sql in ((None, "TRUE"), (("i", ">=", 2500), "p.i >= 2500")):
        got = hash_join(tmp_path / "p", build, on="k", how="left", columns=["k", "i", "v"], where=where)
        want = _rows(con.execute(f"SELECT p.k, p.i, b.v FROM p LEFT JOIN b ON p.k = b.k WHERE {sql}"))
        assert _rows(got) == want


def test_result_groups_of_every_row_agrees_with_the_merge():
    rng = np.random.default_rng(2)
    n = 1000
    matched = np.sort(rng.choice(n, 300, replace=False)).astype(np.int64)
    grp = rng.integers(0, 50, 300)
    rest = np.setdiff1d(np.arange(n), matched).astype(np.int64)
    rows, groups = outer.result_groups(matched, grp, rest)
    assert rows.tolist() == list(range(n))
    want = np.full(n, -1)
    want[matched] = grp
    assert groups.tolist() == want.tolist()
    part = rest[rest < 900]  # not every row: the merge
    rows, groups = outer.result_groups(matched, grp, part)
    assert rows.tolist() == sorted(matched.tolist() + part.tolist())
    assert groups.tolist() == [int(want[r]) for r in rows]


def test_column_chunk_is_decoded_once_and_read_only(tmp_path):
    columnar.write(tmp_path / "t", pa.table({"x": np.arange(10_000, dtype=np.int64) * 3 + 7}), chunk_rows=4096)
    ch = columnar.open(tmp_path / "t").chunk(0, "x")
    a = ch.raw()
    assert ch.raw() is a and not a.flags.writeable
    assert ch.numpy().tolist() == (np.arange(4096) * 3 + 7).tolist()
    assert ch.numpy(np.array([0, 5], np.int64)).tolist() == [7, 22]


# ---- multi-column keys packed into one word ------------------------------------------------------


def _parts(t: pa.Table, names, types):
    from bloomdb.join.compare import key_domain
    from bloomdb.join.keys import from_arrow

    doms = [key_domain(c, t.schema.field(c).type, c, bt) for c, bt in zip(names, types)]
    return [from_arrow(t[c], d) for c, d in zip(names, doms)]


def test_packed_keys_are_equal_exactly_when_every_column_is():
    from bloomdb.join.keys import Packer

    rng = np.random.default_rng(4)
    n = 5000
    types = [pa.int64(), pa.int16(), pa.uint8()]
    build = pa.table({"a": pa.array(rng.integers(-50, 50, n), pa.int64(), mask=rng.random(n) < 0.05),
                      "b": pa.array(rng.integers(-300, 300, n), pa.int16()),
                      "c": pa.array(rng.integers(0, 7, n), pa.uint8(), mask=rng.random(n) < 0.05)})
    probe = pa.table({"a": pa.array(rng.integers(-80, 80, n), pa.int64(), mask=rng.random(n) < 0.05),  # some outside
                      "b": pa.array(rng.integers(-2**15, 2**15, n), pa.int16()),
                      "c": pa.array(rng.integers(0, 255, n), pa.uint8())})
    bparts, pparts = _parts(build, "abc", types), _parts(probe, "abc", types)
    packer = Packer.of(bparts)
    assert packer is not None
    bk, pk = packer.pack(bparts), packer.pack(pparts)
    live = {}
    for i, row in enumerate(zip(*[build[c].to_pylist() for c in "abc"])):
        if None not in row:
            assert bk.valid is None or bk.valid[i]
            live.setdefault(int(bk.ints[i]), set()).add(row)
    assert all(len(v) == 1 for v in live.values())  # distinct tuples, distinct words
    tuples = {next(iter(v)): w for w, v in live.items()}
    for i, row in enumerate(zip(*[probe[c].to_pylist() for c in "abc"])):
        ok = pk.valid is None or bool(pk.valid[i])
        if row in tuples:
            assert ok and int(pk.ints[i]) == tuples[row]
        elif ok:  # a valid probe key that is no build tuple packs to no build word
            assert int(pk.ints[i]) not in live


def test_packing_falls_back_to_words_past_2_63():
    from bloomdb.join.keys import Packer

    t = pa.table({"a": pa.array([-(2**62), 2**62], pa.int64()), "b": pa.array([0, 3], pa.int32())})
    assert Packer.of(_parts(t, "ab", [pa.int64(), pa.int32()])) is None
    t = pa.table({"a": pa.array([-(2**40), 2**40], pa.int64()), "b": pa.array([0, 3], pa.int32())})
    assert Packer.of(_parts(t, "ab", [pa.int64(), pa.int32()])) is not None


@pytest.mark.parametrize("spread", [10, 2**61])  # packed, then too wide to pack (the words table)
@pytest.mark.parametrize("how", ["inner", "left", "anti", "full"])
def test_multi_column_keys_packed_or_not_match_duckdb(tmp_path, spread, how):
    rng = np.random.default_rng(spread % 1000)
    n = 20_000
    base = rng.integers(0, 40, n)
    probe = pa.table({"a": pa.array(base * (spread // 10) - 3, pa.int64(), mask=rng.random(n) < 0.02),
                      "b": pa.array(rng.integers(-5, 5, n), pa.int8()), "v": np.arange(n)})
    columnar.write(tmp_path / "p", probe, chunk_rows=4096)
    m = 300
    build = pa.table({"a": pa.array(rng.integers(0, 30, m) * (spread // 10) - 3, pa.int64()),
                      "b": pa.array(rng.integers(-3, 3, m), pa.int16(), mask=rng.random(m) < 0.05),
                      "w": np.arange(m)})
    con = duckdb.connect()
    con.register("p", probe)
    con.register("b", build)
    cols = ["v", "w"] if how != "anti" else ["v"]
    got = hash_join(tmp_path / "p", build, on=["a", "b"], how=how, columns=cols)
    sql = ", ".join(("p." if c == "v" else "b.") + c for c in cols)
    want = con.execute(f"SELECT {sql} FROM p {how.upper()} JOIN b ON p.a = b.a AND p.b = b.b")
    assert _rows(got) == _rows(want)
    aggs = hash_join(tmp_path / "p", build, on=["a", "b"], how=how, aggregates=["count(*)", "sum(v)"])
    (cnt, tot), = con.execute(f"SELECT count(*), sum(p.v) FROM p {how.upper()} JOIN b ON p.a = b.a AND p.b = b.b"
                              ).fetchall()
    assert aggs == {"count(*)": cnt, "sum(v)": tot}


@pytest.mark.parametrize("side", ["probe", "build"])
def test_group_by_avg_of_an_integer_sum_past_2_53_matches_duckdb(side):
    """avg over int64 values whose group sum leaves float64's exact range (|sum| > 2**53) is a
    double, as DuckDB gives it (main raised ArrowInvalid casting the exact sum; hypothesis found it)."""
    big = -(2**52) - 12345
    fact = pa.table({"k": np.array([1, 1, 2, 2, 2], np.int64), "v": np.array([big, big, 7, big, 3], np.int64),
                     "pg": np.array([0, 0, 1, 1, 1], np.int64)})
    dim = pa.table({"k": np.array([1, 2], np.int64), "g": pa.array(["a", "b"]),
                    "w": np.array([big, big], np.int64)})
    col, grp = ("v", "pg") if side == "probe" else ("w", "g")
    got = hash_join(fact, dim, on="k", aggregates=[f"avg({col})", f"sum({col})"], group_by=grp)
    con = duckdb.connect()
    con.register("p", fact)
    con.register("b", dim)
    want = _rows(con.execute(f"SELECT {grp}, avg({col}), sum({col}) FROM p JOIN b ON p.k = b.k GROUP BY {grp}"))
    got_rows = _rows(got)
    assert len(got_rows) == len(want) == 2
    for g, w in zip(got_rows, want):
        assert all(_same(x, y) for x, y in zip(g, w)), (g, w)
