"""``bloomdb.lsm.repair(path)``: rebuild a store whose ``MANIFEST`` is lost or damaged, or whose
tables are damaged, from the files it has (LevelDB's ``RepairDB``).

Steps, under the store's process lock (a store open elsewhere is refused):

1. The manifest, if it still decodes, says which tables are live and which logs are still
   needed: only those are used (an obsolete table or log could bring back data a later
   deletion removed). Otherwise every table and log in the folder is used.
2. Each table is checked whole (footer, meta, index, every data block's CRC32C). A table that
   passes is kept as it is; one with damaged data blocks has its intact blocks written to a new
   table; one that cannot be opened at all is set aside.
3. Each log is replayed up to its first damaged record into a new table.
4. A new manifest lists every table at level 0 (a copy of the old manifest is set aside first;
   the store is never without one), then a full compaction merges them by sequence number, so
   the newest version of each key wins whatever level its table came from.

Nothing is deleted: every file that was replaced, could not be read, or was not used is moved to
``lost/`` inside the store, and :class:`RepairReport` says what was salvaged and what was set
aside. Running it again is safe. Cost: reading every table and log once, one full compaction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from ..errors import BloomDBError, CorruptionError, InvalidArgument
from . import identity, wal
from . import manifest as mf
from .compaction import tombstones
from .compaction.executor import table_path
from .db import DB
from .fs import RealFS
from .memtable import MemTable
from .options import Options
from .recovery import StoreLock
from .sstable import Table
from .sstable.builder import TableInfo, build_table_arrays
from .sstable.reader import concat_packed
from .version_set import OWN_RE

LOST = "lost"


@dataclass
class RepairReport:
    """What :func:`repair` did. ``tables``: numbers listed by the rebuilt manifest (before the
    final compaction); ``salvaged``: ``(file, entries kept, blocks lost)`` of damaged tables;
    ``logs``: ``(file, batches replayed)``; ``set_aside``: ``(file, why)`` moved to ``lost/``."""

    manifest: str = ""
    tables: list[int] = field(default_factory=list)
    salvaged: list[tuple[str, int, int]] = field(default_factory=list)
    logs: list[tuple[str, int]] = field(default_factory=list)
    set_aside: list[tuple[str, str]] = field(default_factory=list)
    entries: int = 0
    last_sequence: int = 0

    def __str__(self) -> str:
        lines = [f"manifest: {self.manifest}",
                 f"tables kept: {len(self.tables)} ({self.entries} entries), last sequence {self.last_sequence}"]
        lines += [f"salvaged {name}: {kept} entries kept, {bad} damaged blocks lost" for name, kept, bad in self.salvaged]
        lines += [f"replayed {name}: {n} batches" for name, n in self.logs]
        lines += [f"set aside {LOST}/{name}: {why}" for name, why in self.set_aside]
        return "\n".join(lines)


def repair(path, options: Options | None = None) -> RepairReport:
    """Rebuild the store at ``path`` (see the module docstring); returns what was done.
    Raises :class:`InvalidArgument` for a folder that is not a store, :class:`BloomDBError`
    when the store is open in another process."""
    path = os.fspath(path)
    opts = (options or Options()).validated()
    fs = opts.fs or RealFS()
    kind = identity.inspect(fs, path)
    if kind == identity.ABSENT:
        raise InvalidArgument(f"{path}: no store here to repair")
    lock = StoreLock(path)
    try:
        report = _rebuild(fs, path, opts, kind)
    finally:
        lock.release()
    with DB.open(path, replace(opts, background_compaction=False)) as db:
        db.compact_range()  # merge by sequence: level 0 holds tables from every level
    return report


class _Rebuild:
    """State of one repair: the report, the next file number, ``lost/``."""

    def __init__(self, fs, path: str, opts):
        self.fs, self.path, self.opts = fs, path, opts
        self.report = RepairReport()
        self.next = 1
        self.infos: list[TableInfo] = []

    def lost_path(self, name: str, why: str) -> str:
        """A free path for ``name`` in ``lost/`` (recorded in the report with ``why``)."""
        self.fs.makedirs(os.path.join(self.path, LOST))
        dst = os.path.join(self.path, LOST, name)
        n = 1
        while self.fs.exists(dst):  # an earlier repair set aside a file of that name
            dst = os.path.join(self.path, LOST, f"{name}.{n}")
            n += 1
        self.report.set_aside.append((os.path.basename(dst), why))
        return dst

    def set_aside(self, name: str, why: str) -> None:
        self.fs.rename(os.path.join(self.path, name), self.lost_path(name, why))

    def write(self, arrays, range_dels=()) -> TableInfo:
        """A new L0 table of ``arrays`` and the range tombstones ``range_dels`` (a table of only
        tombstones gets their stand-in entry, :func:`.compaction.tombstones.sentinel`)."""
        n = self.next
        self.next += 1
        o = self.opts
        if arrays[2].shape[0] == 0:
            arrays = tombstones.sentinel(range_dels)
        return build_table_arrays(self.fs, table_path(self.path, n), n, *arrays, o.filter_for(0, False),
                                  o.block_size, o.restart_interval, o.compression, partition_blocks=o.partition_blocks(),
                                  range_dels=tuple(range_dels))


def _rebuild(fs, path: str, opts, kind: str) -> RepairReport:
    r = _Rebuild(fs, path, opts)
    names = sorted(fs.listdir(path))
    own = {}
    for name in names:
        m = OWN_RE.match(name)
        if m is not None:
            own[name] = (int(m.group(1)), m.group(2))
    r.next = 1 + max([n for n, _ in own.values()], default=0)
    old = _old_manifest(fs, path, names, r)
    seq = old.last_seq if old is not None else 0
    live = None if old is None else {info.number for _, info in old.tables}
    for name, (n, suffix) in sorted(own.items(), key=lambda x: x[1]):
        if suffix == ".sst.tmp":
            r.set_aside(name, "an unfinished table")
        elif suffix == ".sst":
            if live is not None and n not in live:
                r.set_aside(name, "not listed by the manifest (an obsolete table)")
            else:
                _table(r, name, n)
        elif old is not None and n < old.log_number:
            r.set_aside(name, "a log the manifest no longer needed")
        else:
            seq = max(seq, _log(r, name))
    if old is not None:
        missing = sorted(live - {i.number for i in r.infos} - {n for n, s in own.values() if s == ".sst"})
        for n in missing:
            r.report.set_aside.append((f"{n:06d}.sst", "listed by the manifest but missing"))
    seq = max([seq] + [i.max_seq for i in r.infos])
    state = mf.ManifestState(r.next, seq, r.next, [(0, i) for i in r.infos])
    fs.write_atomic(os.path.join(path, "MANIFEST"), mf.encode(state))
    if kind == identity.LEGACY:
        identity.claim(fs, path)
    r.report.tables = [i.number for i in r.infos]
    r.report.entries = sum(i.entries for i in r.infos)
    r.report.last_sequence = seq
    return r.report


def _old_manifest(fs, path: str, names, r: _Rebuild):
    """The old manifest's state if it decodes (a copy goes to ``lost/`` either way)."""
    if "MANIFEST" not in names:
        r.report.manifest = "missing: rebuilt from every table and log"
        return None
    p = os.path.join(path, "MANIFEST")
    data = bytes(fs.read_all(p))
    fs.write_atomic(r.lost_path("MANIFEST", "a copy of the manifest before the repair"), data)
    try:
        state = mf.decode(data, p)
    except CorruptionError as e:
        r.report.manifest = f"damaged ({e}): rebuilt from every table and log"
        return None
    r.report.manifest = "readable: rebuilt from the tables and logs it names"
    r.next = max(r.next, state.next_file)
    return state


