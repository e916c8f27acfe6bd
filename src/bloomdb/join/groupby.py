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

Semantics are SQL's / DuckDB's: null group values form one group; in left / right / full joins
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
from . import outer
from .build import BuildSide
from .plan import Agg, OutColumn

_LIMIT = float(2**62)


def _plain(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return a.cast(a.type.value_type) if pa.types.is_dictionary(a.type) else a


def _build_codes(table: pa.Table, names: list[str]) -> tuple[np.ndarray, pa.Table]:
    """Per build row, plus one trailing all-null row (standing for "no build row"), a dense code
    of its values of ``names``; and the table of those values with one row per code."""
    n = table.num_rows
    cols = [pa.concat_arrays([_plain(table[c]), pa.nulls(1, _plain(table[c]).type)]) for c in names]
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
        cols: dict[str, pa.Array] = {}
        for g, k in zip(self.groups, self.keys):
            if g.side == "probe":
                cols[k] = _plain(ch.arrow(g.name, rows, whole))
            else:
                cols[k] = pa.array(self.codes[np.where(brow < 0, self.codes.shape[0] - 1, brow)])
        values = []
        for a in self.aggs:
            if a.column is None:
                values.append(None)
            elif a.side == "probe":
                values.append(_plain(ch.arrow(a.column, rows, whole)))
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
            cols[k] = pa.array(self.codes[rows]) if g.side == "build" else pa.nulls(n, self.key_types[k])
        values = []
        for a, t in zip(self.aggs, self.atypes):
            if a.column is None:
                values.append(None)
            elif a.side == "build":
                values.append(_plain(outer.take(self.bs.table[a.column], rows)))
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
                if pa.types.is_boolean(v.type):
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
            c = g[f"c{j}"].combine_chunks()
            return pc.if_else(pc.greater(c, 0), pc.divide(s.cast(pa.float64()), c.cast(pa.float64())),
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
