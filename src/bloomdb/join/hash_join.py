"""``hash_join``: a hash join whose build-side filter is pushed down into the probe scan.

For each probe chunk (row group): skip it when its key min/max excludes every build key;
decode the key column only; if filtering is on for this chunk, check every key against the
build side's filter (one batch kernel) and keep the survivors as a selection vector; probe the
hash table for the survivors (or for every row when filtering is off); then decode the other
requested columns only at the matching positions (filtering on) or whole (filtering off, the
plain scan-then-join). Aggregates are folded chunk by chunk, weighted by the number of build rows
per key, without materialising the join. Chunks run on a thread pool (numba kernels, numpy
and pyarrow release the GIL).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgument
from . import _join_kernels as K
from .adaptive import AdaptivePolicy, Transition
from .build import BuildSide
from .compare import key_domain
from .keys import _ro, combine, from_arrow
from .plan import HOWS, Agg, OutColumn, output_columns, parse_aggregates, parse_on
from .sources import ProbeSource, open_source, read_all, schema_of

#: The filter pushed into the scan unless the caller names another (fixed 256 KiB for register).
DEFAULT_FILTER = "register:2"


@dataclass
class JoinStats:
    """What one join did (``explain=True``). Row counts are summed over the probe scan."""

    how: str = "inner"
    probe: str = ""
    pushdown: str = "adaptive"
    filter: str | None = None
    filter_bytes: int = 0
    filter_estimated_fpr: float = 0.0
    threads: int = 1
    build_rows: int = 0
    build_keys: int = 0
    probe_rows: int = 0
    chunks: int = 0
    chunks_skipped_minmax: int = 0
    chunks_skipped_bloom: int = 0
    chunks_filtered: int = 0
    chunks_unfiltered: int = 0
    rows_filter_checked: int = 0
    rows_rejected_by_filter: int = 0
    rows_probed: int = 0
    false_positives: int = 0
    matched_rows: int = 0
    result_rows: int = 0
    rows_decoded: dict[str, int] = field(default_factory=dict)
    transitions: list[Transition] = field(default_factory=list)
    build_seconds: float = 0.0
    probe_seconds: float = 0.0

    @property
    def rejection_rate(self) -> float:
        return self.rows_rejected_by_filter / self.rows_filter_checked if self.rows_filter_checked else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["transitions"] = [t.__dict__ for t in self.transitions]
        d["rejection_rate"] = self.rejection_rate
        return d

    def explain(self) -> str:
        lines = [
            f"{self.how} hash join, probe = {self.probe}, pushdown = {self.pushdown}, threads = {self.threads}",
            f"  build: {self.build_rows:,} rows, {self.build_keys:,} distinct keys, {self.build_seconds * 1e3:.1f} ms",
            f"  filter: {self.filter or 'none'}"
            + (f" ({self.filter_bytes:,} bytes, ~{100 * self.filter_estimated_fpr:.2f}% FP expected)" if self.filter else ""),
            f"  scan: {self.chunks} chunks ({self.chunks_skipped_minmax} skipped by min/max, {self.chunks_skipped_bloom}"
            f" by the file's Bloom filters, {self.chunks_filtered} filtered,"
            f" {self.chunks_unfiltered} unfiltered), {self.probe_rows:,} rows, {self.probe_seconds * 1e3:.1f} ms",
            f"  filter: checked {self.rows_filter_checked:,} rows, rejected {self.rows_rejected_by_filter:,}"
            f" ({100 * self.rejection_rate:.1f}%); hash table probed {self.rows_probed:,} rows,"
            f" caught {self.false_positives:,} filter false positives",
            f"  matched {self.matched_rows:,} probe rows -> {self.result_rows:,} result rows",
            "  rows decoded per column: " + ", ".join(f"{k} {v:,}" for k, v in self.rows_decoded.items()),
        ]
        if self.transitions:
            lines.append("  filter switched: " + ", ".join(
                f"{t.to} at chunk {t.chunk} (rejecting {100 * t.rejection_rate:.1f}%)" for t in self.transitions))
        return "\n".join(lines)

    __str__ = explain


@dataclass
class _ChunkOut:
    decoded: dict[str, int]
    skipped: bool = False
    skipped_bloom: bool = False
    filtered: bool = False
    rows: int = 0
    checked: int = 0
    rejected: int = 0
    probed: int = 0
    fps: int = 0
    matched: int = 0
    result_rows: int = 0
    partial: list[Any] | None = None
    arrays: list[pa.Array] | None = None


# ---- aggregation helpers -------------------------------------------------------------------


def _sum(v: np.ndarray, valid, index, w) -> Any:
    """Exact integer / float64 sum of v·w over the rows (one fused kernel pass, no copies)."""
    pos = index if index is not None else _NO_POS
    vv = valid if valid is not None else _NO_VALID
    ww = w if w is not None else _NO_W
    if v.dtype.kind == "f":
        s, cnt = K.weighted_sum(_ro(v.astype(np.float64, copy=False)), pos, index is not None, ww, w is not None, vv,
                                valid is not None)
        return float(s) if cnt else None
    signed = v.dtype.kind in "ib"
    if v.dtype == np.bool_:
        v = v.view(np.uint8)
    if v.dtype.itemsize != 8:
        v = v.astype(np.int64 if v.dtype.kind == "i" else np.uint64)
    wrapped, approx, bound, cnt = K.weighted_isum(_ro(v.view(np.uint64)), signed, pos, index is not None, ww,
                                                  w is not None, vv, valid is not None)
    if cnt == 0:
        return None
    if bound * (pos.shape[0] if index is not None else v.shape[0]) * 2.0**-52 < 2.0**61:
        r = int(wrapped)  # the exact sum is r + k * 2^64 for the k that lands nearest the float estimate
        return r + round((approx - r) / 2.0**64) * (1 << 64)
    return _slow_sum(v, valid, index, w)


def _slow_sum(v: np.ndarray, valid, index, w) -> Any:
    """Exact Σ v·w with Python integers (only when the float error bound is too loose)."""
    rows = index if index is not None else np.arange(v.shape[0])
    keep = np.ones(rows.shape[0], np.bool_) if valid is None else valid[rows]
    vals = v[rows][keep].tolist()
    ws = [1] * len(vals) if w is None else w[keep].tolist()
    return sum(int(a) * b for a, b in zip(vals, ws)) if vals else None


_NO_POS = np.zeros(0, np.int64)
_NO_VALID = np.zeros(0, np.bool_)
_NO_W = np.zeros(1, np.int64)


def _partial(agg: Agg, v: np.ndarray | None, valid: np.ndarray | None, index: np.ndarray | None,
             w: np.ndarray | None, nrows: int) -> Any:
    """One chunk's value of ``agg`` over its result rows (``nrows`` matched probe rows)."""
    if agg.func == "count" and agg.column is None:
        return nrows if w is None else int(w.sum())
    assert v is not None
    if agg.func == "sum":
        return _sum(v, valid, index, w)
    if index is not None:
        v = v[index]
        valid = None if valid is None else valid[index]
    if valid is not None:
        v = v[valid]
        w = None if w is None else w[valid]
    if agg.func == "count":
        return v.size if w is None else int(w.sum())
    if v.size == 0:
        return None
    if v.dtype == np.bool_:
        v = v.astype(np.int64)
    if v.dtype.kind == "f":  # as DuckDB: NaN orders above +inf (max is NaN if any; min is NaN if all)
        nan = np.isnan(v)
        if agg.func == "max" and nan.any() or nan.all():
            return float("nan")
        v = v[~nan]
        return float(v.min() if agg.func == "min" else v.max())
    return int(v.min() if agg.func == "min" else v.max())


