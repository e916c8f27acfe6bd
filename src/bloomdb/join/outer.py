"""Which (probe row, build row) pairs a chunk of each kind of join emits, and the build rows that
right and full joins add at the end.

Rows come in probe order; a probe row with several build matches repeats once per build row, in
build order. A build row of ``-1`` stands for "no build row" (its columns are null).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgument
from . import _join_kernels as K
from .build import BuildSide

_NONE = np.zeros(0, np.int64)


def pairs(bs: BuildSide, how: str, pos: np.ndarray, grp: np.ndarray,
          unmatched: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(probe positions, build rows or None)`` of the result rows of one chunk: ``pos`` / ``grp``
    the matched probe rows and their key groups, ``unmatched`` the probe rows without a match that
    the join keeps (left, full, anti). Cost: one kernel pass per result row (no sort)."""
    if how == "semi":
        return pos, None
    if how == "anti":
        return unmatched, None
    if how in ("inner", "right") or unmatched.shape[0] == 0:
        return bs.expand(pos, grp)
    return _merge(bs, pos, grp, unmatched, True)


def result_groups(pos: np.ndarray, grp: np.ndarray, unmatched: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(probe rows, key groups)``: matched rows ``pos`` and ``unmatched`` rows (group -1) merged
    in probe order, each once. Cost: one kernel pass (none without unmatched rows)."""
    if unmatched.shape[0] == 0:
        return pos, grp
    n = pos.shape[0] + unmatched.shape[0]
    if max(pos[-1] if pos.shape[0] else -1, unmatched[-1]) == n - 1:  # every row 0..n-1 (they are disjoint)
        out_grp = np.empty(n, np.int64)
        K.scatter_groups(pos, grp, out_grp)
        return every_position(n), out_grp
    out_pos = np.empty(n, np.int64)
    out_grp = np.empty(n, np.int64)
    K.merge_groups(pos, grp, unmatched, out_pos, out_grp)
    return out_pos, out_grp


_EVERY: dict[int, np.ndarray] = {}


def every_position(n: int) -> np.ndarray:
    """``0, 1, ..., n - 1`` (int64, read-only), made once per chunk length (a left join's chunk
    keeps every probe row: a fresh ``arange`` per chunk wrote 512 KiB for nothing)."""
    a = _EVERY.get(n)
    if a is None:
        a = np.arange(n, dtype=np.int64)
        a.flags.writeable = False
        if len(_EVERY) >= 8:
            _EVERY.clear()
        _EVERY[n] = a
    return a


def probe_weights(bs: BuildSide, how: str, pos: np.ndarray, grp: np.ndarray,
                  unmatched: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(probe positions ascending, multiplicities or None)``: each result probe row once with the
    number of result rows it stands for (its key's build rows; 1 without a match)."""
    if how == "semi":
        return pos, None
    if how == "anti":
        return unmatched, None
    if unmatched.shape[0] == 0:
        return pos, (None if bs.unique else bs.group_count[grp])
    return _merge(bs, pos, grp, unmatched, False)


def _merge(bs: BuildSide, pos, grp, unmatched, expand: bool) -> tuple[np.ndarray, np.ndarray]:
    """Matched and unmatched probe rows in probe order, one kernel pass (no sort)."""
    n = (int(bs.group_count[grp].sum()) if expand else pos.shape[0]) + unmatched.shape[0]
    out_pos = np.empty(n, np.int64)
    out_row = np.empty(n, np.int64)
    K.merge_unmatched(pos, grp, unmatched, bs.group_start, bs.group_rows, expand, out_pos, out_row)
    return out_pos, out_row


def unmatched_rows(n: int, matched: np.ndarray, alive: np.ndarray | None) -> np.ndarray:
    """Probe rows ``0..n-1`` not in ``matched`` (and in ``alive`` when given), ascending."""
    keep = np.ones(n, np.bool_) if alive is None else np.zeros(n, np.bool_)
    if alive is not None:
        keep[alive] = True
    keep[matched] = False
    return np.flatnonzero(keep)


def build_only(bs: BuildSide, matched_groups: np.ndarray) -> np.ndarray:
    """Build rows (ascending) whose key matched no probe row, null keys included."""
    keep = np.ones(bs.num_rows, np.bool_)
    keep[bs.group_rows[np.repeat(matched_groups, bs.group_count)]] = False
    return np.flatnonzero(keep)


def take(col: pa.ChunkedArray | pa.Array, rows: np.ndarray) -> pa.Array:
    """``col`` at ``rows`` with null where the row is -1."""
    idx = pa.array(rows, mask=rows < 0) if rows.shape[0] and rows.min() < 0 else pa.array(rows)
    out = col.take(idx)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def cast_fill(a: pa.Array, t: pa.DataType, name: str) -> pa.Array:
    """``a`` (build key values filling a probe key column, or a chunk's column) as type ``t``;
    InvalidArgument when a value does not fit."""
    try:
        return a.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidArgument(f"result column {name!r}: build key values do not fit the probe key's type {t} "
                              f"({exc}); name the build key column in columns= (e.g. 'build.{name}')") from None


def filled(bs: BuildSide, fill: str, rows: np.ndarray, t: pa.DataType, name: str) -> pa.Array:
    """The build key ``fill`` at build rows ``rows`` as values of the probe key's type ``t`` (the
    joined key on build-only rows; a null-typed probe key takes the build key's type)."""
    a = take(bs.table[fill], rows)
    if pa.types.is_dictionary(a.type):
        a = a.cast(a.type.value_type)
    if pa.types.is_dictionary(t):
        t = t.value_type
    return a if pa.types.is_null(t) or a.type == t else cast_fill(a, t, name)


class AtRows:
    """A probe chunk's columns at the result's probe rows ``positions`` (ascending, repeated where
    a probe row matches several build rows). Unless the chunk gathers repeated positions as
    cheaply as Arrow's take (``ProbeChunk.gathers_repeats``: columnar and in-memory chunks do),
    each row is decoded once, then repeated by a take (Parquet pages). Cost: one pass over
    ``positions``; decoding then scales with distinct rows, not result rows."""

    def __init__(self, ch: Any, positions: np.ndarray, whole: bool):
        self.ch, self.whole = ch, whole
        if ch.gathers_repeats:
            self.rows, self.inv = positions, None
            return
        keep = np.ones(positions.shape[0], np.bool_)
        if positions.shape[0] > 1:
            np.not_equal(positions[1:], positions[:-1], out=keep[1:])
        if keep.all():
            self.rows, self.inv = positions, None
        else:
            self.rows, self.inv = positions[keep], np.cumsum(keep) - 1

    def arrow(self, name: str) -> pa.Array:
        a = self.ch.arrow(name, self.rows, self.whole)
        return a if self.inv is None else a.take(pa.array(self.inv))

    def numeric(self, name: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """As :meth:`ProbeChunk.numeric` at the result rows (``index`` maps result rows to values)."""
        v, valid, index = self.ch.numeric(name, self.rows, self.whole)
        if self.inv is not None:
            index = self.inv if index is None else index[self.inv]
        return v, valid, index
