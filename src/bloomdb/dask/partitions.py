"""Keys out of one partition of a Dask collection, and shipping an object to every worker once.

A partition is a pandas Series/DataFrame column, a numpy block or a list (a Bag partition). Its
keys are handed to a filter in the forms :mod:`bloomdb.keys` reads without copying where it can
(numpy integers as they are, strings through Arrow). Nulls are not keys: they are dropped on
build and answer False on probe (a null never matches a join key).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import InvalidArgument


def present(part: Any) -> np.ndarray:
    """Boolean mask of the non-null items of a partition."""
    if isinstance(part, (pd.Series, pd.Index)):
        return part.notna().to_numpy(dtype=bool)
    if isinstance(part, np.ndarray):
        return ~pd.isna(part.ravel()) if part.dtype.kind in "fOmM" else np.ones(part.size, bool)
    return np.fromiter((x is not None for x in part), dtype=bool, count=len(part))


def keys_of(part: Any, mask: np.ndarray | None = None) -> Any:
    """The keys of ``part`` (only where ``mask``, default: its non-null items) in a batch form
    :func:`bloomdb.keys.to_batches` accepts: a numpy integer array or an Arrow string/binary array
    (views, no per-key Python objects), else a list."""
    keep = present(part) if mask is None else mask
    if isinstance(part, (pd.Series, pd.Index)):
        kind = part.dtype.kind
        if kind in "iu":  # numpy, nullable (Int64) and Arrow integers: the values as a numpy array
            vals = part if keep.all() else part[keep]
            return vals.to_numpy(dtype=getattr(part.dtype, "numpy_dtype", part.dtype))
        arr = pa.array(part[keep] if not keep.all() else part, from_pandas=True)
        if pa.types.is_integer(arr.type) or pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) \
                or pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
            return arr
        return arr.to_pylist()
    if isinstance(part, np.ndarray):
        flat = part.ravel()
        return flat if keep.all() else flat[keep]
    return [x for x, k in zip(part, keep) if k]


def key_column(collection: Any, column: str | None) -> Any:
    """The one-column collection the keys come from: ``collection[column]`` for a DataFrame."""
    import dask.dataframe as dd

    if isinstance(collection, dd.DataFrame):
        if column is None:
            raise InvalidArgument("a Dask DataFrame needs column= (the key column)")
        if column not in collection.columns:
            raise InvalidArgument(f"the DataFrame has no column {column!r}")
        return collection[column]
    if column is not None:
        raise InvalidArgument("column= applies to a Dask DataFrame only")
    return collection


def ship(obj: Any) -> Any:
    """``obj`` as a task argument that reaches each worker once, not once per task.

    With a distributed client: scattered to every worker (``broadcast=True``; distributed pickles
    it with protocol 5, so a filter's bit array travels as an out-of-band buffer, no extra copy,
    and its checksum is verified on arrival). Without one: a single Delayed in the graph.
    """
    import dask

    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return dask.delayed(obj, pure=True)
    return client.scatter(obj, broadcast=True, hash=False)
