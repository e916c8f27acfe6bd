"""Result rows of a join without (probe row, build row) index pairs: each result probe row once
with its key group, repeated by the group's build-row count.

A probe column is decoded at the distinct result probe rows, then repeated (``np.repeat`` of the
values for fixed-width types; a take otherwise); a build column is copied from a copy of it held
in key-group order, where a key's build rows are one contiguous run (:func:`_fill`), so
a 10x fan-out copies runs of 10 values instead of gathering 10 random rows through a 16-byte-per-
row index. Types that are not fixed-width (strings, bools, nested) take the build rows by index.

Cost per chunk: one pass over the result rows per column; no index arrays of the result's length
except for columns that are not fixed-width.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import recycled
from . import _join_kernels as K

_NO_VALID = np.zeros(1, np.bool_)


def fixed_numpy(arr: pa.Array) -> tuple[np.ndarray, np.ndarray | None] | None:
    """``(values, valid)`` viewing a fixed-width primitive array (integers, floats, dates,
    timestamps, times, durations; not bool) without a copy, as signed integers of its width (the
    bits are copied, never interpreted); None for any other type."""
    t = arr.type
    if not pa.types.is_primitive(t) or pa.types.is_boolean(t) or t.bit_width % 8:
        return None
    width = t.bit_width // 8
    dt = np.dtype(f"<i{width}")
    buf = arr.buffers()[1]
    n = len(arr)
    values = np.frombuffer(buf, dt, count=n, offset=arr.offset * width) if n else np.zeros(0, dt)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    return values, valid


def from_numpy(t: pa.DataType, values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """An Arrow array of type ``t`` over ``values`` (no copy), null where ``valid`` is False."""
    bitmap = None
    nulls = 0
    if valid is not None:
        nulls = int(valid.shape[0] - np.count_nonzero(valid))
        if nulls:
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(t, values.shape[0], [bitmap, pa.py_buffer(values)], null_count=nulls)


def repeat(arr: pa.Array, counts: np.ndarray | None) -> pa.Array:
    """Each value of ``arr`` ``counts[j]`` times (``arr`` itself when counts is None)."""
    if counts is None:
        return arr
    fixed = fixed_numpy(arr)
    if fixed is None:
        return arr.take(pa.array(np.repeat(np.arange(len(arr), dtype=np.int64), counts)))
    values, valid = fixed
    total = int(counts.sum())
    return from_numpy(arr.type, _repeat(values, counts, total), None if valid is None else _repeat(valid, counts, total))


def _repeat(values: np.ndarray, counts: np.ndarray, total: int) -> np.ndarray:
    out = recycled.empty(total, values.dtype)
    K.repeat_values(values, counts, out)
    return out


class GroupedColumn:
    """A build column in key-group order (:attr:`BuildSide.group_rows`), to copy runs from."""

    def __init__(self, col: pa.ChunkedArray | pa.Array, group_rows: np.ndarray):
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        self.col, self.type = col, col.type
        fixed = fixed_numpy(col)
        self.values = self.valid = None
        if fixed is not None:
            values, valid = fixed
            self.values = np.ascontiguousarray(values[group_rows])
            self.valid = None if valid is None else np.ascontiguousarray(valid[group_rows])

    def at(self, groups: np.ndarray, group_start: np.ndarray, group_rows: np.ndarray, total: int) -> pa.Array:
        """The column's values of the result rows: each group's build rows in turn (null for -1).
        Fixed-width values and the Arrow validity bitmap are written by one kernel pass."""
        if self.values is None:  # not fixed-width: take the build rows by index (null index: null)
            return self.col.take(_fill(pa.int64(), groups, group_start, group_rows, None, total))
        return _fill(self.type, groups, group_start, self.values, self.valid, total)


def _fill(t: pa.DataType, groups, group_start, grouped: np.ndarray, valid: np.ndarray | None, total: int) -> pa.Array:
    """An Arrow array of ``t``: each group's run of ``grouped`` in turn, null for group -1."""
    out = recycled.empty(total, grouped.dtype)
    bitmap = valid is not None or bool(groups.shape[0] and groups.min() < 0)
    bits = recycled.empty((total + 7) >> 3 if bitmap else 1, np.uint8)
    use_valid = valid is not None
    valid = valid if use_valid else _NO_VALID
    if bitmap and grouped.shape[0] == group_start.shape[0] - 1 and grouped.shape[0]:  # one build row per key
        nulls = int(K.fill_unique_bitmap(groups, grouped, valid, use_valid, out, bits))
    else:
        nulls = int(K.fill_groups_bitmap(groups, group_start, grouped, valid, use_valid, bitmap, out, bits))
    return pa.Array.from_buffers(t, total, [pa.py_buffer(bits) if nulls else None, pa.py_buffer(out)],
                                 null_count=nulls)
