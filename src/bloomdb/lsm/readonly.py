"""Opening a store read-only (``DB.open(path, read_only=True)``; LevelDB/RocksDB's
``OpenForReadOnly``).

A read-only open takes no lock and writes nothing: any number of processes may open a store this
way, even while one writer has it open. It sees the store as of the open: the tables its
``MANIFEST`` lists plus the writes of the logs still needed, replayed into an in-memory memtable.

Consistency with a live writer: the writer replaces ``MANIFEST`` atomically and deletes a log or
a table only after a manifest that no longer needs it is durable. So :func:`load` reads the
manifest, lists the folder and reads the manifest again (if it changed, a log the listing misses
may be in a table that manifest does not name: it starts over); then it opens the manifest's
tables (each memory-mapped whole: a later delete by the writer's compaction does not take it
away) and replays the listed logs it still needs (each mapped whole too); a file deleted before
it was opened starts it over (tables opened are kept for the next try). A log still being
appended ends in a torn record at worst, which replay drops: what is seen is a prefix of the
acknowledged writes. Cost: reading every live log once, per attempt.

The store filter (:mod:`.store_filter`): the store's saved ``STOREFILTER`` is used when it is
valid (checksum, the store's identity) and covers every table this open holds (each table's
number, size, max sequence and key bounds; the replayed memtable is checked before the tables
anyway), as the writer's open uses it. When it does not -- missing, damaged, foreign, or stale
(a live writer saves it only at its close) -- and the tables hold ``MIN_ENTRIES`` entries, one
daemon thread (:meth:`.background.Background.start_read_only`) builds one in memory: the file's
filter copied with the uncovered tables' keys added, or a new one sized for the distinct keys
(no growth headroom: the tables never change), ``STEP_ENTRIES`` table entries a step; lookups
use the tables' own filters until it covers every table, then its record is set in the
version's directory. Nothing is written, ever (no file, no save at close). Cost of a build: one
decode and hash of every uncovered table entry, in that thread; ``close`` waits for one step.
"""

from __future__ import annotations

import os

from ..errors import BloomDBError, InvalidArgument, StoreReadOnly
from . import identity
from . import manifest as mf
from .compaction.executor import table_path
from .options import MAX_LEVELS
from .recovery import replay
from .sstable import Table
from .sstable.cached_reader import open_table
from .version import TableRef, Version
from .version_set import OWN_RE

ATTEMPTS = 20  # manifest changes tolerated during one open (a busy writer rewrites it often)


class NoLock:
    """The process lock a read-only store does not take."""

    def release(self) -> None:
        """Nothing to release."""


def load(db) -> None:
    """Load ``db``'s state (a :class:`~.db.DB` being opened read-only) without writing: sets
    ``db._seq``, ``db._mem``, ``db._imm``, ``db._log`` (None), ``db._state`` and the version set's
    current version. Raises :class:`InvalidArgument` when there is no store at the path,
    :class:`BloomDBError` when a writer kept changing it for :data:`ATTEMPTS` tries."""
    fs, path = db._fs, db.path
    kind = identity.inspect(fs, path)
    if kind not in (identity.STORE, identity.LEGACY):
        raise InvalidArgument(f"{path}: no store here (a read-only open creates nothing)")
    opened: dict[int, Table] = {}  # tables are immutable: a retry reuses what it opened
    for _ in range(ATTEMPTS):
        try:
            if _attempt(db, opened):
                sf = db._vs.store_filter
                if sf is not None:  # the saved file, if it covers this open's tables (read in place, never written)
                    sf.load(db._fs, path, db._vs.current)
                return
        except FileNotFoundError:  # a writer deleted a file named by the manifest we read: again
            continue
    raise BloomDBError(f"{path}: the store changed during each of {ATTEMPTS} read-only opens; try again")


def _attempt(db, opened: dict) -> bool:
    """One try: False when the manifest changed while the folder was listed (a log the listing
    misses may then be flushed into a table that manifest does not name)."""
    fs, path, vs = db._fs, db.path, db._vs
    mpath = os.path.join(path, "MANIFEST")
    raw = bytes(fs.read_all(mpath))
    names = fs.listdir(path)
    if bytes(fs.read_all(mpath)) != raw:
        return False
    state = mf.decode(raw, mpath)
    refs = []
    for level, info in state.tables:
        t = opened.get(info.number)
        if t is None:
            t = opened[info.number] = open_table(fs, table_path(path, info.number), info.number, db._cache, level)
        refs.append(TableRef(level, info, t))
    logs = sorted(n for n, suffix in _own(names) if suffix == ".log" and n >= state.log_number)
    mem, seq = replay(fs, path, logs, db.options.paranoid_checks,
                      max([state.last_seq] + [r.info.max_seq for r in refs]))
    levels = [[] for _ in range(MAX_LEVELS)]
    for r in refs:
        levels[r.level].append(r)
    vs.current = Version(levels, vs.store_filter)
    vs.next_file = vs.reserved = state.next_file
    vs.log_number = state.log_number
    vs.last_seq = seq
    db._seq = seq
    db._mem, db._imm, db._log = mem, None, None
    db._state = (mem, None, vs.current)
    return True


def _own(names):
    for name in names:
        m = OWN_RE.match(name)
        if m is not None:
            yield int(m.group(1)), m.group(2)


def refuse(path: str, what: str):
    """The error of a write (or anything that writes) on a read-only store."""
    return StoreReadOnly(f"{path}: the store is open read-only; {what} needs DB.open(path) (read_only=False)")
