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
import pyarrow.compute as pc

from .. import filters
from ..errors import InvalidArgument
from ..filters.base import HashedFilter
from . import _join_kernels as K
from .compare import KeyDomain
from .keys import JoinKeys, Packer, _ro, combine, from_arrow

#: Default fixed filter size: 256 KiB, the Floe post's choice (fits in L2).
DEFAULT_FILTER_BYTES = 256 * 1024


def make_filter(spec: str, hashes: np.ndarray, size_bytes: int | None = None) -> HashedFilter:
    """A filter of ``spec`` holding the keys whose XXH3-64 ``hashes`` are given, one per distinct key.

    ``register`` filters get a fixed ``size_bytes`` (256 KiB by default); other families are
    sized for the number of distinct keys. Only families fed by the XXH3-64 key hash can be pushed
    into the scan (they are probed with the hashes the join computes anyway). The caller gives
    each distinct key once: a build side with many duplicates then neither over-fills a filter that
    counts copies (cuckoo holds a key at most 8 times) nor inflates its size.
    """
    name, arg = filters.parse_spec(spec)
    cls = filters.family(name)
    if not issubclass(cls, HashedFilter):
        raise InvalidArgument(f"join filter {spec!r}: the family must hash keys with XXH3-64 (a HashedFilter)")
    kwargs: dict[str, Any] = {}
    if name == "register":
        kwargs["size_bytes"] = DEFAULT_FILTER_BYTES if size_bytes is None else size_bytes
    elif size_bytes is not None:
        raise InvalidArgument("filter_size_bytes applies to the fixed-size 'register' family only")
    live = _ro(hashes)
    if cls.static:  # built once from all the hashes
        if arg is not None:
            kwargs.update(cls.spec_kwargs(arg))
        return cls.build_hashes(live, **kwargs)  # type: ignore[attr-defined,return-value]
    f = filters.create(spec, capacity=max(1, live.shape[0]), **kwargs)
    f.add_hashes(live)
    return f  # type: ignore[return-value]


