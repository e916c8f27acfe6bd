"""``group_by=``: aggregates per group of the join result, without building the joined rows.

Each probe chunk becomes one small partial table, grouped by pyarrow (``Table.group_by``): one
row per group present in the chunk, holding per aggregate its partial sum / count / min / max.
When every group column and aggregate column is a probe column, a chunk's input holds each
matched probe row once with its multiplicity (the number of build rows of its key), never the
fanned-out pairs; when a build column is involved it holds one row per (probe row, build row)
pair but only the columns the query reads, and build group columns enter as integer codes (one
code per distinct combination of their values, computed once over the build side). The partials
are grouped once more at the end; the result is a ``pyarrow.Table`` with one row per group
(group columns, then aggregates, in the order asked; rows in no particular order).

Semantics are SQL's / DuckDB's: null group values form one group, as do NaNs, and -0.0 groups
with 0.0; in left / right / full joins
the side without a match contributes nulls (a build group column is null on an unmatched probe
row, and those rows group with build rows whose value is null). Integer sums are int64 and exact
(InvalidArgument when a group's sum of |value| x multiplicity could leave int64), float sums
float64, ``avg`` float64; float ``min``/``max`` order NaN above +inf as DuckDB does.

Cost: per chunk one decode of the columns read at the result rows and one pyarrow hash
aggregation over them; memory: one partial per chunk (groups present in it) until the end.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgument
from . import _group_kernels as K
from . import outer
from .build import BuildSide
from .plan import Agg, OutColumn

_LIMIT = float(2**62)


def _plain(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return a.cast(a.type.value_type) if pa.types.is_dictionary(a.type) else a


def _group_key(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A group column's values as groups compare (DuckDB): -0.0 is 0.0 (x + 0.0 turns -0.0 into
    +0.0 and leaves every other float, NaN and null as it is), so the two zeros form one group."""
    a = _plain(a)
    return pc.add(a, pa.scalar(0.0, a.type)) if pa.types.is_floating(a.type) else a


def _build_codes(table: pa.Table, names: list[str]) -> tuple[np.ndarray, pa.Table]:
    """Per build row, plus one trailing all-null row (standing for "no build row"), a dense code
    of its values of ``names``; and the table of those values with one row per code."""
    n = table.num_rows
    cols = [pa.concat_arrays([_group_key(table[c]), pa.nulls(1, _plain(table[c]).type)]) for c in names]
    codes = np.zeros(n + 1, np.int64)
    for col in cols:
        enc = pc.dictionary_encode(col, null_encoding="encode")
        codes = codes * len(enc.dictionary) + enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        _, codes = np.unique(codes, return_inverse=True)
        codes = codes.astype(np.int64).reshape(-1)
    _, first = np.unique(codes, return_index=True)
    values = pa.table({c: col.take(pa.array(first)) for c, col in zip(names, cols)})
    return codes, values


