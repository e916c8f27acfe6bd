"""bloomdb on a Dask cluster (``pip install bloomdb[dask]``): distributed filter builds, filter
probes over Dask collections, and the filtered hash join over partitions.

>>> from bloomdb import dask as bdask
>>> f = bdask.build_filter(users_ddf, column="id", spec="blocked:10")   # one bloomdb filter
>>> mask = bdask.might_contain(events_ddf["user"], f)                   # lazy boolean Series
>>> bdask.filtered_join("events/*.parquet", users_ddf, on="user", aggregates=["count(*)"])

The same code runs on one machine's ``LocalCluster`` or on many machines: connect a
``distributed.Client("tcp://scheduler:8786")`` first; nothing else changes. Without a
distributed client the functions run on Dask's local scheduler.
"""

from __future__ import annotations

try:
    import dask  # noqa: F401
    import dask.dataframe  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("bloomdb.dask needs Dask: pip install 'bloomdb[dask]'") from exc

from .build import build_filter
from .join import DaskJoinStats, filtered_join
from .probe import filter_rows, might_contain

__all__ = ["build_filter", "might_contain", "filter_rows", "filtered_join", "DaskJoinStats"]
