"""``might_contain`` and ``filter_rows``: a filter probed over a Dask collection, partition by partition.

The filter reaches each worker once (:func:`.partitions.ship`); each partition is one batch query
(``might_contain_many``) of its non-null keys. Cost: one hash and probe per key; no data moves
between workers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidArgument
from .partitions import key_column, keys_of, present, ship


def _mask(part: Any, filt: Any) -> np.ndarray:
    """True where the item may be in ``filt`` (nulls: False)."""
    keep = present(part)
    out = np.zeros(keep.shape[0], dtype=bool)
    if keep.any():
        out[keep] = filt.might_contain_many(keys_of(part, keep))
    return out


def _series_mask(part: pd.Series, filt: Any) -> pd.Series:
    return pd.Series(_mask(part, filt), index=part.index, name=part.name)


def _block_mask(block: np.ndarray, filt: Any) -> np.ndarray:
    return _mask(block, filt).reshape(block.shape)


def _bag_mask(part: list, filt: Any) -> list:
    return _mask(list(part), filt).tolist()


def _check_filter(filt: Any) -> None:
    if not hasattr(filt, "might_contain_many"):
        raise InvalidArgument(f"expected a bloomdb filter, got {type(filt).__name__}")


def might_contain(collection: Any, filt: Any, column: str | None = None) -> Any:
    """A lazy boolean collection shaped like ``collection``: True where the key may be in ``filt``
    (False is certain; nulls are False). ``collection``: a Dask Series (or a DataFrame and
    ``column``), Array or Bag. The filter is shipped to each worker once."""
    import dask.array as da
    import dask.bag as db
    import dask.dataframe as dd

    _check_filter(filt)
    col = key_column(collection, column)
    if not isinstance(col, (dd.Series, da.Array, db.Bag)):
        raise InvalidArgument(f"might_contain takes a Dask Series, DataFrame, Array or Bag, got {type(col).__name__}")
    sent = ship(filt)
    if isinstance(col, dd.Series):
        return col.map_partitions(_series_mask, sent, meta=pd.Series([], dtype=bool, name=col.name))
    if isinstance(col, da.Array):
        return col.map_blocks(_block_mask, sent, dtype=bool)
    return col.map_partitions(_bag_mask, sent)


def _rows(part: pd.DataFrame, column: str, filt: Any, invert: bool) -> pd.DataFrame:
    m = _mask(part[column], filt)
    return part[~m if invert else m]


def filter_rows(df: Any, column: str, filt: Any, invert: bool = False) -> Any:
    """The rows of Dask DataFrame ``df`` whose ``column`` may be in ``filt`` (lazy; each partition
    filtered where it lies, nothing shuffled). ``invert=True``: the rows certainly not in it (null
    keys included)."""
    import dask.dataframe as dd

    _check_filter(filt)
    if not isinstance(df, dd.DataFrame):
        raise InvalidArgument(f"filter_rows takes a Dask DataFrame, got {type(df).__name__}")
    key_column(df, column)
    return df.map_partitions(_rows, column, ship(filt), invert, meta=df._meta)