def _table(r: _Rebuild, name: str, n: int) -> None:
    """Keep table ``name`` if it is whole, salvage its intact blocks if not, else set it aside."""
    try:
        t = Table(r.fs, os.path.join(r.path, name), n)
    except (CorruptionError, OSError) as e:
        r.set_aside(name, f"cannot be opened: {e}")
        return
    try:
        t.decode_arrays()
        m = t.meta
        r.infos.append(TableInfo(n, t.file_size, m.entries, m.min_key, m.max_key, m.min_seq, m.max_seq))
        return
    except CorruptionError:
        pass
    good, bad = [], 0
    for i in range(t.num_blocks()):
        try:
            good.append(t.decode_arrays(i, i))
        except CorruptionError:
            bad += 1
    kept = sum(len(p[2]) for p in good)
    if kept or t.meta.range_dels:
        r.infos.append(r.write(concat_packed(good) if good else MemTable().table_arrays(), t.meta.range_dels))
    r.report.salvaged.append((name, kept, bad))
    r.set_aside(name, f"{bad} damaged data blocks (intact entries salvaged)")


def _log(r: _Rebuild, name: str) -> int:
    """Replay log ``name`` up to its first damage into a new table; returns its last sequence."""
    p = os.path.join(r.path, name)
    data = r.fs.read_all(p)
    if not wal.is_log(data):
        r.set_aside(name, "not a log of this store")
        return 0
    mem, seq, batches, damage = MemTable(), 0, 0, []
    try:
        for first, ops in wal.read_log(data, p, False, damage):
            batches += 1
            mem.apply(first, ops, True)  # range deletes too
            seq = max(seq, first + len(ops) - 1)
    except (CorruptionError, BloomDBError) as e:  # a malformed batch inside an intact record
        damage.append(str(e))
    if len(mem):
        r.infos.append(r.write(mem.table_arrays(), mem.rdels))
    r.report.logs.append((name, batches))
    r.set_aside(name, "replayed into a table" + (" up to its first damaged record" if damage else ""))
    return seq
