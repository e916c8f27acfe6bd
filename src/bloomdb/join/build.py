"""The build side of the hash join: hash table over the distinct build keys, and the filter.

``BuildSide(table, key, filter_spec)`` reads the build key column once: null keys are dropped
(they never match), the non-null keys are hashed (XXH3-64, the filters' hash), inserted into the
open-addressing table of :mod:`._join_kernels` (duplicates share a group) and added to a filter
made from ``filter_spec`` (e.g. ``"register:2"``, fixed 256 KiB; ``"blocked:10"``). Groups are
turned into CSR lists of build rows so a match can emit every duplicate.

Cost: O(build rows) — one hash pass, one insert pass, one filter add pass, one stable argsort.
Memory: 16 bytes per table slot (2-4 slots per distinct key) + 8 per build row + the filter.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .. import filters
from ..errors import InvalidArgument
from ..filters.base import HashedFilter
from . import _join_kernels as K
from .keys import JoinKeys, _ro, from_arrow, key_kind

#: Default fixed filter size: 256 KiB, the Floe post's choice (fits in L2).
DEFAULT_FILTER_BYTES = 256 * 1024


def make_filter(spec: str, keys: JoinKeys, size_bytes: int | None = None, arrow_keys: Any = None) -> HashedFilter:
    """A filter of ``spec`` holding every non-null key of ``keys``.

    ``register`` filters get a fixed ``size_bytes`` (256 KiB by default); other families are
    sized for the number of keys. Only families fed by the XXH3-64 key hash can be pushed into the
    scan (they are probed with the hashes the join computes anyway).
    """
    name, _arg = filters.parse_spec(spec)
    cls = filters.family(name)
    if not issubclass(cls, HashedFilter):
        raise InvalidArgument(f"join filter {spec!r}: the family must hash keys with XXH3-64 (a HashedFilter)")
    kwargs: dict[str, Any] = {}
    if name == "register":
        kwargs["size_bytes"] = DEFAULT_FILTER_BYTES if size_bytes is None else size_bytes
    elif size_bytes is not None:
        raise InvalidArgument("filter_size_bytes applies to the fixed-size 'register' family only")
    valid = keys.valid
    if cls.static:  # built once from all keys: give it the non-null keys themselves
        if keys.ints is not None:
            live = keys.ints if valid is None else keys.ints[valid]
        else:
            live = arrow_keys.drop_null() if arrow_keys is not None else None
            if live is None:
                raise InvalidArgument(f"static filter {spec!r} needs the build keys")
        return filters.build(spec, live, **kwargs)  # type: ignore[return-value]
    n = keys.n - (0 if valid is None else int(valid.size - valid.sum()))
    f = filters.create(spec, capacity=max(1, n), **kwargs)
    h = keys.hashes()
    f.add_hashes(h if valid is None else h[valid])
    return f  # type: ignore[return-value]


class BuildSide:
    """Hash table + filter over the build side's key column (see module docstring)."""

    def __init__(self, table: pa.Table, key: str, filter_spec: str | None, filter_size_bytes: int | None = None):
        if key not in table.column_names:
            raise InvalidArgument(f"build side has no column {key!r} (columns: {', '.join(table.column_names)})")
        self.table = table
        self.key = key
        self.kind = key_kind(table.schema.field(key).type, key)
        keys = from_arrow(table[key], self.kind)
        self.keys = keys
        self.num_rows = keys.n
        rows = np.arange(keys.n, dtype=np.int64) if keys.valid is None else np.flatnonzero(keys.valid)
        n = rows.shape[0]
        cap = 1 << max(4, int(2 * max(n, 1) - 1).bit_length())  # >= 2n: at most half full
        self.capacity = cap
        self.shift = np.uint64(64 - (cap.bit_length() - 1))
        self.slots = np.zeros(2 * cap, np.uint64)
        row_group = np.empty(n, np.int64)
        if self.kind == "int":
            self.groups = int(K.build_ints(_ro(np.ascontiguousarray(keys.ints[rows])), self.slots, self.shift, row_group))
            self.rep = _ro(np.zeros(1, np.int64))
        else:
            # string tables compare against build rows: index the compact non-null copy
            h = _ro(np.ascontiguousarray(keys.hashes()[rows]))
            offs = keys.offsets
            starts, ends = offs[rows], offs[rows + 1]
            lens = ends - starts
            self.b_offsets = np.zeros(n + 1, np.int64)
            np.cumsum(lens, out=self.b_offsets[1:])
            idx = np.repeat(starts - self.b_offsets[:-1], lens) + np.arange(int(self.b_offsets[-1]), dtype=np.int64)
            self.b_data = _ro(keys.data[idx] if idx.size else np.zeros(1, np.uint8))
            self.b_offsets = _ro(self.b_offsets)
            rep = np.empty(max(n, 1), np.int64)
            self.groups = int(K.build_bytes(self.b_data, self.b_offsets, h, self.slots, self.shift, row_group, rep))
            self.rep = _ro(rep[: max(self.groups, 1)])
        self.slots = _ro(self.slots)
        order = np.argsort(row_group, kind="stable")
        self.group_rows = _ro(rows[order])  # build rows, grouped, in build order within a group
        counts = np.bincount(row_group, minlength=self.groups).astype(np.int64)
        self.group_count = _ro(counts)
        start = np.zeros(self.groups + 1, np.int64)
        np.cumsum(counts, out=start[1:])
        self.group_start = _ro(start)
        self.non_null_rows = n
        self.filter = make_filter(filter_spec, keys, filter_size_bytes, table[key]) if filter_spec else None
        self._sorted: np.ndarray | None = None

    # ---- probing ---------------------------------------------------------------------------

    def probe(self, keys: JoinKeys, sel: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
        """Matches of ``keys`` (at ``sel`` positions, or all rows): (positions, groups, rows probed)."""
        n = keys.n if sel is None else sel.shape[0]
        out_pos = np.empty(n, np.int64)
        out_grp = np.empty(n, np.int64)
        use_sel = sel is not None
        s = _ro(sel) if use_sel else _EMPTY_SEL
        if self.kind == "int":
            m, probed = K.probe(keys.ints, _DUMMY_U8, _DUMMY_I64, _DUMMY_U64, False, keys.valid_or_empty(), s, use_sel,
                                self.slots, self.shift, _DUMMY_U8, _DUMMY_I64, self.rep, out_pos, out_grp)
        else:
            m, probed = K.probe(_DUMMY_U64, keys.data, keys.offsets, keys.hashes(), True, keys.valid_or_empty(), s,
                                use_sel, self.slots, self.shift, self.b_data, self.b_offsets, self.rep, out_pos, out_grp)
        return out_pos[:m], out_grp[:m], int(probed)

    def filter_pass(self, keys: JoinKeys) -> np.ndarray:
        """Bool mask of rows the filter lets through (never drops a key of the build side)."""
        out = np.empty(keys.n, np.bool_)
        if keys.n:
            if keys.ints is not None:
                self.filter._query_batch(keys.batch, out)
            else:
                self.filter._query_hashes(keys.hashes(), out)
        return out

    def expand(self, pos: np.ndarray, grp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(probe positions, build rows): one pair per matching build row, in probe order."""
        total = int(self.group_count[grp].sum()) if grp.size else 0
        out_pos = np.empty(total, np.int64)
        out_row = np.empty(total, np.int64)
        K.expand_pairs(pos, grp, self.group_start, self.group_rows, out_pos, out_row)
        return out_pos, out_row

    def distinct_keys(self) -> pa.Array:
        """The distinct non-null build keys as an Arrow array of the build column's type (values,
        not bit patterns: a Parquet source hashes each as its own column stores it)."""
        import pyarrow.compute as pc

        col = self.table[self.key]
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        return pc.unique(col.drop_null())

    # ---- min/max pruning -------------------------------------------------------------------

    def any_key_between(self, lo: Any, hi: Any, signed: bool = True) -> bool:
        """True unless no build key lies in ``[lo, hi]`` (chunk statistics; None = unknown).

        ``signed`` says how the probe column orders integers (fixed for one join)."""
        if lo is None or hi is None:
            return True
        if self.non_null_rows == 0:
            return False
        if self._sorted is None:
            if self.kind == "int":
                live = self.keys.ints if self.keys.valid is None else self.keys.ints[self.keys.valid]
                self._sorted = np.sort(live.view(np.int64) if signed else live)
            else:
                col = self.table[self.key].drop_null()
                if pa.types.is_dictionary(col.type):
                    col = col.cast(col.type.value_type)
                self._sorted = np.array(sorted(set(col.to_pylist())), dtype=object)
        arr = self._sorted
        try:
            i = int(np.searchsorted(arr, lo, side="left"))
        except TypeError:  # incomparable statistics (e.g. bytes vs str): cannot prune
            return True
        return i < arr.shape[0] and arr[i] <= hi


_EMPTY_SEL = _ro(np.zeros(0, np.int64))
_DUMMY_U8 = _ro(np.zeros(1, np.uint8))
_DUMMY_I64 = _ro(np.zeros(1, np.int64))
_DUMMY_U64 = _ro(np.zeros(1, np.uint64))