class BuildSide:
    """Hash table + filter over the build side's key column (see module docstring)."""

    def __init__(self, table: pa.Table, key: str, domain: KeyDomain, filter_spec: str | None,
                 filter_size_bytes: int | None = None, combined: JoinKeys | None = None, packer: Packer | None = None):
        if key not in table.column_names:
            raise InvalidArgument(f"build side has no column {key!r} (columns: {', '.join(table.column_names)})")
        self.table = table
        self.key = key
        self.domain = domain
        self.keys = from_arrow(table[key], domain)  # the (first) key column: min/max and Bloom pruning
        self.packer = packer  # a multi-column key packed into one word (``combined`` holds it packed)
        keys = self.keys if combined is None else combined  # what the hash table and the filter hold
        self.kind = "int" if keys.ints is not None else "words" if keys.words is not None else "bytes"
        self.num_rows = keys.n
        rows = np.arange(keys.n, dtype=np.int64) if keys.valid is None else np.flatnonzero(keys.valid)
        n = rows.shape[0]
        cap = 1 << max(4, int(2 * max(n, 1) - 1).bit_length())  # >= 2n: at most half full
        self.capacity = cap
        self.shift = np.uint64(64 - (cap.bit_length() - 1))
        self.slots = np.zeros(2 * cap, np.uint64)
        row_group = np.empty(n, np.int64)
        self.b_data, self.b_offsets, self.b_words = _DUMMY_U8, _DUMMY_I64, _DUMMY_W
        rep = np.zeros(max(n, 1), np.int64)
        if self.kind == "int":
            self.groups = int(K.build_ints(_ro(np.ascontiguousarray(keys.ints[rows])), self.slots, self.shift, row_group))
        elif self.kind == "words":
            # composite tables compare against build rows: index the compact non-null copy
            live = _ro(np.ascontiguousarray(keys.words[:, rows]))
            self.b_words = _ro(np.ascontiguousarray(live.T))  # one row per key: its words in one line
            h = _ro(np.ascontiguousarray(keys.hashes()[rows]))
            self.groups = int(K.build_hashed(K.WORDS, _DUMMY_U8, _DUMMY_I64, live, self.b_words, h, self.slots,
                                             self.shift, row_group, rep))
        else:
            h = _ro(np.ascontiguousarray(keys.hashes()[rows]))
            self.b_data, self.b_offsets = _compact_bytes(keys, rows)
            self.groups = int(K.build_hashed(K.BYTES, self.b_data, self.b_offsets, _DUMMY_W, _DUMMY_W, h, self.slots,
                                             self.shift, row_group, rep))
        self.rep = _ro(rep[: max(self.groups, 1)])
        self.slots = _ro(self.slots)
        order = np.argsort(row_group, kind="stable")
        self.group_rows = _ro(rows[order])  # build rows, grouped, in build order within a group
        counts = np.bincount(row_group, minlength=self.groups).astype(np.int64)
        self.group_count = _ro(counts)
        self.unique = self.groups == n  # no build key repeats: every match is one result row
        start = np.zeros(self.groups + 1, np.int64)
        np.cumsum(counts, out=start[1:])
        self.group_start = _ro(start)
        self.non_null_rows = n
        if filter_spec:  # one hash per distinct key: the first build row of each group
            distinct = keys.hashes()[self.group_rows[start[:-1]]] if self.groups else np.zeros(0, np.uint64)
            self.filter = make_filter(filter_spec, np.ascontiguousarray(distinct), filter_size_bytes)
        else:
            self.filter = None
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
            m, probed = K.probe(keys.ints, _DUMMY_U8, _DUMMY_I64, _DUMMY_W, _DUMMY_U64, K.INTS, keys.valid_or_empty(),
                                s, use_sel, self.slots, self.shift, self.b_data, self.b_offsets, self.b_words, self.rep,
                                out_pos, out_grp)
        elif self.kind == "words":
            m, probed = K.probe(_DUMMY_U64, _DUMMY_U8, _DUMMY_I64, keys.words, keys.hashes(), K.WORDS,
                                keys.valid_or_empty(), s, use_sel, self.slots, self.shift, self.b_data, self.b_offsets,
                                self.b_words, self.rep, out_pos, out_grp)
        else:
            m, probed = K.probe(_DUMMY_U64, keys.data, keys.offsets, _DUMMY_W, keys.hashes(), K.BYTES,
                                keys.valid_or_empty(), s, use_sel, self.slots, self.shift, self.b_data, self.b_offsets,
                                self.b_words, self.rep, out_pos, out_grp)
        return out_pos[:m], out_grp[:m], int(probed)

    def probe_keys(self, parts: list[JoinKeys]) -> JoinKeys:
        """A probe chunk's multi-column key (one JoinKeys per key column) in the form the table
        holds: packed into one word (:class:`.keys.Packer`) or combined (:func:`.keys.combine`)."""
        return self.packer.pack(parts) if self.packer is not None else combine(parts)

    def filter_pass(self, keys: JoinKeys) -> np.ndarray:
        """Bool mask of rows the filter lets through (never drops a key of the build side)."""
        out = np.empty(keys.n, np.bool_)
        if keys.n:
            if keys.ints is not None:  # the filter hashes integer keys itself
                self.filter.might_contain_many(keys.batch, out=out)
            else:
                self.filter.might_contain_hashes(keys.hashes(), out=out)
        return out

    def expand(self, pos: np.ndarray, grp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(probe positions, build rows): one pair per matching build row, in probe order."""
        total = int(self.group_count[grp].sum()) if grp.size else 0
        out_pos = np.empty(total, np.int64)
        out_row = np.empty(total, np.int64)
        K.expand_pairs(pos, grp, self.group_start, self.group_rows, out_pos, out_row)
        return out_pos, out_row

    def distinct_keys(self, probe_type: pa.DataType) -> pa.Array | None:
        """The distinct build keys as an Arrow array of the probe key's type (values, not bit
        patterns: a Parquet source hashes each as its own column stores it), leaving out keys no
        probe value equals; None when they cannot be given in that type (then the probe's own
        Bloom filters are not asked)."""
        if self.kind == "int":
            return self.domain.to_arrow(self.domain.decode(np.unique(self._live()), probe_type), probe_type)
        col = self.table[self.key]
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        return pc.unique(col.drop_null())

    def _live(self) -> np.ndarray:
        """The build keys' words that can match (nulls and unrepresentable keys left out)."""
        return self.keys.ints if self.keys.valid is None else self.keys.ints[self.keys.valid]

    # ---- min/max pruning -------------------------------------------------------------------

    def any_key_between(self, bounds: tuple[Any, Any] | None) -> bool:
        """True unless no build key lies in ``bounds`` = (lo, hi), a probe chunk's statistics in
        the domain's order (:meth:`KeyDomain.stat_range`; None = unknown)."""
        if bounds is None:
            return True
        if self.non_null_rows == 0:
            return False
        if self._sorted is None:
            order = self.domain.order
            if order in ("int64", "uint64"):
                live = self._live()
                self._sorted = np.sort(live.view(np.int64) if order == "int64" else live)
            else:
                col = self.table[self.key].drop_null()
                if pa.types.is_dictionary(col.type):
                    col = col.cast(col.type.value_type)
                self._sorted = np.array(sorted(set(col.cast(pa.large_binary()).to_pylist())), dtype=object)
        arr, (lo, hi) = self._sorted, bounds
        i = int(np.searchsorted(arr, lo, side="left"))
        return i < arr.shape[0] and arr[i] <= hi


def _compact_bytes(keys: JoinKeys, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)`` of the byte-string keys at ``rows``, packed (string tables compare
    against build rows: they index this compact non-null copy)."""
    offs = keys.offsets
    starts, ends = offs[rows], offs[rows + 1]
    lens = ends - starts
    offsets = np.zeros(rows.shape[0] + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    idx = np.repeat(starts - offsets[:-1], lens) + np.arange(int(offsets[-1]), dtype=np.int64)
    return _ro(keys.data[idx] if idx.size else np.zeros(1, np.uint8)), _ro(offsets)


_EMPTY_SEL = _ro(np.zeros(0, np.int64))
_DUMMY_W = _ro(np.zeros((1, 1), np.uint64))
_DUMMY_U8 = _ro(np.zeros(1, np.uint8))
_DUMMY_I64 = _ro(np.zeros(1, np.int64))
_DUMMY_U64 = _ro(np.zeros(1, np.uint64))
