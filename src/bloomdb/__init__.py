"""bloomdb: fast, accurate membership filters and the database engines built on them."""

from . import _jit_cache

_jit_cache.install()  # before any kernel module is imported: stamps cover the modules a kernel imports

from . import errors, filters  # noqa: E402
from .errors import BloomDBError, CorruptionError, FilterFull, InvalidArgument  # noqa: E402

__version__ = "0.1.0"

__all__ = ["errors", "filters", "BloomDBError", "CorruptionError", "FilterFull", "InvalidArgument", "__version__"]
