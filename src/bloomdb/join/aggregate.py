"""Aggregates over a join result without materialising it: partial values per chunk, then combined.

A chunk of the result is described by the probe rows it holds and how often each one repeats
(``weights``: the number of build rows of its key, or 1) — a probe column's ``sum`` is then one
weighted kernel pass over the probe values at those rows. A build column is folded per key group
once (:class:`GroupStats`: per-key sum, count, min and max of the build rows holding that key);
a chunk's matched probe rows then add their group's entries. Integer sums are exact (Python
integers, beyond 64 bits too); float sums are float64. ``avg`` is carried as (sum, count).

Float ``min``/``max`` order NaN above +inf, as DuckDB does (``max`` is NaN when any value is,
``min`` when all are). ``min``/``max`` of other ordered columns (dates, times, timestamps,
durations, decimals, strings and binary by their bytes) are taken by Arrow (:func:`ordered_extreme`)
and returned as the Python value of the column's type (``datetime.date``, ``Decimal``, ``str``...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgument
from . import _join_kernels as K
from . import _sum_kernels as S
from . import outer
from .compare import _ro
from .plan import Agg
from .sources import numeric_from_arrow as numeric

def validity(arr: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``(zeros, valid)`` of a column of any type, for ``count(column)`` (valid None = no nulls)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    return np.zeros(len(arr), np.int64), valid


_NO_POS = np.zeros(0, np.int64)
_NO_VALID = np.zeros(0, np.bool_)
_NO_W = np.zeros(1, np.int64)


def exact_sum(v: np.ndarray, valid, index, w) -> Any:
    """Exact integer / float64 sum of v·w over the rows (one fused kernel pass, no copies).

    ``index``: the rows of ``v`` to add (None = all); ``w``: their multiplicities (aligned with
    ``index``; None = 1); ``valid``: non-null mask indexed like ``v``. None when no row counts.
    """
    pos = index if index is not None else _NO_POS
    vv = valid if valid is not None else _NO_VALID
    if w is None and (pos.shape[0] if index is not None else v.shape[0]) < 2**31:
        return _plain_sum(v, pos, index is not None, vv, valid is not None)
    ww = w if w is not None else _NO_W
    if v.dtype.kind == "f":
        s, cnt = K.weighted_sum(_ro(v.astype(np.float64, copy=False)), pos, index is not None, ww, w is not None, vv,
                                valid is not None)
        return float(s) if cnt else None
    bits, signed = _words(v)
    wrapped, approx, bound, cnt = K.weighted_isum(bits, signed, pos, index is not None, ww, w is not None, vv,
                                                  valid is not None)
    if cnt == 0:
        return None
    if bound * (pos.shape[0] if index is not None else v.shape[0]) * 2.0**-52 < 2.0**61:
        r = int(wrapped)  # the exact sum is r + k * 2^64 for the k that lands nearest the float estimate
        return r + round((approx - r) / 2.0**64) * (1 << 64)
    return _slow_sum(v, valid, index, w)


def _words(v: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(uint64 bits, signed)`` of integer or bool values, widened to 64 bits."""
    signed = v.dtype.kind in "ib"
    if v.dtype == np.bool_:
        v = v.view(np.uint8)
    if v.dtype.itemsize != 8:
        v = v.astype(np.int64 if v.dtype.kind == "i" else np.uint64)
    return _ro(v.view(np.uint64)), signed


def _plain_sum(v: np.ndarray, pos: np.ndarray, use_pos: bool, valid: np.ndarray, use_valid: bool) -> Any:
    """:func:`exact_sum` without multiplicities (fewer than 2^31 rows): vectorised kernels."""
    if v.dtype.kind == "f":
        f = _ro(v.astype(np.float64, copy=False))
        s, cnt = S.float_sum(f, pos, use_pos, valid, use_valid)
        if not np.isfinite(s):  # infinities or an overflow: the serial order's answer, as before the lanes
            s, cnt = K.weighted_sum(f, pos, use_pos, _NO_W, False, valid, use_valid)
        return float(s) if cnt else None
    bits, signed = _words(v)
    lo, hi, cnt = S.int_sum(bits, signed, pos, use_pos, valid, use_valid)
    if cnt == 0:
        return None
    high = int(np.uint64(hi).view(np.int64)) if signed else int(hi)
    return (high << 32) + int(lo)


