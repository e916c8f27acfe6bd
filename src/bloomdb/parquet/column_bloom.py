"""A Parquet column chunk's split-block Bloom filter that takes the column's own values as keys.

Parquet hashes a value as XXH64 of the plain encoding of the column's *physical* type: an INT32
column's ``5`` is the 4 bytes ``05 00 00 00``. A bare :class:`~bloomdb.filters.SplitBlockBloom`
takes bloomdb keys (an integer is 8 bytes), so ``might_contain(5)`` on an INT32 column's filter
would answer False for a value the column holds. :class:`ColumnBloom` (what
:func:`bloomdb.parquet.read_filters` returns) knows its column's type and encodes keys as
:func:`bloomdb.parquet.row_groups_that_may_contain` does: integers by the column's logical range
(``2**31`` in a uint32 column is the INT32 ``-2**31``; a value the column cannot hold, or a null,
is absent), temporal values in the column's unit, numbers as the column's float width (``0.0`` /
``-0.0`` and NaN are never ruled out), str/bytes as their bytes; decimal, INT96 and FLOAT16
columns answer True. ``add`` / ``add_many`` encode the same way; ``copy``, unions and pickles keep
the binding. It is not part of the bytes: ``to_bytes`` / ``save`` and
``SplitBlockBloom.from_parquet_bitset`` give a bare filter, which takes physical values hashed
with :func:`bloomdb.parquet.hash_values` (``might_contain_hashes``).
Cost: one encode pass over the keys, then the family's own probe.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..filters.sbbf import SplitBlockBloom
from ..hashing import hash_batch_xxh64
from .values import ColumnType, encode


class ColumnBloom(SplitBlockBloom):
    """A :class:`SplitBlockBloom` bound to a Parquet column's type (see the module docstring)."""

    #: the column's type; None for a filter that lost its binding (then keys are bloomdb keys)
    column_type: ColumnType | None = None

    @classmethod
    def for_column(cls, bitset: Any, column_type: ColumnType) -> "ColumnBloom":
        """A filter over a copy of ``bitset`` (a Parquet bitset) for a column of ``column_type``."""
        self = cls.from_parquet_bitset(bitset)
        self.column_type = column_type
        return self

    def _encoded(self, keys: Any) -> tuple[int, Any]:
        return encode(keys, self.column_type)

    def might_contain_many(self, keys: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Per key: False when the chunk certainly holds no such value, True when it may."""
        if self.column_type is None:
            return super().might_contain_many(keys, out)
        n, enc = self._encoded(keys)
        res = np.zeros(n, np.bool_) if enc is not None else np.ones(n, np.bool_)
        if enc is not None and enc.rows.shape[0]:
            sub = self.might_contain_hashes(hash_batch_xxh64(enc.batch, 0))
            sub[enc.loose] = True
            res[enc.rows] = sub
        if out is None:
            return res
        if not isinstance(out, np.ndarray) or out.dtype != np.bool_ or out.shape != (n,) or not out.flags.writeable:
            raise InvalidArgument(f"out must be a writable bool array of {n} entries")
        out[:] = res
        return out

    def might_contain(self, key: Any) -> bool:
        if self.column_type is None:
            return super().might_contain(key)
        return bool(self.might_contain_many([key])[0])

    def add_many(self, keys: Any, threads: int | None = None) -> None:
        """Add values of the column (encoded as it stores them). A value the column cannot hold
        raises InvalidArgument and nothing is added."""
        if self.column_type is None:
            super().add_many(keys, threads)
            return
        n, enc = self._encoded(keys)
        if enc is None or enc.rows.shape[0] != n:
            raise InvalidArgument(f"{self.column_type.physical} column: a value it cannot hold (or of a type "
                                  "its filter does not hash); nothing was added")
        self.add_hashes(hash_batch_xxh64(enc.batch, 0) if n else np.zeros(0, np.uint64))

    def add(self, key: Any) -> None:
        if self.column_type is None:
            super().add(key)
            return
        self.add_many([key])

    def copy(self) -> "ColumnBloom":
        out = super().copy()
        out.column_type = self.column_type
        return out

    def __reduce_ex__(self, protocol: int):
        """Pickles as the family does (payload out of band at protocol 5) and arrives bound."""
        rebuild, args = super().__reduce_ex__(protocol)[:2]
        return _rebound, (rebuild, args, self.column_type)


def _rebound(rebuild: Any, args: tuple, column_type: ColumnType | None) -> ColumnBloom:
    """Unpickle: the bare filter the family's pickle makes, bound to ``column_type`` again."""
    f = rebuild(*args)
    f.__class__ = ColumnBloom
    f.column_type = column_type
    return f
