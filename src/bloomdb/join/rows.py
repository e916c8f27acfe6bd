"""The row-producing sink of the join: one Arrow record batch of result rows per probe chunk.

Probe columns are decoded at the result's distinct probe rows only (or whole when the chunk was
not filtered), then repeated where a key has several build rows; build columns are copied from
the build table held in key-group order, null where no build row matches (:mod:`.fanout`). Right
and full joins end with the build rows no probe row matched (:meth:`RowSink.build_only`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from . import fanout, outer
from .build import BuildSide
from .plan import OutColumn
from .sources import ProbeChunk
from .stats import ChunkResult


class RowSink:
    def __init__(self, outs: list[OutColumn], bs: BuildSide, how: str, probe_schema: pa.Schema):
        self.outs, self.bs, self.how = outs, bs, how
        types = [(probe_schema if o.side == "probe" else bs.table.schema).field(o.name).type for o in outs]
        # a null-typed probe key filled from its build key takes the build key's type (DuckDB's USING)
        types = [bs.table.schema.field(o.fill).type if o.fill and pa.types.is_null(t) else t for o, t in zip(outs, types)]
        self.schema = pa.schema([pa.field(o.out, t) for o, t in zip(outs, types)])
        self.fans_out = bool(bs.groups) and int(bs.group_count.max()) > 1
        self.grouped = {o.name: fanout.GroupedColumn(bs.table[o.name], bs.group_rows)
                        for o in outs if o.side == "build"}

    def chunk(self, ch: ProbeChunk, r: ChunkResult, pos, grp, unmatched, whole: bool) -> None:
        if self.how in ("semi", "anti"):
            rows = pos if self.how == "semi" else unmatched
            r.result_rows = rows.shape[0]
            if rows.shape[0]:
                at = outer.AtRows(ch, rows, whole)
                r.arrays = [at.arrow(o.name) for o in self.outs]
            return
        rows, groups = outer.result_groups(pos, grp, unmatched)
        counts, total = None, rows.shape[0]
        if self.fans_out and total:
            counts = np.where(groups >= 0, self.bs.group_count[groups], 1)
            total = int(counts.sum())
        r.result_rows = total
        if total == 0:
            return
        at = outer.AtRows(ch, rows, whole)
        bs = self.bs
        r.arrays = [fanout.repeat(at.arrow(o.name), counts) if o.side == "probe"
                    else self.grouped[o.name].at(groups, bs.group_start, bs.group_rows, total) for o in self.outs]

    def build_only(self, rows: np.ndarray) -> pa.RecordBatch | None:
        """The rows of a right / full join that only the build side has: probe columns null (a key
        column filled from its build key), build columns at ``rows``."""
        if rows.shape[0] == 0:
            return None
        arrays = []
        for o, f in zip(self.outs, self.schema):
            if o.side == "build":
                arrays.append(outer.take(self.bs.table[o.name], rows))
            elif o.fill is not None:
                arrays.append(outer.cast_fill(outer.take(self.bs.table[o.fill], rows), f.type, o.out))
            else:
                arrays.append(pa.nulls(rows.shape[0], f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def batch(self, r: ChunkResult) -> pa.RecordBatch | None:
        """One chunk's rows as a record batch of :attr:`schema` (None when it has none)."""
        if r.arrays is None:
            return None
        arrays = [outer.cast_fill(a, f.type, f.name) if a.type != f.type else a for a, f in zip(r.arrays, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

