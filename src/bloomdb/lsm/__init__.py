"""``bloomdb.lsm``: an embedded LSM key-value store whose tables carry bloomdb filters.

>>> from bloomdb.lsm import DB, Options
>>> with DB.open("/tmp/mydb", Options(filter="blocked:10")) as db:
...     db.put(b"k", b"v"); db.get(b"k")
b'v'

A read for a missing key costs one RAM probe per table (all tables' filters are checked by one
kernel call) instead of one block read per table. See :class:`DB` and :class:`Options`.
"""

from .batch import WriteBatch
from .db import DB, Snapshot
from .options import Options
from .prefix import CappedPrefix, FixedPrefix
from .repairdb import RepairReport, repair

__all__ = ["DB", "Options", "WriteBatch", "Snapshot", "repair", "RepairReport", "FixedPrefix", "CappedPrefix"]