def _slow_sum(v: np.ndarray, valid, index, w) -> Any:
    """Exact Σ v·w with Python integers (only when the float error bound is too loose)."""
    rows = index if index is not None else np.arange(v.shape[0])
    keep = np.ones(rows.shape[0], np.bool_) if valid is None else valid[rows]
    vals = v[rows][keep].tolist()
    ws = [1] * len(vals) if w is None else w[keep].tolist()
    return sum(int(a) * b for a, b in zip(vals, ws)) if vals else None


def _count(valid, index, w, n: int) -> int:
    if valid is not None:
        keep = valid if index is None else valid[index]
        return int(keep.sum()) if w is None else int(w[keep].sum())
    return n if w is None else int(w.sum())


def _extreme(func: str, v: np.ndarray) -> Any:
    if v.size == 0:
        return None
    if v.dtype == np.bool_:
        v = v.astype(np.int64)
    if v.dtype.kind == "f":  # as DuckDB: NaN orders above +inf (max is NaN if any; min is NaN if all)
        nan = np.isnan(v)
        if func == "max" and nan.any() or nan.all():
            return float("nan")
        v = v[~nan]
        return float(v.min() if func == "min" else v.max())
    return int(v.min() if func == "min" else v.max())


def is_numeric(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` is folded as numbers (else ``min`` / ``max`` by Arrow)."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def comparable(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``arr`` in a type Arrow's min / max kernels take: a dictionary as its values, a duration as
    int64 (cast back by the caller); anything else as it is."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr.cast(pa.int64()) if pa.types.is_duration(arr.type) else arr


def ordered_extreme(func: str, arr: pa.Array | pa.ChunkedArray) -> Any:
    """``min`` / ``max`` of a non-numeric column in its own order (DuckDB's: by value; strings and
    binary by their bytes) as the Python value of its type; None when it holds no value."""
    t = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    arr = comparable(arr)
    if len(arr) == arr.null_count:
        return None
    x = pc.min_max(arr)[func]
    return pa.scalar(x.as_py(), t).as_py() if pa.types.is_duration(t) else x.as_py()


def fold(func: str, v: np.ndarray, valid, index, w) -> Any:
    """One chunk's partial of ``func`` over the values ``v`` at ``index`` (all when None) with
    multiplicities ``w``: sum / min / max value (None when no non-null value), count, or for
    ``avg`` the pair (sum, count)."""
    n = v.shape[0] if index is None else index.shape[0]
    if func == "sum":
        return exact_sum(v, valid, index, w)
    if func == "count":
        return _count(valid, index, w, n)
    if func == "avg":
        return exact_sum(v, valid, index, w), _count(valid, index, w, n)
    if index is not None:
        v = v[index]
        valid = None if valid is None else valid[index]
    return _extreme(func, v if valid is None else v[valid])


def empty(agg: Agg) -> Any:
    """The partial of no rows."""
    return 0 if agg.func == "count" else ((None, 0) if agg.func == "avg" else None)


def _nan_last(x: Any) -> tuple[bool, Any]:
    """Sort key ordering NaN above every number (DuckDB's order for floats)."""
    return (x != x, 0 if x != x else x)


def combine(agg: Agg, a: Any, b: Any) -> Any:
    """Two partials of ``agg`` as one."""
    if agg.func == "avg":
        return combine(_SUM, a[0], b[0]), a[1] + b[1]
    if a is None:
        return b
    if b is None:
        return a
    if agg.func in ("sum", "count"):
        return a + b
    return min(a, b, key=_nan_last) if agg.func == "min" else max(a, b, key=_nan_last)


_SUM = Agg("sum", None, "")


def final(agg: Agg, x: Any) -> Any:
    """The value the caller sees (``avg`` = sum / count as a float, None over no values)."""
    if agg.func == "avg":
        s, n = x
        return None if not n else s / n
    return x


class GroupStats:
    """Per key group (distinct build key) sum, count, min and max of one build column, over the
    build rows holding that key (nulls left out). A matched probe row of group ``g`` adds
    ``sum[g]`` / ``count[g]`` to the result's sum / count and offers ``min[g]`` / ``max[g]``.

    Cost: one pass over the build column. Raises InvalidArgument when an integer group sum could
    leave int64 (the per-key sums are kept in 64 bits)."""

    def __init__(self, values: np.ndarray, valid: np.ndarray | None, group_rows: np.ndarray,
                 group_start: np.ndarray, name: str):
        groups = group_start.shape[0] - 1
        v = values[group_rows]
        ok = np.ones(v.shape[0], np.bool_) if valid is None else valid[group_rows]
        gid = np.repeat(np.arange(groups, dtype=np.int64), np.diff(group_start))[ok]
        v = v[ok]
        if v.dtype == np.bool_:
            v = v.astype(np.int64)
        self.count = np.bincount(gid, minlength=groups).astype(np.int64)
        self.valid = self.count > 0
        if v.dtype.kind in "iu" and v.size:
            if float(np.abs(v.astype(np.float64)).max()) * float(self.count.max()) >= 2.0**62:
                raise InvalidArgument(f"the build rows of one key sum {name!r} beyond 64 bits; aggregate it as a "
                                      "probe column or cast it to float64")
            v = v.astype(np.int64 if v.dtype.kind == "i" else np.uint64)
        self.sum = np.zeros(groups, v.dtype if v.dtype.kind != "f" else np.float64)
        np.add.at(self.sum, gid, v)
        starts = np.zeros(groups + 1, np.int64)
        np.cumsum(self.count, out=starts[1:])
        nz = np.flatnonzero(self.valid)
        self.min = np.zeros(groups, v.dtype)
        self.max = np.zeros(groups, v.dtype)
        if nz.size:
            at = starts[nz]
            if v.dtype.kind == "f":  # fmin skips NaN unless all are; maximum propagates it (DuckDB's order)
                self.min[nz] = np.fmin.reduceat(v, at)
                self.max[nz] = np.maximum.reduceat(v, at)
            else:
                self.min[nz] = np.minimum.reduceat(v, at)
                self.max[nz] = np.maximum.reduceat(v, at)

    def fold(self, func: str, grp: np.ndarray) -> Any:
        """The partial of ``func`` over the matched probe rows of key groups ``grp``."""
        if func == "count":
            return exact_sum(self.count, None, grp, None) or 0
        if func == "sum":
            return exact_sum(self.sum, self.valid, grp, None)
        if func == "avg":
            return exact_sum(self.sum, self.valid, grp, None), exact_sum(self.count, None, grp, None) or 0
        return fold(func, self.min if func == "min" else self.max, self.valid, grp, None)


class OrderedGroupStats(GroupStats):
    """:class:`GroupStats` of a non-numeric build column: counts as there, and per key group the
    ``min`` / ``max`` value as Arrow arrays (null for a group of no value), taken by Arrow's
    hash aggregation. Cost: one pass over the build column."""

    def __init__(self, col: pa.Array | pa.ChunkedArray, group_rows: np.ndarray, group_start: np.ndarray, name: str):
        super().__init__(*validity(col), group_rows, group_start, name)
        groups = group_start.shape[0] - 1
        gid = np.repeat(np.arange(groups, dtype=np.int64), np.diff(group_start))
        t = pa.table({"g": gid, "v": comparable(outer.take(col, group_rows))})
        agg = t.group_by("g", use_threads=False).aggregate([("v", "min"), ("v", "max")])
        at = np.full(groups, -1, np.int64)
        at[agg["g"].to_numpy()] = np.arange(agg.num_rows)
        idx = pa.array(at, mask=at < 0)
        vt = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
        self.amin, self.amax = (agg[f"v_{f}"].take(idx).combine_chunks().cast(vt) for f in ("min", "max"))

    def fold(self, func: str, grp: np.ndarray) -> Any:
        if func in ("min", "max"):
            return ordered_extreme(func, (self.amin if func == "min" else self.amax).take(pa.array(grp)))
        return super().fold(func, grp)


class AggSink:
    """Folds every chunk into partial aggregates (no result rows are built). Probe columns are
    decoded at the result's probe rows (each once, weighted by its build matches); build columns
    come from :class:`GroupStats` of the matched key groups."""

    def __init__(self, aggs: list[Agg], bs: Any, how: str, probe_schema: pa.Schema):
        self.aggs, self.bs, self.how, self.probe_schema = aggs, bs, how, probe_schema
        self.probe_cols = sorted({a.column for a in aggs if a.column is not None and a.side == "probe"})
        build_cols = sorted({a.column for a in aggs if a.column is not None and a.side == "build"})
        # columns only counted: only their validity is read, so any type counts (strings, dates...)
        self.counted = {(a.side, a.column) for a in aggs if a.column is not None} - {
            (a.side, a.column) for a in aggs if a.column is not None and a.func != "count"}
        # non-numeric columns (min / max by Arrow, count by validity)
        schemas = {"probe": probe_schema, "build": bs.table.schema}
        self.ordered = {(a.side, a.column) for a in aggs if a.column is not None
                        and not is_numeric(schemas[a.side].field(a.column).type)}
        self.gstats = {c: OrderedGroupStats(bs.table[c], bs.group_rows, bs.group_start, c)
                       if ("build", c) in self.ordered else
                       GroupStats(*self._build_values(c), bs.group_rows, bs.group_start, c) for c in build_cols}

    def _build_values(self, c: str) -> tuple[np.ndarray, np.ndarray | None]:
        col = self.bs.table[c]
        return validity(col) if ("build", c) in self.counted | self.ordered else numeric(col)

    def _probe_values(self, ch: Any, c: str, rows: np.ndarray, whole: bool) -> tuple:
        """``(values, valid, index, arrow)``: ``arrow`` the values at ``rows`` of a non-numeric
        column (``values`` / ``valid`` then only for ``count``), else None."""
        if ("probe", c) in self.ordered:
            arr = ch.arrow(c, rows, whole)
            return (*validity(arr), None, arr)
        if ("probe", c) in self.counted:
            return (*validity(ch.arrow(c, rows, whole)), None, None)
        return (*ch.numeric(c, rows, whole), None)

    def chunk(self, ch: Any, r: Any, pos, grp, unmatched, whole: bool) -> None:
        rows, w = outer.probe_weights(self.bs, self.how, pos, grp, unmatched)
        r.result_rows = rows.shape[0] if w is None else int(w.sum())
        if rows.shape[0] == 0:
            r.partial = [empty(a) for a in self.aggs]
            return
        values = {c: self._probe_values(ch, c, rows, whole) for c in self.probe_cols}
        out = []
        for a in self.aggs:
            if a.column is None:
                out.append(r.result_rows)
            elif a.side == "build":
                out.append(self.gstats[a.column].fold(a.func, grp) if grp.shape[0] else empty(a))
            else:
                v, valid, index, arr = values[a.column]
                ordered = arr is not None and a.func != "count"
                out.append(ordered_extreme(a.func, arr) if ordered else fold(a.func, v, valid, index, w))
        r.partial = out

    def build_only(self, rows: np.ndarray) -> list[Any]:
        """Partials of the build rows that matched nothing (right / full joins)."""
        out = []
        for a in self.aggs:
            if a.column is None:
                out.append(rows.shape[0])
            elif a.fill is not None and rows.shape[0]:  # the joined key: its build value on these rows
                v = outer.filled(self.bs, a.fill, rows, self.probe_schema.field(a.column).type, a.out)
                ordered = a.func != "count" and ("probe", a.column) in self.ordered
                out.append(ordered_extreme(a.func, v) if ordered else
                           fold(a.func, *(validity(v) if a.func == "count" else numeric(v)), None, None))
            elif a.side == "build" and rows.shape[0] and a.func != "count" and ("build", a.column) in self.ordered:
                out.append(ordered_extreme(a.func, outer.take(self.bs.table[a.column], rows)))
            elif a.side == "build" and rows.shape[0]:
                out.append(fold(a.func, *self._build_values(a.column), rows, None))
            else:
                out.append(empty(a))
        return out

    def result(self, partials: Any) -> dict[str, Any]:
        acc = [empty(a) for a in self.aggs]
        for p in partials:
            if p is not None:
                acc = [combine(a, x, y) for a, x, y in zip(self.aggs, acc, p)]
        return {a.out: final(a, v) for a, v in zip(self.aggs, acc)}
