"""``filtered_join``: bloomdb's filtered hash join over the partitions of a Dask collection or the
files of a Parquet dataset.

Two plans, chosen by the build side's row count against ``broadcast_rows``:

* **broadcast** (small build): the build side is read once into an Arrow table and shipped to each
  worker once; every probe partition (a Dask partition, or one Parquet file) runs
  :func:`bloomdb.join.hash_join` against it where it lies: the build-side filter rejects rows in
  the scan (Parquet row groups skipped by their min/max and Bloom filters, adaptive filtering per
  partition), so only result rows leave a worker. Nothing is shuffled.
* **shuffle** (large build): a filter of the build keys is built on the cluster
  (:func:`.build.build_filter`) and shipped; each probe partition drops the rows it rejects where
  it was read (the filter step is fused with the read), unless ``pushdown="adaptive"`` sees the
  filter reject under 10% of a 64K-row sample of that partition (then it ships all its rows: the
  per-partition switch); the survivors and the build rows are hash-partitioned on the first key
  column and every pair of co-partitions runs ``hash_join`` (no second filter). Only the rows
  that may match are shuffled.

Either way aggregates are folded per partition and combined in a tree (no rows collected), and
results equal a single-machine ``hash_join`` (DuckDB's semantics: nulls never match; ``anti``
keeps null keys). Row results are a lazy Dask DataFrame; aggregates a computed dict.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import InvalidArgument
from ..join import hash_join
from ..join.aggregate import combine, final
from ..join.dataset import MultiSource, ProbeFile, dataset_files, index_keys
from ..join.plan import HOWS, KEEPS_BUILD, KEEPS_PROBE, Agg, parse_aggregates, parse_on
from ..join.sources import schema_of
from .files import uncompressed_bytes
from .partitions import keys_of, present, ship

#: Build sides up to this many rows are broadcast; larger ones use the shuffle plan.
DEFAULT_BROADCAST_ROWS = 2_000_000
_PART = "__bloomdb_partition"


@dataclass
class PartitionStats:
    """One probe partition: rows read, rejected by a filter, and shipped off the worker."""

    partition: int
    rows_scanned: int = 0
    rows_rejected: int = 0
    rows_shipped: int = 0
    bytes_shipped: int = 0
    bytes_plain_merge: int = 0  # the partition's bytes a plain dd.merge shuffle would move


@dataclass
class DaskJoinStats:
    """What a :func:`filtered_join` did (``explain=True``)."""

    how: str
    plan: str  # "broadcast" | "shuffle"
    filter: str | None
    build_rows: int
    build_bytes: int
    workers: int
    partitions: list[PartitionStats] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(getattr(p, name) for p in self.partitions)

    @property
    def bytes_moved(self) -> int:
        """Bytes leaving workers: shipped probe rows plus the build side (to every worker when
        broadcast; shuffled once otherwise)."""
        build = self.build_bytes * (self.workers if self.plan == "broadcast" else 1)
        return self.total("bytes_shipped") + build

    @property
    def bytes_plain_merge(self) -> int:
        """What ``dd.merge`` of the whole probe side with the build side moves in a shuffle join."""
        return self.total("bytes_plain_merge") + self.build_bytes

    def explain(self) -> str:
        lines = [f"{self.how} join on Dask, {self.plan} plan, filter {self.filter or 'none'}, "
                 f"{self.workers} workers; build {self.build_rows:,} rows ({self.build_bytes:,} bytes)",
                 f"{'part':>5}{'scanned':>12}{'rejected':>12}{'shipped':>12}{'bytes shipped':>15}{'plain merge':>14}"]
        for p in self.partitions:
            lines.append(f"{p.partition:>5}{p.rows_scanned:>12,}{p.rows_rejected:>12,}{p.rows_shipped:>12,}"
                         f"{p.bytes_shipped:>15,}{p.bytes_plain_merge:>14,}")
        lines.append(f"total{self.total('rows_scanned'):>12,}{self.total('rows_rejected'):>12,}"
                     f"{self.total('rows_shipped'):>12,}{self.total('bytes_shipped'):>15,}"
                     f"{self.total('bytes_plain_merge'):>14,}")
        lines.append(f"bytes moved {self.bytes_moved:,} against {self.bytes_plain_merge:,} for a plain dd.merge "
                     f"({self.bytes_plain_merge / max(self.bytes_moved, 1):.1f}x fewer)")
        return "\n".join(lines)

    __str__ = explain


# ---- per-partition tasks (run on workers) ----------------------------------------------------


def _payload_bytes(result: Any) -> int:
    return int(result.nbytes) if isinstance(result, pa.Table) else 64


def _join_part(i: int, probe: Any, build: Any, kw: dict, plain: bool = True) -> tuple[Any, PartitionStats]:
    """``hash_join`` of one probe partition (pandas frame or Parquet path) with ``build``; with
    ``plain``, also what a plain ``dd.merge`` would move of this partition (all of it)."""
    plain_bytes = 0
    if isinstance(probe, pd.DataFrame):
        probe = probe.drop(columns=[_PART]) if _PART in probe.columns else probe
        plain_bytes = int(probe.memory_usage(deep=True, index=False).sum()) if plain else 0
    elif isinstance(probe, tuple):  # (ProbeFile, the dataset's schema): one file, its hive partition values kept
        pf, schema = probe
        plain_bytes = uncompressed_bytes(pf.path, None) if plain else 0
        probe = MultiSource([pf], schema, True, 65536)
    if isinstance(build, pd.DataFrame) and _PART in build.columns:
        build = build.drop(columns=[_PART])
    result, st = hash_join(probe, build, explain=True, **kw)
    stats = PartitionStats(i, st.probe_rows, st.rows_rejected_by_filter, st.result_rows if kw.get("aggregates") is None else 0,
                           _payload_bytes(result), plain_bytes)
    if isinstance(result, pa.Table):
        result = result.to_pandas()
    return result, stats


def _partition_ids(col: pd.Series, nparts: int) -> np.ndarray:
    """Co-partition of each (non-null) key: XXH3-64 of the key, as the filters hash it, mod ``nparts``
    (so int32 and int64 keys of one value land together)."""
    from ..hashing import xxh3_64_many

    if len(col) == 0:
        return np.zeros(0, np.int64)
    return (xxh3_64_many(keys_of(col, np.ones(len(col), bool))) % np.uint64(nparts)).astype(np.int64)


#: Adaptive filtering: a partition whose first ``_SAMPLE`` keys are rejected less often than this
#: keeps every row (the filter would only cost time), as ``hash_join``'s adaptive pushdown does.
_THRESHOLD, _SAMPLE = 0.10, 65536


def _keep(part: pd.DataFrame, key: str, filt: Any, pushdown: str) -> np.ndarray:
    """Rows that may match: non-null keys the filter passes (all non-null keys with the filter off,
    or when ``"adaptive"`` and a sample shows it rejecting under 10%)."""
    col = part[key]
    ok = present(col)
    if pushdown == "off" or not ok.any():
        return ok
    if pushdown == "adaptive" and len(part) > _SAMPLE:
        head = ok[:_SAMPLE]
        hit = filt.might_contain_many(keys_of(col.iloc[:_SAMPLE], head))
        if 1 - hit.mean() < _THRESHOLD:
            return ok
    m = np.zeros(len(part), dtype=bool)
    m[ok] = filt.might_contain_many(keys_of(col, ok))
    return m


def _kept_rows(part: pd.DataFrame, key: str, filt: Any, nparts: int, pushdown: str) -> pd.DataFrame:
    """The rows that may match, tagged with their co-partition (runs where the partition was read)."""
    kept = part[_keep(part, key, filt, pushdown)].copy()
    kept[_PART] = _partition_ids(kept[key], nparts)
    return kept


def _rejected_rows(part: pd.DataFrame, key: str, filt: Any, pushdown: str) -> pd.DataFrame:
    """The rows that cannot match (null keys included): anti-join results as they are."""
    return part[~_keep(part, key, filt, pushdown)]


def _filter_stats(part: pd.DataFrame, key: str, filt: Any, pushdown: str) -> pd.DataFrame:
    m = _keep(part, key, filt, pushdown)
    kept = part[m]
    return pd.DataFrame({"rows_scanned": [len(part)], "rows_rejected": [int((~m).sum())], "rows_shipped": [len(kept)],
                         "bytes_shipped": [int(kept.memory_usage(deep=True, index=False).sum())],
                         "bytes_plain_merge": [int(part.memory_usage(deep=True, index=False).sum())]})


def _tag_build(part: pd.DataFrame, key: str, nparts: int, keep_nulls: bool = False) -> pd.DataFrame:
    """The build rows with their co-partition; rows with a null key match nothing: dropped, or
    (``keep_nulls``: right / full joins emit them) sent to co-partition 0."""
    has = present(part[key])
    if keep_nulls:
        part = part.copy()
        part[_PART] = np.zeros(len(part), np.int64)
        part.loc[has, _PART] = _partition_ids(part[key][has], nparts)
        return part
    part = part[has].copy()
    part[_PART] = _partition_ids(part[key], nparts)
    return part


def _partial_aggs(aggs: list[Agg]) -> tuple[dict, list[Agg]]:
    """What each partition computes: the aggregates as asked, except ``avg(x)`` as ``sum(x)`` and
    ``count(x)`` (an average of averages is not the average); and those as :class:`Agg`."""
    ask: dict[str, tuple] = {}
    for a in aggs:
        col = None if a.column is None else (a.column if a.fill else f"{a.side}.{a.column}")  # "k": the joined key
        if a.func == "avg":
            ask[f"{a.out} sum"], ask[f"{a.out} count"] = ("sum", col), ("count", col)
        else:
            ask[a.out] = (a.func, col)
    return ask, [Agg(f, c, name) for name, (f, c) in ask.items()]


def _final_aggs(aggs: list[Agg], total: dict) -> dict:
    return {a.out: final(a, (total[f"{a.out} sum"], total[f"{a.out} count"])) if a.func == "avg" else total[a.out]
            for a in aggs}


def _combine_aggs(aggs: list, *partials: dict) -> dict:
    """Partial aggregates of several partitions folded into one (the join's own combine rule)."""
    out = dict(partials[0])
    for p in partials[1:]:
        for a in aggs:
            out[a.out] = combine(a, out[a.out], p[a.out])
    return out


# ---- the plans ------------------------------------------------------------------------------


def _client_workers() -> int:
    try:
        from distributed import get_client

        return max(1, len(get_client().scheduler_info().get("workers", {})))
    except (ImportError, ValueError):
        return 1


def _build_table(build: Any, columns: list[str] | None) -> pa.Table:
    import dask.dataframe as dd

    from ..columnar import to_arrow_table
    from ..join.sources import read_all

    if isinstance(build, dd.DataFrame):
        build = build if columns is None else build[columns]
        return to_arrow_table(build.compute())
    return read_all(build, columns) if columns is not None else to_arrow_table(build)


def _probe_files(probe: Any) -> tuple[list[ProbeFile], pa.Schema] | None:
    """The files of a Parquet probe dataset (:func:`bloomdb.join.dataset.dataset_files`: folder,
    hive partitions, glob, list of paths; or one file) and their schema; None for a Dask frame."""
    import os

    import pyarrow.parquet as pq

    if isinstance(probe, (str, os.PathLike)) and os.path.isfile(probe):
        return [ProbeFile(os.fspath(probe))], pq.read_schema(probe)
    found = dataset_files(probe)
    if found is None:
        return None
    files, schema = found
    return files, schema if schema is not None else pq.read_schema(files[0].path)


def _index_keys(frame: Any, keys: list[str], side: str) -> Any:
    """``frame`` with the key names that are its index's name made columns, as ``dd.merge`` and
    ``pd.merge`` take index level names in ``on``: a Dask DataFrame's (one-level) index by
    ``reset_index`` (lazy, per partition), a pandas DataFrame's levels by
    :func:`bloomdb.join.dataset.index_keys`; anything else as given. A name that is both the index's
    and a column's raises InvalidArgument (ambiguous, as pandas refuses it)."""
    import dask.dataframe as dd

    if not isinstance(frame, dd.DataFrame):
        return index_keys(frame, keys, side)
    name = frame._meta.index.name
    if name is None or name not in keys:
        return frame
    if name in frame.columns:
        raise InvalidArgument(f"{side} key {name!r} is both the index and a column of the {side} DataFrame, "
                              "which is ambiguous (pandas refuses it too)")
    return frame.reset_index()


def _meta(probe_schema: pa.Schema, build_schema: pa.Schema, kw: dict) -> pd.DataFrame:
    """The result's empty frame: hash_join of empty inputs of the same schemas."""
    res = hash_join(probe_schema.empty_table(), build_schema.empty_table(), **kw)
    return res.to_pandas()


def filtered_join(probe: Any, build: Any, on: Any = None, how: str = "inner", columns: list[str] | None = None,
                  aggregates: Any = None, filter: str = "blocked:10", *, left_on: Any = None,  # noqa: A002
                  right_on: Any = None, broadcast_rows: int = DEFAULT_BROADCAST_ROWS, pushdown: str = "adaptive",
                  split_every: int = 8, shuffle_partitions: int | None = None, shuffle_method: str | None = None,
                  explain: bool = False):
    """Join ``probe`` with ``build`` on equal keys across a Dask cluster, dropping probe rows the
    build side's filter rejects before anything leaves their worker.

    ``probe``: a Dask DataFrame, or a Parquet dataset (a folder, a glob, a file or a list of them:
    one task per file, each file's row groups pruned by its own statistics and Bloom filters).
    ``build``: a Dask or pandas DataFrame, a pyarrow Table, or a Parquet file / columnar table path.
    ``on`` / ``left_on`` / ``right_on`` (column names, or the name of a Dask or pandas frame's
    index, as ``dd.merge``) / ``how`` (``"inner"``, ``"left"``, ``"right"``, ``"full"``,
    ``"semi"``, ``"anti"``; right and full joins take a pandas or Dask DataFrame build side (a
    pandas one becomes a one-partition Dask DataFrame) and always run the shuffle plan, where each
    build row lives in one co-partition) /
    ``columns`` / ``aggregates`` / ``pushdown`` mean what they mean in
    :func:`bloomdb.join.hash_join`; ``filter``: the build-side filter spec. Builds of at most
    ``broadcast_rows`` rows are broadcast, larger ones use the shuffle plan (``shuffle_partitions``
    co-partitions, default the probe's partition count; ``shuffle_method`` goes to Dask's
    ``shuffle``: None for Dask's default, ``"tasks"`` or ``"p2p"``). Returns a lazy Dask DataFrame of result
    rows, or a dict of aggregates; with ``explain=True`` a pair ``(result, DaskJoinStats)`` (the
    row result is then persisted on the cluster; the shuffle plan runs its filter once more over the
    probe side to count what it rejects). Raises InvalidArgument for bad options, unknown
    columns or, in the shuffle plan, keys other than integers or strings.
    """
    import dask
    import dask.dataframe as dd

    if how not in HOWS:
        raise InvalidArgument(f"how must be one of {HOWS}, got {how!r}")
    pkeys, bkeys = parse_on(on, left_on, right_on)
    if isinstance(broadcast_rows, bool) or not isinstance(broadcast_rows, int) or broadcast_rows < 0:
        raise InvalidArgument(f"broadcast_rows must be a non-negative integer, got {broadcast_rows!r}")
    probe, build = _index_keys(probe, pkeys, "probe"), _index_keys(build, bkeys, "build")
    found = None if isinstance(probe, dd.DataFrame) else _probe_files(probe)
    if found is None and not isinstance(probe, dd.DataFrame):
        raise InvalidArgument(f"probe must be a Dask DataFrame or a Parquet dataset path, got {type(probe).__name__}")
    files, pschema = found if found is not None else (None, pa.Schema.from_pandas(probe._meta, preserve_index=False))
    if how in KEEPS_BUILD and isinstance(build, pd.DataFrame):  # each build row must live in one co-partition
        build = dd.from_pandas(build, npartitions=1)
    build_rows = int(len(build)) if isinstance(build, dd.DataFrame) else None
    if how in KEEPS_BUILD and build_rows is None:  # every worker would add the build-only rows again
        raise InvalidArgument(f"a {how} join keeps the build rows no probe row matches; distributed, it needs a pandas "
                              "or Dask DataFrame build side (co-partitioned with the probe), got "
                              f"{type(build).__name__}: build.to_pandas() or dd.from_pandas(...)")
    bschema = pa.Schema.from_pandas(build._meta, preserve_index=False) if isinstance(build, dd.DataFrame) \
        else schema_of(build)
    aggs = parse_aggregates(aggregates, pschema, bschema, how, pkeys, bkeys) if aggregates is not None else None
    ask, part_aggs = _partial_aggs(aggs) if aggs is not None else (None, None)
    kw = dict(left_on=pkeys, right_on=bkeys, how=how, columns=columns, aggregates=ask, filter=filter,
              pushdown=pushdown, threads=1)
    workers = _client_workers()

    if build_rows is None or (build_rows <= broadcast_rows and how not in KEEPS_BUILD):
        bt = _build_table(build, None)
        meta = None if aggs else _meta(pschema, bt.schema, kw)
        shipped = ship(bt)
        if files is not None:
            parts = [dask.delayed(_join_part, nout=2)(i, (f, pschema), shipped, kw) for i, f in enumerate(files)]
        else:
            parts = [dask.delayed(_join_part, nout=2)(i, p, shipped, kw) for i, p in enumerate(probe.to_delayed())]
        plan, build_bytes, nbuild = "broadcast", int(bt.nbytes), bt.num_rows
        stats_parts = [p[1] for p in parts]
        results = [p[0] for p in parts]
    else:
        from .build import build_filter

        if files is not None:
            if any(f.partition for f in files):
                raise InvalidArgument("the shuffle plan reads plain Parquet files; hive-partitioned datasets "
                                      "join with the broadcast plan (raise broadcast_rows)")
            probe = dd.read_parquet([f.path for f in files])
        for side, frame, keys in (("probe", probe._meta, pkeys), ("build", build._meta, bkeys)):
            for k in keys:
                if k not in frame.columns:
                    raise InvalidArgument(f"{side} side has no key column {k!r}")
            if frame[keys[0]].dtype.kind not in "iuOSU" and "string" not in str(frame[keys[0]].dtype):
                raise InvalidArgument(f"the shuffle plan partitions on integer or string keys; {side} key "
                                      f"{keys[0]!r} is {frame[keys[0]].dtype}")
        filt = build_filter(build, column=bkeys[0], spec=filter, capacity=max(1, build_rows),  # rows: no count pass
                            split_every=split_every)
        n = shuffle_partitions or probe.npartitions
        fshipped = ship(filt)
        pmeta = probe._meta.assign(**{_PART: np.zeros(0, np.int64)})
        # blockwise: fused with the partition's read, so rejected rows never leave their worker
        kept = probe.map_partitions(_kept_rows, pkeys[0], fshipped, n, pushdown, meta=pmeta)
        kept = kept.shuffle(on=_PART, npartitions=n, shuffle_method=shuffle_method)
        btag = build.map_partitions(_tag_build, bkeys[0], n, how in KEEPS_BUILD,
                                    meta=build._meta.assign(**{_PART: np.zeros(0, np.int64)}))
        btag = btag.shuffle(on=_PART, npartitions=n, shuffle_method=shuffle_method)
        bmeta = pa.Schema.from_pandas(build._meta, preserve_index=False)
        meta = None if aggs else _meta(pschema, bmeta, kw)
        pkw = dict(kw, filter=None)  # the rows were filtered already: each co-partition only probes its hash table
        pairs = [dask.delayed(_join_part, nout=2)(i, p, b, pkw, False)
                 for i, (p, b) in enumerate(zip(kept.to_delayed(), btag.to_delayed()))]
        results = [p[0] for p in pairs]
        if how in KEEPS_PROBE:  # rows the filter rejected match nothing: joined against no build rows
            rejected = probe.map_partitions(_rejected_rows, pkeys[0], fshipped, pushdown, meta=probe._meta)
            empty = bmeta.empty_table()
            results += [dask.delayed(_join_part, nout=2)(i, r, empty, pkw, False)[0]
                        for i, r in enumerate(rejected.to_delayed())]
        plan, nbuild = "shuffle", build_rows
        build_bytes = build.memory_usage(deep=True, index=False).sum() if explain else 0
        stats_parts = probe.map_partitions(_filter_stats, pkeys[0], fshipped, pushdown, meta=_STATS_META) \
            if explain else []

    if aggs is not None:
        from .build import _tree

        total = _tree(results, functools.partial(_combine_aggs, part_aggs), split_every)
        if not explain:
            return _final_aggs(aggs, total.compute())
        value, stats, build_bytes = dask.compute(total, stats_parts, build_bytes)
        return _final_aggs(aggs, value), DaskJoinStats(how, plan, filter, nbuild, int(build_bytes), workers,
                                                       _partition_stats(stats))
    if explain:
        results, stats_parts = dask.persist(results, stats_parts)  # one run yields both (the broadcast plan)
        stats, build_bytes = dask.compute(stats_parts, build_bytes)
        return (dd.from_delayed(results, meta=meta, verify_meta=False),
                DaskJoinStats(how, plan, filter, nbuild, int(build_bytes), workers, _partition_stats(stats)))
    return dd.from_delayed(results, meta=meta, verify_meta=False)


_STATS_META = pd.DataFrame({c: np.zeros(0, np.int64) for c in
                            ("rows_scanned", "rows_rejected", "rows_shipped", "bytes_shipped", "bytes_plain_merge")})


def _partition_stats(stats: Any) -> list[PartitionStats]:
    """PartitionStats from the broadcast plan's list or the shuffle plan's frame (a row per partition)."""
    if isinstance(stats, pd.DataFrame):
        return [PartitionStats(i, *map(int, row)) for i, row in enumerate(stats[list(_STATS_META.columns)].values)]
    return list(stats)

