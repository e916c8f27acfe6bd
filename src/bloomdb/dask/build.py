"""``build_filter``: one bloomdb filter over a Dask collection, built per partition and unioned.

Every partition task creates a filter of the same shape (the spec and one capacity for all), adds
its partition's keys and returns it; the filters are OR-merged (``union``) in a tree of fan-in
``split_every``, so no task holds more than ``split_every`` filters. Static families (``ribbon``,
``fuse8``/``fuse16``, ``paired``, ``leveldb``) cannot be merged: their distinct keys are gathered
in the same tree (unique per partition, then unique of the concatenation) and the filter is built
once on a worker, when the key count is at most ``max_static_keys``; otherwise they are refused.

Cost: without ``capacity`` one extra pass counts the non-null keys (exact, no hashing); then one
pass hashes every key once. Memory per worker: one filter per running task plus ``split_every``
filters at a merge (a ``blocked:10`` filter for N keys is 1.25 N bytes); the static path holds the
distinct keys of the whole collection on one worker (8 bytes per integer key, the bytes of string
keys) plus the filter.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import filters
from ..errors import InvalidArgument
from .partitions import key_column, keys_of, present


def _partitions(col: Any) -> list:
    """One Delayed per partition (DataFrame/Series partitions, Array blocks, Bag partitions)."""
    import dask.array as da
    import dask.bag as db
    import dask.dataframe as dd

    if isinstance(col, (dd.Series, dd.Index, db.Bag)):
        return list(col.to_delayed())
    if isinstance(col, da.Array):
        return list(col.ravel().to_delayed().ravel())
    raise InvalidArgument(f"build_filter takes a Dask DataFrame, Series, Array or Bag, got {type(col).__name__}")


def _count(part: Any) -> int:
    return int(present(part).sum())


def _build_part(part: Any, spec: str, capacity: int) -> Any:
    f = filters.create(spec, capacity=capacity)
    f.add_many(keys_of(part))
    return f


def _union_all(*parts: Any) -> Any:
    out = parts[0].copy()
    for p in parts[1:]:
        out |= p
    return out


def _distinct(part: Any) -> Any:
    keys = keys_of(part)
    if isinstance(keys, np.ndarray):
        return np.unique(keys)
    if isinstance(keys, pa.Array):
        return pc.unique(keys)
    return list(dict.fromkeys(keys))


def _merge_distinct(*parts: Any) -> Any:
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.unique(np.concatenate(parts))
    if all(isinstance(p, pa.Array) for p in parts):
        return pc.unique(pa.concat_arrays([p.cast(parts[0].type) for p in parts]))
    seen: dict = {}
    for p in parts:
        seen.update(dict.fromkeys(p.tolist() if isinstance(p, np.ndarray) else
                                  p.to_pylist() if isinstance(p, pa.Array) else p))
    return list(seen)


def _tree(items: list, combine: Any, split_every: int) -> Any:
    import dask

    fn = dask.delayed(combine, pure=True)
    while len(items) > 1:
        items = [fn(*items[i:i + split_every]) if len(items[i:i + split_every]) > 1 else items[i]
                 for i in range(0, len(items), split_every)]
    return items[0]


def build_filter(collection: Any, column: str | None = None, spec: str = "blocked:10", capacity: int | None = None,
                 *, split_every: int = 8, max_static_keys: int = 50_000_000) -> Any:
    """A bloomdb filter holding every non-null key of ``collection`` (nulls are not keys).

    ``collection``: a Dask DataFrame (with ``column``), Series, Index, Array or Bag. ``spec``: any
    family (``"blocked:10"``, ``"fuse8"``, ...). ``capacity``: the number of keys to size for; by
    default the exact count of non-null keys (an upper bound on the distinct keys: duplicates count
    once each, so the filter may be larger than a filter of the distinct keys). Dynamic families
    are built per partition at that one capacity and unioned in a tree; static families from the
    distinct keys gathered on one worker, refused with :class:`InvalidArgument` above
    ``max_static_keys`` keys. Returns the filter (computed). Raises InvalidArgument for a bad
    collection, column or spec, :class:`~bloomdb.errors.KeyTypeError` for keys a filter refuses.
    """
    import dask

    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise InvalidArgument(f"split_every must be an integer >= 2, got {split_every!r}")
    name, _ = filters.parse_spec(spec)
    cls = filters.family(name)
    col = key_column(collection, column)
    parts = _partitions(col)
    if not parts:
        raise InvalidArgument("the collection has no partitions")
    if capacity is None:
        capacity = max(1, int(sum(dask.compute(*[dask.delayed(_count)(p) for p in parts]))))
    if cls.static:
        if capacity > max_static_keys:
            raise InvalidArgument(
                f"{name} is static (no union): its filter is built from all distinct keys on one worker, and "
                f"{capacity:,} keys exceed max_static_keys={max_static_keys:,}; use a family with union "
                f"(blocked, standard, sbbf, register, ...) or raise max_static_keys")
        distinct = _tree([dask.delayed(_distinct)(p) for p in parts], _merge_distinct, split_every)
        return dask.delayed(filters.build)(spec, distinct).compute()
    filters.create(spec, capacity=capacity)  # a bad spec or capacity raises here, before any task runs
    built = [dask.delayed(_build_part)(p, spec, capacity) for p in parts]
    return _tree(built, _union_all, split_every).compute()
