"""bloomdb: fast, accurate membership filters and the database engines built on them."""

from . import errors, filters
from .errors import BloomDBError, CorruptionError, FilterFull, InvalidArgument

__version__ = "0.1.0"

__all__ = ["errors", "filters", "BloomDBError", "CorruptionError", "FilterFull", "InvalidArgument", "__version__"]