class GroupSink:
    """Folds every chunk into a partial grouped table; :meth:`result` merges them."""

    def __init__(self, groups: list[OutColumn], aggs: list[Agg], bs: BuildSide, how: str, probe_schema: pa.Schema):
        self.groups, self.aggs, self.bs, self.how = groups, aggs, bs, how
        self.bgroups = [g.name for g in groups if g.side == "build"]
        self.pairs = bool(self.bgroups) or any(a.side == "build" and a.column for a in aggs)
        if self.bgroups:
            self.codes, self.code_values = _build_codes(bs.table, self.bgroups)
        self.keys = [f"g{j}" for j in range(len(groups))]
        types = {}
        for g, k in zip(groups, self.keys):
            t = (probe_schema if g.side == "probe" else bs.table.schema).field(g.name).type
            types[k] = pa.int64() if g.side == "build" else (t.value_type if pa.types.is_dictionary(t) else t)
            if g.fill is not None and pa.types.is_null(t):  # a null-typed joined key takes the build key's type
                types[k] = _plain(bs.table[g.fill]).type
        self.key_types = types
        self.atypes = [None if a.column is None else
                       (probe_schema if a.side == "probe" else bs.table.schema).field(a.column).type for a in aggs]

    # ---- one chunk -------------------------------------------------------------------------

    def chunk(self, ch: Any, r: Any, pos, grp, unmatched, whole: bool) -> None:
        if self.pairs:
            rows, brow = outer.pairs(self.bs, self.how, pos, grp, unmatched)
            w = None
        else:
            rows, w = outer.probe_weights(self.bs, self.how, pos, grp, unmatched)
            brow = None
        r.result_rows = rows.shape[0] if w is None else int(w.sum())
        if rows.shape[0] == 0:
            return
        at = outer.AtRows(ch, rows, whole)
        cols: dict[str, pa.Array] = {}
        for g, k in zip(self.groups, self.keys):
            if g.side == "probe":
                cols[k] = _group_key(at.arrow(g.name))
            else:
                cols[k] = pa.array(self.codes[np.where(brow < 0, self.codes.shape[0] - 1, brow)])
        values = []
        for a in self.aggs:
            if a.column is None:
                values.append(None)
            elif a.side == "probe":
                values.append(_plain(at.arrow(a.column)))
            else:
                values.append(_plain(outer.take(self.bs.table[a.column], brow)))
        r.groups = self._partial(cols, values, w)

    def build_only(self, rows: np.ndarray) -> pa.Table | None:
        """The partial of the build rows no probe row matched (right / full joins)."""
        if rows.shape[0] == 0:
            return None
        n = rows.shape[0]
        cols = {}
        for g, k in zip(self.groups, self.keys):
            if g.side == "build":
                cols[k] = pa.array(self.codes[rows])
            elif g.fill is not None:  # the joined key (USING): the build row's key
                fill = outer.cast_fill(_plain(outer.take(self.bs.table[g.fill], rows)), self.key_types[k], g.out)
                cols[k] = _group_key(fill)
            else:
                cols[k] = pa.nulls(n, self.key_types[k])
        values = []
        for a, t in zip(self.aggs, self.atypes):
            if a.column is None:
                values.append(None)
            elif a.side == "build":
                values.append(_plain(outer.take(self.bs.table[a.column], rows)))
            elif a.fill is not None:  # the joined key: its build value on these rows
                values.append(outer.filled(self.bs, a.fill, rows, t, a.out))
            else:
                values.append(pa.nulls(n, t.value_type if pa.types.is_dictionary(t) else t))
        return self._partial(cols, values, None)

    def _partial(self, cols: dict[str, pa.Array], values: list[pa.Array | None], w: np.ndarray | None) -> pa.Table:
        weight = pa.array(w if w is not None else np.ones(len(next(iter(cols.values()))), np.int64))
        inputs: dict[str, pa.Array] = dict(cols)
        specs: list[tuple[str, str]] = []
        for j, (a, v) in enumerate(zip(self.aggs, values)):
            if v is None:  # count(*)
                inputs[f"c{j}"] = weight
                specs.append((f"c{j}", "sum"))
                continue
            valid = v.is_valid()
            if a.func in ("count", "avg"):
                inputs[f"c{j}"] = pc.if_else(valid, weight, 0)
                specs.append((f"c{j}", "sum"))
            if a.func in ("sum", "avg"):
                inputs[f"s{j}"], bound = _weighted(v, weight, a)
                specs.append((f"s{j}", "sum"))
                if bound is not None:
                    inputs[f"b{j}"] = bound
                    specs.append((f"b{j}", "sum"))
            if a.func in ("min", "max"):
                if pa.types.is_boolean(v.type) or pa.types.is_duration(v.type):  # Arrow's hash min/max: no duration kernel
                    v = v.cast(pa.int64())
                if pa.types.is_floating(v.type):
                    nan = pc.fill_null(pc.is_nan(v), False)
                    inputs[f"n{j}"] = nan
                    specs.append((f"n{j}", "any"))
                    v = pc.if_else(nan, pa.scalar(None, v.type), v)
                inputs[f"m{j}"] = v
                specs.append((f"m{j}", a.func))
        agg = pa.table(inputs).group_by(self.keys, use_threads=False).aggregate(specs)
        return agg.rename_columns([_strip(c) for c in agg.column_names])

    # ---- the end ---------------------------------------------------------------------------

    def result(self, partials: list[Any]) -> pa.Table:
        parts = [p for p in partials if p is not None and p.num_rows]
        fields = [pa.field(g.out, self._out_type(g, k)) for g, k in zip(self.groups, self.keys)]
        fields += [pa.field(a.out, self._agg_type(a, t)) for a, t in zip(self.aggs, self.atypes)]
        schema = pa.schema(fields)
        if not parts:
            return schema.empty_table()
        t = pa.concat_tables(parts, promote_options="permissive")
        specs = []
        for c in t.column_names:
            if c in self.keys:
                continue
            func = {"c": "sum", "s": "sum", "b": "sum", "n": "any"}.get(c[0])
            if func is None:
                func = self.aggs[int(c[1:])].func
            specs.append((c, func))
        g = t.group_by(self.keys, use_threads=False).aggregate(specs)
        g = g.rename_columns([_strip(c) for c in g.column_names])
        out = []
        for gc, k in zip(self.groups, self.keys):
            col = g[k].combine_chunks()
            out.append(self.code_values[gc.name].take(col) if gc.side == "build" else col)
        for j, a in enumerate(self.aggs):
            out.append(self._final(j, a, g))
        return pa.Table.from_arrays([o.cast(f.type) if o.type != f.type else o for o, f in zip(out, schema)],
                                    schema=schema)

    def _final(self, j: int, a: Agg, g: pa.Table) -> pa.Array:
        if a.func == "count" or a.column is None:
            return pc.fill_null(g[f"c{j}"].combine_chunks(), 0)
        if a.func in ("sum", "avg"):
            if f"b{j}" in g.column_names:
                bound = g[f"b{j}"].combine_chunks().to_numpy(zero_copy_only=False)
                if bound.size and np.nanmax(np.where(np.isnan(bound), 0, bound)) >= _LIMIT:
                    raise InvalidArgument(f"{a.out}: a group's integer sum could leave 64 bits; cast the column to "
                                          "float64 or aggregate without group_by (exact beyond 64 bits)")
            s = g[f"s{j}"].combine_chunks()
            if a.func == "sum":
                return s
            c = g[f"c{j}"].combine_chunks()  # an int64 sum past 2**53 rounds to float64 (DuckDB: double)
            return pc.if_else(pc.greater(c, 0), pc.divide(s.cast(pa.float64(), safe=False), c.cast(pa.float64())),
                              pa.scalar(None, pa.float64()))
        m = g[f"m{j}"].combine_chunks()
        if f"n{j}" not in g.column_names:
            return m
        nan = pc.fill_null(g[f"n{j}"].combine_chunks(), False)
        nan_v = pa.scalar(float("nan"), m.type)
        if a.func == "max":
            return pc.if_else(nan, nan_v, m)
        return pc.if_else(pc.and_(nan, m.is_null()), nan_v, m)

    def _out_type(self, g: OutColumn, k: str) -> pa.DataType:
        return self.code_values[g.name].type if g.side == "build" else self.key_types[k]

    @staticmethod
    def _agg_type(a: Agg, t: pa.DataType | None) -> pa.DataType:
        if a.func == "count" or a.column is None:
            return pa.int64()
        if a.func == "avg":
            return pa.float64()
        if pa.types.is_dictionary(t):
            t = t.value_type
        if a.func == "sum":
            return pa.float64() if pa.types.is_floating(t) else pa.int64()
        return pa.int64() if pa.types.is_boolean(t) else t