def _nan_last(x: Any) -> tuple[bool, Any]:
    """Sort key ordering NaN above every number (DuckDB's order for floats)."""
    return (x != x, 0 if x != x else x)


def _combine(agg: Agg, a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if agg.func in ("sum", "count"):
        return a + b
    return min(a, b, key=_nan_last) if agg.func == "min" else max(a, b, key=_nan_last)


# ---- the join ------------------------------------------------------------------------------


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
):
    """Join ``probe`` with ``build`` on equal keys; filter the probe scan with a build-side filter.

    ``probe`` / ``build``: a :mod:`bloomdb.columnar` table (folder path or opened table), a Parquet
    file path, or in-memory data (pyarrow Table, pandas/Polars DataFrame, dict of arrays; cut into
    ``chunk_rows`` chunks). ``on``: the key column name on both sides, or a list of names: a multi-column key (rows match
    when every column matches; a null in any key column never matches); ``left_on`` /
    ``right_on``: the probe's and the build's key columns when their names differ (pandas-style,
    lists of equal length). A list is never a (probe key, build key) pair. Min/max and Parquet
    Bloom pruning use the first key column. Keys compare by value, as DuckDB compares them
    (:mod:`bloomdb.join.compare`: integers of any width and sign, bool and floats with each other;
    dates and timestamps as instants, in the finer unit; strings and binary by their bytes); a
    pair of key types with no common type raises :class:`InvalidArgument` naming both. Null keys
    never match.

    ``how``: ``"inner"`` (one row per matching pair), ``"semi"`` (probe rows with a match, once),
    ``"anti"`` (probe rows without a match, null keys included).
    ``columns``: result columns (default: all probe columns, plus the build side's non-key columns
    for inner joins; ``"build.x"`` picks a build column whose name the probe side also has).
    ``aggregates``: instead of rows, fold ``["sum(x)", "count(*)", "min(y)", "max(y)", "count(y)"]``
    over the join result (probe columns; weighted by duplicate build keys) into a dict; integer sums
    are exact, float sums are float64.

    ``filter``: filter spec built from the build keys and pushed into the scan (``"register:2"`` is
    fixed at ``filter_size_bytes`` = 256 KiB; None disables). ``pushdown``: ``"on"``, ``"off"`` or
    ``"adaptive"`` (see :mod:`bloomdb.join.adaptive`; ``adaptive_threshold`` = rejection rate below
    which filtering switches off). Every mode gives the same result: the filter only removes rows
    the hash table would reject. ``threads``: chunks scanned in parallel. ``verify`` (default on):
    checksum every columnar chunk the first time an open table reads it (once per kept-open table,
    not per join), so a damaged table raises CorruptionError instead of giving wrong rows;
    ``verify=False`` skips the body checksums (manifest and chunk headers are always checked).

    Returns a ``pyarrow.Table`` (rows in probe order) or a dict of aggregates; with
    ``explain=True`` a pair ``(result, JoinStats)``. Raises :class:`InvalidArgument` for unknown
    columns, mismatched key types or bad options. Cost: O(build) to build; per probe chunk one
    key decode, one filter pass, hash probes for survivors, and decoding of other columns at the
    matched positions only (filtering on) or whole (off).
    """
    if how not in HOWS:
        raise InvalidArgument(f"how must be one of {HOWS}, got {how!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidArgument(f"threads must be a positive integer, got {threads!r}")
    policy = AdaptivePolicy(pushdown, threshold=adaptive_threshold)
    pkeys, bkeys = parse_on(on, left_on, right_on)
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise InvalidArgument(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    src: ProbeSource = open_source(probe, verify, chunk_rows)
    bschema = schema_of(build)
    for side, names, schema in (("probe", pkeys, src.schema), ("build", bkeys, bschema)):
        for k in names:
            if k not in schema.names:
                raise InvalidArgument(f"{side} side has no key column {k!r}")
    domains = [key_domain(p, src.schema.field(p).type, b, bschema.field(b).type) for p, b in zip(pkeys, bkeys)]
    pkey, bkey, domain, ptype = pkeys[0], bkeys[0], domains[0], src.schema.field(pkeys[0]).type
    multi = len(pkeys) > 1
    aggs = parse_aggregates(aggregates, src.schema) if aggregates is not None else None
    outs: list[OutColumn] = [] if aggs else output_columns(columns, how, src.schema, bschema, bkeys)
    build_cols = list(dict.fromkeys(bkeys + [o.name for o in outs if o.side == "build"]))

    stats = JoinStats(how=how, probe=src.label, pushdown=pushdown, threads=threads)
    t0 = time.perf_counter()
    bt = read_all(build, build_cols)
    combined = combine([from_arrow(bt[b], d) for b, d in zip(bkeys, domains)]) if multi else None
    bs = BuildSide(bt, bkey, domain, filter, filter_size_bytes, combined)
    stats.build_seconds = time.perf_counter() - t0
    stats.build_rows, stats.build_keys = bs.num_rows, bs.groups
    if bs.filter is not None:
        stats.filter = filter
        stats.filter_bytes = bs.filter.size_bytes
        stats.filter_estimated_fpr = float(bs.filter.estimated_fpr())
    else:
        policy = AdaptivePolicy("off")
    agg_cols = sorted({a.column for a in aggs if a.column is not None}) if aggs else []

    bloom = None
    if bs.non_null_rows and how != "anti" and src.has_bloom_filters(pkey):  # distinct keys only when used
        wanted = bs.distinct_keys(ptype)
        bloom = src.bloom_may_contain(pkey, wanted) if wanted is not None else None

    def scan(i: int) -> _ChunkOut:
        n = src.chunk_rows(i)
        bounds = domain.stat_range(*src.key_stats(i, pkey), ptype)
        if bs.non_null_rows == 0 or not bs.any_key_between(bounds) or (bloom is not None and not bloom[i]):
            by_bloom = bool(bs.non_null_rows > 0 and bs.any_key_between(bounds))
            if how != "anti" or n == 0:
                return _ChunkOut({}, skipped=not by_bloom, skipped_bloom=by_bloom, rows=n)
            ch = src.chunk(i)
            return finish(ch, _ChunkOut(ch.decoded, skipped=True, rows=n), np.arange(n, dtype=np.int64), None, True)
        ch = src.chunk(i)
        keys = combine([ch.keys(p, d) for p, d in zip(pkeys, domains)]) if multi else ch.keys(pkey, domain)
        use = bs.filter is not None and policy.decide(i)
        r = _ChunkOut(ch.decoded, filtered=use, rows=n)
        if use:
            sel = np.flatnonzero(bs.filter_pass(keys))
            r.checked, r.rejected = n, n - sel.shape[0]
            policy.record(i, r.checked, r.rejected)
            pos, grp, r.probed = bs.probe(keys, sel)
            r.fps = r.probed - pos.shape[0]
        else:
            pos, grp, r.probed = bs.probe(keys, None)
        r.matched = pos.shape[0]
        if how == "anti":
            keep = np.ones(n, np.bool_)
            keep[pos] = False
            return finish(ch, r, np.flatnonzero(keep), None, not use)
        return finish(ch, r, pos, grp, not use)

    def finish(ch, r: _ChunkOut, pos, grp, whole: bool) -> _ChunkOut:
        if aggs is not None:
            w = bs.group_count[grp] if (how == "inner" and grp is not None) else None
            r.result_rows = pos.shape[0] if w is None else int(w.sum())
            values = {c: ch.numeric(c, pos, whole) for c in agg_cols} if pos.shape[0] else {}
            r.partial = [
                _partial(a, *(values[a.column] if a.column else (None, None, None)), w, pos.shape[0])
                if pos.shape[0] else (0 if a.func == "count" else None)
                for a in aggs
            ]
            return r
        rows = None
        if how == "inner":
            pos, rows = bs.expand(pos, grp)
        r.result_rows = pos.shape[0]
        arrays = []
        for o in outs:
            if o.side == "probe":
                arrays.append(ch.arrow(o.name, pos, whole))
            else:
                arrays.append(bs.table.column(o.name).take(pa.array(rows)))
        r.arrays = arrays
        return r

    t1 = time.perf_counter()
    idx = range(src.num_chunks)
    if threads > 1 and src.num_chunks > 1:
        with ThreadPoolExecutor(max_workers=threads) as ex:
            results = list(ex.map(scan, idx))
    else:
        results = [scan(i) for i in idx]
    stats.probe_seconds = time.perf_counter() - t1

    for r in results:
        stats.chunks += 1
        stats.probe_rows += r.rows
        stats.chunks_skipped_minmax += int(r.skipped)
        stats.chunks_skipped_bloom += int(r.skipped_bloom)
        if not (r.skipped or r.skipped_bloom):
            stats.chunks_filtered += r.filtered
            stats.chunks_unfiltered += not r.filtered
        stats.rows_filter_checked += r.checked
        stats.rows_rejected_by_filter += r.rejected
        stats.rows_probed += r.probed
        stats.false_positives += r.fps
        stats.matched_rows += r.matched
        stats.result_rows += r.result_rows
        for k, v in r.decoded.items():
            stats.rows_decoded[k] = stats.rows_decoded.get(k, 0) + v
    stats.transitions = list(policy.transitions)

    if aggs is not None:
        acc: list[Any] = [0 if a.func == "count" else None for a in aggs]
        for r in results:
            if r.partial is not None:
                acc = [_combine(a, x, y) for a, x, y in zip(aggs, acc, r.partial)]
        result: Any = {a.out: v for a, v in zip(aggs, acc)}
    else:
        types = [(src.schema if o.side == "probe" else bt.schema).field(o.name).type for o in outs]
        cols = []
        for j, t in enumerate(types):
            parts = [r.arrays[j] for r in results if r.arrays is not None and len(r.arrays[j])]
            cols.append(pa.chunked_array([p.cast(t) if p.type != t else p for p in parts], type=t))
        result = pa.Table.from_arrays(cols, names=[o.out for o in outs])
    return (result, stats) if explain else result
