"""Join keys in kernel form: numbers and instants as ``uint64`` words, strings as bytes + offsets.

A key column becomes words of the join's :class:`~.compare.KeyDomain` (the value both sides are
compared as: ``int32 -5`` and ``int64 -5`` are one word, ``timestamp[s] 1`` and
``timestamp[ms] 1000`` too); strings and binary become their bytes (UTF-8 for strings). Nulls,
and values the other side's type cannot hold, are cleared in ``valid`` and never match.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..hashing import hash_batch
from ..keys import KeyBatch
from ._join_kernels import hash_words, pack_column
from .compare import KeyDomain, _ro


@dataclass
class JoinKeys:
    """One chunk of keys: ``ints`` (uint64, read-only), ``data``/``offsets`` (uint8/int64) or
    ``words`` (a composite key of fixed-width columns: uint64, one row per key column, one word
    per key), plus ``valid`` (bool, True = not null) or None when there are no nulls."""

    n: int
    ints: np.ndarray | None = None
    data: np.ndarray | None = None
    offsets: np.ndarray | None = None
    valid: np.ndarray | None = None
    words: np.ndarray | None = None
    _hashes: np.ndarray | None = None

    @property
    def batch(self) -> KeyBatch:
        if self.ints is not None:
            return KeyBatch(ints=self.ints)
        return KeyBatch(data=self.data, offsets=self.offsets)

    def hashes(self) -> np.ndarray:
        """XXH3-64 of every key, :func:`._join_kernels.hash_words` of a composite key (computed
        once; null slots hash whatever they hold)."""
        if self._hashes is None:
            if not self.n:
                self._hashes = np.zeros(0, np.uint64)
            elif self.words is not None:
                h = np.empty(self.n, np.uint64)
                hash_words(self.words, h)
                self._hashes = _ro(h)
            else:
                self._hashes = _ro(hash_batch(self.batch))
        return self._hashes

    def valid_or_empty(self) -> np.ndarray:
        return _ro(self.valid) if self.valid is not None else _NO_VALID


_NO_VALID = _ro(np.zeros(0, np.bool_))


def from_values(values: np.ndarray, valid: np.ndarray | None, t: pa.DataType, domain: KeyDomain) -> JoinKeys:
    """Keys of a decoded integer-domain column chunk: ``values`` in the storage type of ``t``
    (null slots hold anything), ``valid`` None when there are no nulls."""
    words, valid = domain.encode(values, valid, t)
    return JoinKeys(words.shape[0], ints=words, valid=valid)


def from_arrow(arr: pa.Array | pa.ChunkedArray, domain: KeyDomain) -> JoinKeys:
    """Keys of an Arrow array in ``domain`` (chunked arrays are combined, dictionaries decoded)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    n = len(arr)
    if pa.types.is_null(arr.type):  # an all-null column: no key is valid
        if domain.kind == "int":
            return from_values(np.zeros(n, np.int64), None, arr.type, domain)
        return JoinKeys(n, data=_ro(np.zeros(1, np.uint8)), offsets=_ro(np.zeros(n + 1, np.int64)),
                        valid=np.zeros(n, np.bool_))
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    if domain.kind == "int":
        t = arr.type
        if pa.types.is_boolean(t):
            arr = arr.cast(pa.uint8())
        elif not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            arr = arr.view(pa.int32() if t.bit_width == 32 else pa.int64())
        if arr.null_count:
            arr = pc.fill_null(arr, 0)
        return from_values(arr.to_numpy(zero_copy_only=False), valid, t, domain)
    arr = arr.cast(pa.large_binary())
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, count=n + 1, offset=arr.offset * 8) if n else np.zeros(1, np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return JoinKeys(n, data=_ro(data), offsets=_ro(offsets), valid=valid)


def combine(parts: list[JoinKeys]) -> JoinKeys:
    """One key per row from the keys of several columns (a multi-column key). When every column
    is fixed-width (integers, floats, dates, timestamps: one domain word each) the key is a column
    of ``words`` (columns x n uint64), hashed and compared as a typed tuple. Otherwise a byte string:
    each column's key as 8 bytes (a domain word) or as its length (8 bytes) then its bytes, so two
    rows have equal combined keys exactly when every column's keys are equal. A row with a null
    (or unrepresentable) key in any column is not valid. Cost: one pass over the keys."""
    n = parts[0].n
    valid = _all_valid(parts)
    if all(p.ints is not None for p in parts):
        return JoinKeys(n, valid=valid, words=_ro(np.stack([p.ints for p in parts])))
    lens = np.zeros(n, np.int64)
    for p in parts:
        lens += 8 if p.ints is not None else 8 + np.diff(p.offsets[: n + 1])
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    data = np.zeros(max(int(offsets[-1]), 1), np.uint8)
    at = offsets[:-1].copy()  # where each row's next part goes
    eight = np.arange(8, dtype=np.int64)
    for p in parts:
        if p.ints is not None:
            word = p.ints
        else:
            o = p.offsets[: n + 1]
            word = np.diff(o).astype(np.uint64)
        data[(at[:, None] + eight).reshape(-1)] = np.ascontiguousarray(word.astype("<u8")).view(np.uint8)
        at += 8
        if p.ints is None:
            ln = np.diff(o)
            src = np.arange(int(o[0]), int(o[-1]), dtype=np.int64)
            data[src + np.repeat(at - o[:-1], ln)] = p.data[src]
            at += ln
    return JoinKeys(n, data=_ro(data), offsets=_ro(offsets), valid=valid)


@dataclass(frozen=True)
class Packer:
    """A multi-column key of fixed-width columns packed into one ``uint64`` word, when the build
    side's keys leave room: column ``j``'s word ``w`` becomes ``(w - lo[j]) * stride[j]`` (summed
    over the columns), ``lo`` / ``span`` the smallest word and the width of the range of that
    column's words over the build rows whose key has no null (words compared as unsigned
    integers, or signed when that range is shorter; the offset is taken mod 2^64, so a range is
    a run of words that may wrap: only equality matters, so every integer domain packs, floats and
    instants too). A probe word outside its column's range equals no build key: that row is
    marked not valid, as a null key is. Two packed keys are equal exactly when every column's words are, so the hash
    table, the filter and every sink treat a packed multi-column key as a single integer key
    (hashed once, compared as one word: no :func:`hash_words`, no word-by-word comparison).

    Cost: one kernel pass per key column and chunk."""

    lo: tuple[int, ...]
    span: tuple[int, ...]
    stride: tuple[int, ...]

    @staticmethod
    def of(parts: list[JoinKeys]) -> "Packer | None":
        """The packer of the build side's key columns ``parts``, or None when a column is not
        fixed-width, no row has a full key, or the ranges' product passes 2^63."""
        if len(parts) < 2 or any(p.ints is None for p in parts):
            return None
        valid = _all_valid(parts)
        lo, span = [], []
        for p in parts:
            w = p.ints if valid is None else p.ints[valid]
            if w.shape[0] == 0:
                return None
            # the shorter of the words' ranges read unsigned and signed (mixed-sign integers)
            ranges = [(int(x.min()), int(x.max())) for x in (w, w.view(np.int64))]
            a, b = min(ranges, key=lambda r: r[1] - r[0])
            lo.append(a % 2**64)
            span.append(b - a + 1)
        stride, total = [], 1
        for sp in reversed(span):
            stride.append(total)
            total *= sp
        if total >= 2**63:
            return None
        return Packer(tuple(lo), tuple(span), tuple(reversed(stride)))

    def pack(self, parts: list[JoinKeys]) -> JoinKeys:
        """One chunk's key columns (``ints`` words of each column's domain) as packed keys."""
        n = parts[0].n
        acc = np.empty(n, np.uint64)
        inside = np.empty(n, np.bool_)
        for j, p in enumerate(parts):
            pack_column(p.ints, np.uint64(self.lo[j]), np.uint64(self.span[j]), np.uint64(self.stride[j]), j == 0, acc,
                        inside)
        valid = _all_valid(parts)
        valid = inside if valid is None else (valid & inside)
        return JoinKeys(n, ints=_ro(acc), valid=None if n and valid.all() else valid)


def _all_valid(parts: list[JoinKeys]) -> np.ndarray | None:
    """Rows where no part's key is null (None: every row)."""
    valid = None
    for p in parts:
        if p.valid is not None:
            valid = p.valid.copy() if valid is None else (valid & p.valid)
    return valid
