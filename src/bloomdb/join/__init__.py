"""``bloomdb.join``: a hash join whose build-side filter is pushed down into the probe scan.

>>> from bloomdb.join import hash_join
>>> hash_join("facts/", dim_table, on="k", aggregates=["sum(v)", "count(*)"])
{'sum(v)': 12345, 'count(*)': 678}

See :func:`hash_join` for the contract, :mod:`bloomdb.join.adaptive` for when the filter is used.
"""

from .adaptive import AdaptivePolicy, Transition
from .build import DEFAULT_FILTER_BYTES, BuildSide
from .hash_join import DEFAULT_FILTER, hash_join
from .stats import JoinStats
from .open_files import release_files

__all__ = ["hash_join", "JoinStats", "BuildSide", "AdaptivePolicy", "Transition", "DEFAULT_FILTER",
           "DEFAULT_FILTER_BYTES", "release_files"]