def _strip(name: str) -> str:
    """pyarrow names an aggregate ``<column>_<func>``; keep the column's name."""
    for suffix in ("_sum", "_min", "_max", "_any"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _weighted(v: pa.Array, w: pa.Array, a: Agg) -> tuple[pa.Array, pa.Array | None]:
    """``(v * w, |v| * w as float64 or None)``: the sum input and, for integers, its error bound."""
    if pa.types.is_floating(v.type):
        return pc.multiply(v.cast(pa.float64()), w.cast(pa.float64())), None
    try:
        iv = v.cast(pa.int64())
    except pa.ArrowInvalid:
        raise InvalidArgument(f"{a.out}: values beyond int64 cannot be summed per group; cast to float64") from None
    bound = pc.multiply(pc.abs(iv.cast(pa.float64(), safe=False)), w.cast(pa.float64()))
    return pc.multiply(iv, w), bound  # wraps only where the bound (checked at the end) is too large


# ---- the dense path: every group column on the build side ---------------------------------------

#: the dense path keeps per-group arrays; beyond this many groups the hash path is used
DENSE_GROUPS = 1 << 16


def _dense_values(arr: np.ndarray, valid: np.ndarray | None) -> np.ndarray | None:
    """``arr`` as int64 or float64 for the fold kernels (None when a uint64 value passes int64)."""
    if arr.dtype.kind == "f":
        return arr.astype(np.float64, copy=False)
    if arr.dtype == np.uint64 and arr.size and int(arr[valid].max() if valid is not None and valid.any()
                                                   else arr.max()) >= 2**63:
        return None
    return arr.astype(np.int64, copy=False)


class _Acc:
    """Per-group accumulators of one aggregate input column (see :mod:`._group_kernels`)."""

    def __init__(self, groups: int, is_float: bool):
        self.is_float = is_float
        t = np.float64 if is_float else np.int64
        self.s = np.zeros(groups, t)
        self.bound = np.zeros(groups, np.float64)
        self.cnt = np.zeros(groups, np.int64)
        self.fin = np.zeros(groups, np.int64)
        self.nan = np.zeros(groups, np.bool_)
        self.mn = np.full(groups, np.inf if is_float else np.iinfo(np.int64).max, t)
        self.mx = np.full(groups, -np.inf if is_float else np.iinfo(np.int64).min, t)

    def fold(self, codes, values, index, valid, weights=None) -> None:
        """Fold ``values`` (at ``index``) into the groups ``codes``; ``weights``: each result row's
        multiplicity (None = 1)."""
        idx = index if index is not None else _NO_INDEX
        vv = valid if valid is not None else _NO_VALID
        if weights is not None:
            K.fold_weighted(codes, weights, values, idx, index is not None, vv, valid is not None, self.s, self.bound,
                            self.cnt, self.fin, self.mn, self.mx, self.nan)
            return
        K.fold(codes, values, idx, index is not None, vv, valid is not None, self.s, self.bound, self.cnt, self.fin,
               self.mn, self.mx, self.nan)

    def merge(self, o: "_Acc") -> None:
        self.s += o.s
        self.cnt += o.cnt
        self.fin += o.fin
        self.nan |= o.nan
        self.bound += o.bound
        np.minimum(self.mn, o.mn, out=self.mn)
        np.maximum(self.mx, o.mx, out=self.mx)

    def final(self, a: Agg, present: np.ndarray, t: pa.DataType) -> pa.Array:
        cnt = self.cnt[present]
        none = cnt == 0
        if a.func == "count":
            return pa.array(cnt)
        if a.func in ("sum", "avg"):
            if not self.is_float and present.size and float(self.bound[present].max()) >= _LIMIT:
                raise InvalidArgument(f"{a.out}: a group's integer sum could leave 64 bits; cast the column to "
                                      "float64 or aggregate without group_by (exact beyond 64 bits)")
            s = self.s[present]
            if a.func == "avg":
                return pa.array(s / np.maximum(cnt, 1), pa.float64(), mask=none)
            return pa.array(s, mask=none)
        v = (self.mn if a.func == "min" else self.mx)[present]
        if not self.is_float:
            return pa.array(v, mask=none).cast(t)
        fin, nan = self.fin[present], self.nan[present]
        out = np.where(fin > 0, v, np.nan)
        if a.func == "max":
            out = np.where(nan, np.nan, out)
        return pa.array(out, pa.float64(), mask=none).cast(t)


_NO_INDEX = np.zeros(0, np.int64)
_NO_VALID = np.zeros(0, np.bool_)


class DenseGroupSink(GroupSink):
    """Group-by on build columns only (the star-schema query): each result row's group is the
    code of its build row, so a chunk folds its values into per-group arrays with one kernel pass
    per aggregate column — no hash aggregation, no Arrow tables. Chunks merge into the totals
    under a lock as they finish (memory: O(groups) per chunk in flight).

    When every build row of a key has the same group code (always so for a dimension table with
    one row per key) and every aggregate reads probe columns, no (probe row, build row) pairs are
    built: each matched probe row carries its key's code and build-row count as a weight
    (:func:`._group_kernels.result_codes`), and the folds add ``value x weight``."""

    def __init__(self, base: GroupSink):
        import threading

        self.__dict__.update(base.__dict__)
        bs, aggs = self.bs, self.aggs

        self.G = int(self.codes.max()) + 1
        self.cols = list(dict.fromkeys((a.side, a.column, a.fill) for a in aggs if a.column is not None))
        self.build_vals = {}
        for side, c, _ in self.cols:
            if side == "build":
                v, valid = _numeric_build(bs.table[c])
                self.build_vals[c] = (v, valid)
        self._lock = threading.Lock()
        self.rows = np.zeros(self.G, np.int64)
        self.accs = {sc: _Acc(self.G, self._is_float(sc)) for sc in self.cols}
        self.gcode = None if self.build_vals else _key_codes(self.codes, bs)

    def _is_float(self, sc) -> bool:
        t = self.atypes[[(a.side, a.column, a.fill) for a in self.aggs].index(sc)]
        return pa.types.is_floating(t)

    def chunk(self, ch, r, pos, grp, unmatched, whole: bool) -> None:
        if self.gcode is not None:
            self._chunk_weighted(ch, r, pos, grp, unmatched, whole)
            return
        rows, brow = outer.pairs(self.bs, self.how, pos, grp, unmatched)
        r.result_rows = rows.shape[0]
        if rows.shape[0] == 0:
            return
        codes = self.codes[np.where(brow < 0, self.codes.shape[0] - 1, brow)]
        local = {sc: _Acc(self.G, self._is_float(sc)) for sc in self.cols}
        at = outer.AtRows(ch, rows, whole)
        for (side, c, _), acc in local.items():
            if side == "build":
                v, valid = self.build_vals[c]
                acc.fold(codes, v, brow, valid)
            else:
                self._fold_probe(acc, at, c, codes, None)
        self._merge(np.bincount(codes, minlength=self.G), local)

    def _chunk_weighted(self, ch, r, pos, grp, unmatched, whole: bool) -> None:
        """The chunk as matched probe rows weighted by their key's build rows (no pairs built)."""
        rows, groups = outer.result_groups(pos, grp, unmatched)
        if rows.shape[0] == 0:
            return
        codes = np.empty(rows.shape[0], np.int64)
        weights = np.empty(rows.shape[0], np.int64)
        n = np.zeros(self.G, np.int64)
        r.result_rows = int(K.result_codes(groups, self.gcode, int(self.codes[-1]), codes, weights, n))
        local = {sc: _Acc(self.G, self._is_float(sc)) for sc in self.cols}
        at = outer.AtRows(ch, rows, whole)
        for (_, c, _), acc in local.items():
            self._fold_probe(acc, at, c, codes, weights)
        self._merge(n, local)

    @staticmethod
    def _fold_probe(acc: "_Acc", at, c: str, codes, weights) -> None:
        v, valid, index = at.numeric(c)
        v = _dense_values(v, valid)
        if v is None:
            raise InvalidArgument(f"{c}: values beyond int64 cannot be summed per group; cast to float64")
        acc.fold(codes, v, index, valid, weights)

    def _merge(self, n: np.ndarray, local: dict) -> None:
        with self._lock:
            self.rows += n
            for sc, acc in local.items():
                self.accs[sc].merge(acc)

    def build_only(self, rows: np.ndarray) -> None:
        if rows.shape[0] == 0:
            return None
        codes = self.codes[rows]
        self.rows += np.bincount(codes, minlength=self.G)
        for (side, c, fill), acc in self.accs.items():
            if side == "build":
                v, valid = self.build_vals[c]
                acc.fold(codes, v, rows, valid)
            elif fill is not None:  # the joined key: its build value on these rows
                t = self.atypes[[(a.side, a.column, a.fill) for a in self.aggs].index((side, c, fill))]
                v, valid = _numeric_build(outer.filled(self.bs, fill, rows, t, c))
                acc.fold(codes, v.astype(np.float64) if acc.is_float else v, None, valid)
        return None

    def result(self, partials: list[Any]) -> pa.Table:
        present = np.flatnonzero(self.rows)
        fields = [pa.field(g.out, self.code_values[g.name].type) for g in self.groups]
        fields += [pa.field(a.out, self._agg_type(a, t)) for a, t in zip(self.aggs, self.atypes)]
        schema = pa.schema(fields)
        cols = [self.code_values[g.name].take(pa.array(present)) for g in self.groups]
        for a, f in zip(self.aggs, fields[len(self.groups):]):
            if a.column is None:
                cols.append(pa.array(self.rows[present]))
            else:
                cols.append(self.accs[(a.side, a.column, a.fill)].final(a, present, f.type))
        return pa.Table.from_arrays([c.cast(f.type) if c.type != f.type else c for c, f in zip(cols, schema)],
                                    schema=schema)


def _key_codes(codes: np.ndarray, bs: BuildSide) -> np.ndarray | None:
    """Per key group ``count << 32 | code``: its build-row count and the group-by code all its
    build rows share; None when some key's build rows fall in different groups (or a count or
    code needs more than 31 bits)."""
    if bs.groups == 0 or codes.shape[0] >= 2**31 or int(bs.group_count.max()) >= 2**31:
        return None
    row_codes = codes[bs.group_rows]
    first = row_codes[bs.group_start[:-1]]
    if not np.array_equal(row_codes, np.repeat(first, bs.group_count)):
        return None
    return np.ascontiguousarray((bs.group_count << 32) | first)


def _numeric_build(col) -> tuple[np.ndarray, np.ndarray | None]:
    from .sources import numeric_from_arrow

    v, valid = numeric_from_arrow(col)
    out = _dense_values(v, valid)
    if out is None:
        raise InvalidArgument("a build column holds values beyond int64; cast it to float64 to aggregate per group")
    return out, valid


def make_group_sink(groups: list[OutColumn], aggs: list[Agg], bs: BuildSide, how: str,
                    probe_schema: pa.Schema) -> GroupSink:
    """The dense sink when every group column is a build column, there are at most
    :data:`DENSE_GROUPS` groups and every aggregate column is numeric; else the hash sink."""
    sink = GroupSink(groups, aggs, bs, how, probe_schema)
    numeric = all(t is None or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                  for t in sink.atypes)
    if sink.bgroups and len(sink.bgroups) == len(groups) and numeric and int(sink.codes.max()) < DENSE_GROUPS:
        return DenseGroupSink(sink)
    return sink
