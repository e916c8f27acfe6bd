"""``hash_join``: a hash join whose build-side filter is pushed down into the probe scan.

This module only wires the parts together: :mod:`.plan` parses the request, :mod:`.build` holds
the build side (hash table + filter), :mod:`.scan` scans the probe chunks on a thread pool, and
a sink turns the matches into the result — rows (:mod:`.rows`, :mod:`.outer`), aggregates
(:mod:`.aggregate`) or grouped aggregates (:mod:`.groupby`); :mod:`.stream` hands rows out as
they come.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import numpy as np

from ..errors import InvalidArgument
from . import outer, stream as streaming
from .adaptive import AdaptivePolicy
from .aggregate import AggSink
from .build import BuildSide
from .compare import KeyDomain, key_domain
from .dataset import index_keys, open_build, open_probe
from .keys import Packer, combine, from_arrow
from .plan import HOWS, KEEPS_BUILD, KEEPS_PROBE, output_columns, parse_aggregates, parse_group_by, parse_on
from .predicates import parse_where
from .rows import RowSink
from .scan import Scanner, scan_all
from .sources import ProbeSource, read_all, schema_of
from .stats import ChunkResult, JoinStats

#: The filter pushed into the scan unless the caller names another (fixed 256 KiB for register).
DEFAULT_FILTER = "register:2"


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"{name} must be a positive integer, got {value!r}")


def _domains(src: ProbeSource, bschema, pkeys: list[str], bkeys: list[str]) -> list[KeyDomain]:
    for side, names, schema in (("probe", pkeys, src.schema), ("build", bkeys, bschema)):
        for k in names:
            if k not in schema.names:
                raise InvalidArgument(f"{side} side has no key column {k!r}")
    return [key_domain(p, src.schema.field(p).type, b, bschema.field(b).type) for p, b in zip(pkeys, bkeys)]


def _sink(how, columns, aggregates, group_by, src, bschema, pkeys, bkeys, suffix):
    """``(make_sink(build_side), build columns the sink reads)``."""
    if group_by is not None:
        from .groupby import make_group_sink

        if aggregates is None:
            raise InvalidArgument("group_by needs aggregates= (one row per group of those values)")
        groups = parse_group_by(group_by, how, src.schema, bschema, pkeys, bkeys)
        aggs = parse_aggregates(aggregates, src.schema, bschema, how, pkeys, bkeys)
        cols = [g.name for g in groups if g.side == "build"] + [g.fill for g in groups if g.fill] + \
            [a.column for a in aggs if a.side == "build" and a.column] + [a.fill for a in aggs if a.fill]
        return (lambda bs: make_group_sink(groups, aggs, bs, how, src.schema)), cols
    if aggregates is not None:
        aggs = parse_aggregates(aggregates, src.schema, bschema, how, pkeys, bkeys)
        cols = [a.column for a in aggs if a.side == "build" and a.column] + [a.fill for a in aggs if a.fill]
        return (lambda bs: AggSink(aggs, bs, how, src.schema)), cols
    outs = output_columns(columns, how, src.schema, bschema, pkeys, bkeys, suffix)
    cols = [o.name for o in outs if o.side == "build"] + [o.fill for o in outs if o.fill]
    return (lambda bs: RowSink(outs, bs, how, src.schema)), cols


def _build(build, cols, bkeys, domains, filter_spec, size, stats: JoinStats) -> BuildSide:
    t0 = time.perf_counter()
    bt = read_all(build, list(dict.fromkeys(bkeys + cols)))
    parts = [from_arrow(bt[b], d) for b, d in zip(bkeys, domains)] if len(bkeys) > 1 else None
    packer = Packer.of(parts) if parts else None
    combined = (packer.pack(parts) if packer else combine(parts)) if parts else None
    bs = BuildSide(bt, bkeys[0], domains[0], filter_spec, size, combined, packer)
    stats.build_seconds = time.perf_counter() - t0
    stats.build_rows, stats.build_keys = bs.num_rows, bs.groups
    if bs.filter is not None:
        stats.filter, stats.filter_bytes = filter_spec, bs.filter.size_bytes
        stats.filter_estimated_fpr = float(bs.filter.estimated_fpr())
    return bs


def _bloom(src: ProbeSource, bs: BuildSide, pkey: str, how: str) -> np.ndarray | None:
    """Per chunk: whether the probe's own Bloom filters admit a build key (None = not asked).
    Joins that keep unmatched probe rows read every chunk anyway: not asked."""
    if not bs.non_null_rows or how in KEEPS_PROBE or not src.has_bloom_filters(pkey):
        return None
    wanted = bs.distinct_keys(src.schema.field(pkey).type)
    return src.bloom_may_contain(pkey, wanted) if wanted is not None else None


def _counted(results: Iterator[ChunkResult], stats: JoinStats, policy: AdaptivePolicy) -> Iterator[ChunkResult]:
    t1 = time.perf_counter()
    for r in results:
        stats.add(r)
        yield r
    stats.probe_seconds = time.perf_counter() - t1
    stats.transitions = list(policy.transitions)


def hash_join(
    probe: Any,
    build: Any,
    on: Any = None,
    how: str = "inner",
    columns: list[str] | None = None,
    aggregates: Any = None,
    filter: str | None = DEFAULT_FILTER,  # noqa: A002 - the natural name
    pushdown: str = "adaptive",
    explain: bool = False,
    threads: int = 2,
    filter_size_bytes: int | None = None,
    chunk_rows: int = 65536,
    adaptive_threshold: float = 0.10,
    verify: bool = True,
    left_on: Any = None,
    right_on: Any = None,
    group_by: Any = None,
    where: Any = None,
    stream: bool = False,
    suffix: str = "_right",
):
    """Join ``probe`` with ``build`` on equal keys; filter the probe scan with a build-side filter.

    ``probe``: a :mod:`bloomdb.columnar` table (folder path or opened table); a Parquet file, a
    folder (hive-partitioned or not) or glob of Parquet files, a list of paths or a
    ``pyarrow.dataset.Dataset`` (:mod:`bloomdb.join.dataset`: each file's row groups pruned by its
    own statistics and Bloom filters, files scanned by the same thread pool); a
    ``pyarrow.RecordBatchReader`` (read once, batch by batch); or in-memory data (pyarrow Table,
    pandas/Polars DataFrame or Series, Polars LazyFrame (collected), dict of arrays; cut into
    ``chunk_rows`` chunks; ``string_view`` / ``binary_view`` columns read as large strings/binaries). ``build``: a
    columnar table, a Parquet file, a folder (hive-partitioned or not), glob or list of Parquet
    files, a ``pyarrow.dataset.Dataset``, a ``RecordBatchReader`` or in-memory data; only the
    columns the join needs are read, and held in memory.

    ``on``: the key column name on both sides (a pandas DataFrame's named index level too, as in
    pandas' ``merge``: it becomes a column), or a list of names: a multi-column key (rows match
    when every column matches; a null in any key column never matches); ``left_on`` /
    ``right_on``: the probe's and the build's key columns when their names differ (pandas-style,
    lists of equal length). Min/max and Parquet Bloom pruning use the first key column. Keys
    compare by value, as DuckDB compares them (:mod:`bloomdb.join.compare`); a pair of key types
    with no common type raises :class:`InvalidArgument` naming both. Null keys never match.

    ``how`` (pandas / Polars / DuckDB semantics; many-to-many keys fan out, one row per pair):
    ``"inner"``; ``"left"`` (every probe row; build columns null where no build row matches);
    ``"right"`` (every build row; probe columns null where no probe row matches); ``"full"`` (both);
    ``"semi"`` (probe rows with a match, once); ``"anti"`` (probe rows without a match, null keys
    included). A key named alike on both sides is one result column; in right and full joins it is
    filled from the build key on build-only rows (``USING`` / pandas coalescing), unless ``columns``
    names it ``"probe.k"``: that is the probe row's own value, null on build-only rows. A key pair
    named differently (``left_on="k", right_on="kk"``) keeps both columns by default, as pandas'
    merge and DuckDB's ``SELECT *``: ``k`` the probe's value (null on build-only rows), ``kk`` the build's. Where the build-side filter saves work:
    inner, semi and right joins skip, for every probe row it rejects, the hash probe and the
    decoding of every other column; left, full and anti joins must return rejected rows too, so
    there it saves the hash probes and the build-side lookups only (every probe column is decoded).

    ``columns``: result columns (default: all probe columns, plus the build side's columns but
    the keys named alike on both sides, for inner/left/right/full, a build column named like a probe column getting ``suffix``,
    ``"_right"`` as in Polars; ``"build.x"`` / ``"probe.x"`` pick a side). ``aggregates``: instead
    of rows, ``["sum(x)", "count(*)", "avg(build.y)", "min(y)", "max(y)", "count(y)"]`` over probe
    and build columns, folded chunk by chunk without building the joined rows: a dict, or with
    ``group_by`` (columns of either side) a ``pyarrow.Table`` with one row per group
    (:mod:`.groupby`). Integer sums are exact, float sums float64, ``avg`` a float.
    ``where``: ``("v", ">", 3)``, ``("d", "in", [...])`` or a list of such predicates on probe
    columns (AND), evaluated in the scan before other columns are decoded (:mod:`.predicates`).

    ``filter``: filter spec built from the distinct build keys and pushed into the scan
    (``"register:2"`` is fixed at ``filter_size_bytes`` = 256 KiB whatever the build size — past
    ~100k distinct keys it rejects less, and ``adaptive`` then turns it off; give
    ``"blocked:10"`` to size it for the build keys, ~1.25 bytes per key; None disables).
    ``pushdown``: ``"on"``, ``"off"`` or ``"adaptive"`` (:mod:`bloomdb.join.adaptive`;
    ``adaptive_threshold`` = rejection rate below which filtering switches off). Every mode gives
    the same result. ``threads``: chunks scanned in parallel. ``verify``: checksum every columnar
    chunk the first time an open table reads it.

    Returns a ``pyarrow.Table`` (rows in probe order; right/full joins then the unmatched build
    rows in build order), a dict of aggregates, or a grouped Table; with ``stream=True`` a
    ``pyarrow.RecordBatchReader`` of the rows (:mod:`.stream`); with ``explain=True`` a pair
    ``(result, JoinStats)`` (per file and per column: chunks read and skipped, rows decoded).
    Raises :class:`InvalidArgument` for unknown columns, mismatched key types or bad options.
    Cost: O(build) to build; per probe chunk one key decode, one filter pass, hash probes for
    survivors, and decoding of other columns at the result rows only (filtering on) or whole (off).
    """
    if how not in HOWS:
        raise InvalidArgument(f"how must be one of {HOWS}, got {how!r}")
    _positive("threads", threads)
    _positive("chunk_rows", chunk_rows)
    if stream and (aggregates is not None or group_by is not None):
        raise InvalidArgument("stream=True returns rows; aggregates and group_by return one small result")
    policy = AdaptivePolicy(pushdown, threshold=adaptive_threshold)
    pkeys, bkeys = parse_on(on, left_on, right_on)
    src = open_probe(index_keys(probe, pkeys, "probe"), verify, chunk_rows)
    build = open_build(index_keys(build, bkeys, "build"))
    bschema = schema_of(build)
    domains = _domains(src, bschema, pkeys, bkeys)
    preds = parse_where(where, src.schema)
    if not isinstance(suffix, str) or not suffix:
        raise InvalidArgument(f"suffix must be a non-empty string, got {suffix!r}")
    make_sink, bcols = _sink(how, columns, aggregates, group_by, src, bschema, pkeys, bkeys, suffix)

    stats = JoinStats(how=how, probe=src.label, pushdown=pushdown, threads=threads)
    bs = _build(build, bcols, bkeys, domains, filter, filter_size_bytes, stats)
    if bs.filter is None:
        policy = AdaptivePolicy("off")
    sink = make_sink(bs)
    matched = np.zeros(bs.groups, np.bool_) if how in KEEPS_BUILD else None
    scanner = Scanner(src, bs, pkeys, domains, how, policy, _bloom(src, bs, pkeys[0], how), preds, sink, matched)
    results = _counted(scan_all(scanner, src.tasks(), threads), stats, policy)

    def build_only():
        rows = outer.build_only(bs, matched) if matched is not None else np.zeros(0, np.int64)
        stats.build_only_rows = rows.shape[0]
        stats.result_rows += rows.shape[0]
        return rows

    if aggregates is not None:
        partials = [r.partial if group_by is None else r.groups for r in results]
        partials.append(sink.build_only(build_only()))
        result: Any = sink.result(partials)
    else:
        batches = streaming.batches(sink, results, lambda: sink.build_only(build_only()))
        result = streaming.reader(sink.schema, batches)
        if not stream:
            result = result.read_all()
    return (result, stats) if explain else result
