"""The store's background work: when to flush and compact, and the threads that do it (LevelDB's
``MaybeScheduleCompaction`` / ``BackgroundCall`` half of ``db_impl``).

:class:`Background` owns the scheduling -- two threads (or inline work in the writer with
``Options(background_compaction=False)``): a *flush* thread that writes each immutable memtable
to a table as soon as it exists (in L0, or as deep as L2 when its keys overlap nothing there:
:meth:`Background.flush_level`), and a *compaction* thread that runs the policy's tasks
(:func:`.compaction.policy.pick`, its round-robin compact pointers, manual ``compact_range``
tasks) through :func:`.compaction.executor.run`. A flush never queues behind a compaction (a
compaction of L0 and L1 takes many memtables' worth of time; LevelDB gets the same by checking for
an immutable memtable between the keys of a compaction): a writer that filled its memtable waits
for the previous flush only, not for the compaction running beside it. Between flushes the flush
thread keeps the store filter (:mod:`.store_filter`): a rebuild or the scan of uncovered tables,
one bounded step at a time, so no flush runs during a step. The two may run at once:
a flush only adds an L0 table newer than anything a compaction reads, and each edit is installed
by its store (``DB._install``: the manifest through the version set, then one state swap, under
the store's lock) against the version current then. A failure in either stops the store's writes
(``DB._fail``). Both wait on the store's condition variable: writers wait on it for room, the
threads for work.

The threads start on the first wake-up that may have work for them (LevelDB's ``Env::Schedule``
starts its thread the same way): a store opened with nothing to flush or compact runs no thread
until a write fills a memtable, a snapshot's release is followed by a wake-up, or
``wait_for_compactions`` asks. Starting a thread waits until the OS runs it -- tens of
milliseconds on a loaded machine -- which a store opened to be read never pays.

Cost: ``pick`` is O(tables) per wake-up; a task's cost is the executor's (numba kernels that
release the GIL for the bulk of the work).
"""

from __future__ import annotations

import os
import threading

from .compaction import executor, policy, seek
from .options import MAX_LEVELS
from .version import TableRef


MOVE_WAIT = 0.05  # seconds a flush waits for a trivial move to end (:meth:`Background.flush_level`)


class TaskContext:
    """What the compaction executor needs from the store (files, options, file numbers)."""

    def __init__(self, db, smallest_snapshot: int):
        self.fs = db._fs
        self.folder = db.path
        self.options = db.options
        self.cache = db._cache
        self.smallest_snapshot = smallest_snapshot
        self.new_file_number = db._new_file_number
        self.store_filter = db._vs.store_filter  # a flush's keys go into it (:func:`executor.write_table`)


class WakingCondition(threading.Condition):
    """The store's condition variable (over its lock): every notify first starts the background
    threads if they have not started (:meth:`Background.ensure_started`), so whatever wakes the
    thread for work finds it running."""

    def __init__(self, lock, bg: "Background"):
        super().__init__(lock)
        self._bg = bg

    def notify(self, n: int = 1) -> None:
        self._bg.ensure_started()
        super().notify(n)

    def notify_all(self) -> None:
        self._bg.ensure_started()
        super().notify_all()


class Background:
    """Flushes and compactions of ``db`` (a :class:`~.db.DB`); ``threaded``: in two daemon
    threads, started on the first wake-up (see the module's docstring). :attr:`cond` is the store's
    condition variable over ``db._lock``."""

    def __init__(self, db, threaded: bool):
        self.db = db
        self.compact_pointers: dict[int, bytes] = {}
        self._releases: list = []  # futures of replaced versions dropped in the release thread
        self._releases_pid = os.getpid()  # the process that queued them
        self._shapes: dict = {}  # table number -> its shape (:meth:`_shapes_of`)
        self.seek_due: tuple[int, int] | None = None  # (level, table number) whose seek budget ran out
        self.compaction_lock = threading.Lock()  # one compaction at a time (thread or manual)
        self.thread = None  # the compaction thread (None: inline work)
        self.flusher = None
        self.started = False
        self.running = None  # the compaction task in flight (set under the compaction lock)
        self.builder = None  # a read-only store's store-filter thread (:meth:`start_read_only`)
        if threaded:
            self.thread = threading.Thread(target=self._compact_loop, name=f"bloomdb-lsm:{db.path}", daemon=True)
            self.flusher = threading.Thread(target=self._flush_loop, name=f"bloomdb-lsm-flush:{db.path}", daemon=True)
            self.cond = WakingCondition(db._lock, self)
        else:
            self.cond = threading.Condition(db._lock)

    def start(self) -> None:
        """The opened store runs: inline, the compactions it needs now; threaded, the threads
        start now only if a flush or compaction is due (else on the first wake-up); read-only,
        :meth:`start_read_only`."""
        if self.db.read_only:
            return self.start_read_only()
        sf = self.db._vs.store_filter
        if self.thread is None:
            self.compact_inline()
            return
        with self.db._lock:
            if (self.db._imm is not None or self.db._switch_due is not None or self.pick() is not None
                    or (sf is not None and sf.due)):
                self.db._cond.notify_all()

    def start_read_only(self) -> None:
        """A read-only store (:mod:`.readonly`): when its store filter is due (no saved file covers
        its tables and they hold ``MIN_ENTRIES`` entries), a daemon thread builds it in memory, one
        bounded step at a time, until it covers the version or the store closes."""
        sf = self.db._vs.store_filter
        if sf is not None and sf.due:
            self.builder = threading.Thread(target=self._build_loop, name=f"bloomdb-lsm-filter:{self.db.path}", daemon=True)
            self.builder.start()

    def _build_loop(self) -> None:
        db = self.db
        sf = db._vs.store_filter
        while True:
            with db._lock:
                if db._closing or not sf.due:
                    return
            sf.step(db)  # never raises (a failed job is retried, a few times)

    def ensure_started(self) -> None:
        """Start the threads unless they started already or the store is closing (the caller holds
        ``db._lock``, so two callers never both start it)."""
        if not self.started and self.thread is not None and not self.db._closing:
            self.started = True
            self.flusher.start()
            self.thread.start()

    def stop(self) -> None:
        """Wait for the threads to end (the caller set ``db._closing`` and notified): the flush
        thread writes a pending immutable memtable first; the compaction thread stops after its
        current task. Threads that never started have nothing to do."""
        if self.started:
            self.flusher.join()
            self.thread.join()
        if self.builder is not None:
            self.builder.join()
        self.wait_released()

    # -- scheduling ---------------------------------------------------------------------------
    def pick(self):
        """The policy's next task for the current version, or None (caller holds the lock)."""
        db = self.db
        shape = self._shapes_of(db._version.levels)
        o = db.options
        smallest = min(db._snapshots) if db._snapshots else db._seq
        task = policy.pick(shape, self.compact_pointers, o.level0_trigger, o.level1_bytes, o.level_ratio, smallest)
        if task is None and self.seek_due is not None:  # LevelDB: a size compaction first, then a seek one
            task = seek.task(shape, *self.seek_due)
            if task is None:
                self.seek_due = None
        return task

    def _shapes_of(self, levels) -> list[list[policy.TableShape]]:
        """What the policy sees of each table of ``levels``, each table's shape made once
        (:attr:`_shapes`, by table number: a number names one table file of a store for ever,
        and a trivial move keeps the shape). The cache holds plain tuples of plain values, which
        the collector stops tracking (a ``TableShape``, a tuple subclass, it tracks for ever), so
        it adds no long-lived tracked object per table; each pick wraps them anew (~0.3 us each). ``pick`` runs on every wake-up of the
        compaction thread -- each memtable switch, flush and install -- and making 300 shapes
        anew took ~3 ms of the interpreter's time, taken from the writer, at 5M keys."""
        cache = self._shapes
        make = policy.TableShape._make
        out = []
        n = 0
        for lvl in levels:
            row = []
            for r in lvl:
                t = cache.get(r.info.number)
                if t is None:
                    t = cache[r.info.number] = tuple(_shape(r))
                row.append(make(t))
            out.append(row)
            n += len(row)
        if len(cache) > 2 * n + 64:  # forget deleted tables (amortised O(1) per pick)
            live = {s.number for row in out for s in row}
            for k in [k for k in cache if k not in live]:
                del cache[k]
        return out

    def flush_level(self, mem, arrays, held: list) -> int:
        """The level for the flush of ``mem`` (its sorted entries ``arrays``): LevelDB's
        ``PickLevelForMemTableOutput`` (:func:`.compaction.policy.flush_level`) -- a table whose
        keys overlap nothing in L0..L2 goes straight to L2 (sequential fills; the deepest level is
        ``Options.max_flush_level``, 0: always L0), with no trivial
        move, manifest write or version per level after it. Deeper than L0 only while holding
        the compaction lock, taken here without waiting and appended to ``held`` (the caller
        releases it after the install): an L0 -> L1 compaction running beside the flush could
        write a table spanning the new one's range into L1, so none may run until the table is
        in the version. When a compaction runs (the lock is busy), the keys overlap L0, or the
        memtable holds range tombstones (their extent is not the keys'), L0 as before -- but a
        trivial move in flight (L2 -> L3 once L2 is full, in a sequential fill) is waited for up
        to ``MOVE_WAIT`` seconds, else each flush beside one would land in L0 and be moved twice.
        Cost: O(tables) under the store's lock, twice at most."""
        kd, ko = arrays[0], arrays[1]
        top = self.db.options.max_flush_level
        if top == 0 or mem.rdels or ko.shape[0] < 2:
            return 0
        lo, hi = kd[ko[0] : ko[1]].tobytes(), kd[ko[-2] : ko[-1]].tobytes()
        db = self.db
        with db._lock:
            if any(_overlaps(r, lo, hi) for r in db._version.levels[0]):  # stays in L0: no lock needed
                return 0
        lock = self.compaction_lock
        if not lock.acquire(blocking=False):
            task = self.running
            # a trivial move (one manifest write) is waited for, briefly, by the flush thread only
            # (an inline flush runs in a writer holding the store's lock: it never waits)
            if task is None or not task.trivial_move or threading.current_thread() is not self.flusher:
                return 0
            if not lock.acquire(timeout=MOVE_WAIT):
                return 0
        held.append(lock)
        with db._lock:
            return policy.flush_level(self._shapes_of(db._version.levels), lo, hi, 10 * db.options.table_bytes, top)

    def seek_exhausted(self, ref) -> None:
        """A read used up table ``ref``'s seek budget (:mod:`.probe.seeks`): compact it next when
        no size compaction is due (one such table at a time, as LevelDB's ``file_to_compact_``).
        Inline stores run it with the next write's compactions.

        A read never waits for the store's lock here: when another thread holds it (a writer
        waiting for room, an install, a close), the report is dropped; the kernel reports a spent
        table again every 64 charges (:mod:`.probe.seeks`), so a table passed over now is
        scheduled by a later read."""
        db = self.db
        if not db._lock.acquire(blocking=False):
            return
        try:
            if self.seek_due is None and not db._closing:
                self.seek_due = (ref.level, ref.number)
                db._cond.notify_all()
        finally:
            db._lock.release()

    def _flush_loop(self) -> None:
        db = self.db
        sf = db._vs.store_filter
        while True:
            with db._lock:
                while (not db._closing and db._bg_error is None and db._imm is None and db._switch_due is None
                       and not (sf is not None and sf.due)):
                    db._cond.wait()
                if db._bg_error is None and db._imm is None and db._switch_due is not None:
                    # a reopen's big memtable (:func:`.recovery._resume`): switched out here, then
                    # flushed -- at close too, as the immutable memtable it stands for would be
                    if db._vs.writing and db._vs.needs_reservation():  # as DB._make_room: the switch
                        db._cond.wait()  # never waits inside (a writer could switch meanwhile)
                        continue
                    due, db._switch_due = db._switch_due, None
                    if due is db._mem and not self._guard(db._switch_memtable):
                        return
                    continue
                upkeep = db._imm is None and db._bg_error is None and not db._closing and sf is not None and sf.due
                if not upkeep and (db._bg_error is not None or db._imm is None):  # an error, or closing with nothing to flush
                    db._cond.notify_all()
                    return
            if upkeep:  # the store filter's maintenance, a bounded step: a flush due meanwhile goes first
                sf.step(db)
                continue
            if not self._guard(db._flush_imm):
                return

    def _compact_loop(self) -> None:
        db = self.db
        while True:
            with db._lock:
                while not db._closing and db._bg_error is None and self.pick() is None:
                    db._cond.wait()
                if db._bg_error is not None or db._closing:
                    db._cond.notify_all()
                    return
            if not self._guard(self.compact_once):
                return

    def _guard(self, step) -> bool:
        """Run ``step``; on a failure record it for the writers (``False``: the thread ends)."""
        db = self.db
        try:
            step()
            return True
        except BaseException as e:  # noqa: BLE001 - reported to writers
            with db._lock:
                db._bg_error = e
                db._cond.notify_all()
            return False

    def compact_inline(self) -> None:
        """Run every compaction the policy asks for now, in the caller; then the store filter's
        maintenance, if due (:meth:`store_filter_inline`)."""
        while self.compact_once():
            pass
        self.store_filter_inline()

    def store_filter_inline(self) -> None:
        """Inline stores: every store-filter step due (:meth:`.store_filter.StoreFilter.run_all`),
        in the writer under the store's lock, as inline flushes run."""
        sf = self.db._vs.store_filter
        if sf is not None and sf.due:
            with self.db._lock:
                sf.run_all(self.db)

    def wait_idle(self) -> None:
        """Block until no flush, compaction or store-filter step is pending (threaded; inline work
        is never pending; a read-only store's store-filter build: :meth:`start_read_only`)."""
        db = self.db
        if self.builder is not None:
            self.builder.join()
        with db._lock:
            sf = db._vs.store_filter
            while self.thread is not None and db._bg_error is None and (db._imm is not None or db._switch_due is not None
                                                                            or self.pick() is not None
                                                                            or (sf is not None and sf.due)):
                db._cond.notify_all()  # work may have appeared without a wake-up (a snapshot released)
                db._cond.wait(0.05)

    # -- running tasks ------------------------------------------------------------------------
    def compact_once(self) -> bool:
        """Run the policy's next compaction, if any (serialised with other compactions)."""
        with self.compaction_lock:
            with self.db._lock:
                task = self.pick()
            if task is None:
                return False
            self.run_task(task)
            return True

    def compact_range(self, lo: bytes | None, hi: bytes | None) -> None:
        """Merge every table overlapping ``[lo, hi]`` down level by level until that range lives
        in one level (the caller flushed first)."""
        with self.compaction_lock:
            for level in range(MAX_LEVELS - 1):
                with self.db._lock:
                    v = self.db._version
                    deepest = v.deepest_nonempty()
                    if level >= deepest and not v.levels[level]:
                        break
                    task = _range_task(v, level, lo, hi, deepest)
                    del v  # the version the task replaces is dropped in the release thread (run_task)
                if task is not None:
                    self.run_task(task)
        with self.db._lock:
            self.db._cond.notify_all()

    def run_task(self, task) -> None:
        """Execute ``task`` (caller holds the compaction lock) and install its edit."""
        db = self.db
        with db._lock:
            version = db._version
            smallest = min(db._snapshots) if db._snapshots else db._seq
        self.running = task
        try:
            deleted, added, written = executor.run(task, version, TaskContext(db, smallest))
            db._stats["bytes_compacted"] += written
            db._stats["compactions"] += 1
            if task.level > 0:
                self.compact_pointers[task.level] = task.largest
            db._install(deleted, [TableRef(level, info, table) for level, info, table in added])
        except BaseException as e:
            db._fail(e)
            raise
        finally:
            self.running = None
        # the replaced version's tables are unmapped in the release thread, not here
        holder = [version]
        del version  # before the release thread empties the holder: its drop must be the last one
        self._releases = [f for f in self._releases if not f.done()]
        self._releases.append(executor.release_later(holder))
        self._releases_pid = os.getpid()

    def wait_released(self) -> None:
        """Wait until every version a compaction replaced was dropped by the release thread
        (:func:`.compaction.executor.release_later`; the store is closing: its files are
        unmapped before ``close`` returns, unless a reader still holds them). In a process forked
        after the releases were queued they never run (the child has no release thread of its
        parent's): they are forgotten."""
        if self._releases and self._releases_pid != os.getpid():
            self._releases.clear()
        while self._releases:
            self._releases.pop().result()


def _shape(r) -> policy.TableShape:
    """What the policy sees of a table (a ``TableRef``), its range tombstones' extent included."""
    t = r.table  # its entries, deletions and tombstones read at open: no meta block decoded
    rd = t.range_dels
    return policy.TableShape(r.number, r.info.file_size, r.info.min_key, r.info.max_key, t.entries, t.deletions,
                             len(rd), r.info.max_seq, min(t[0] for t in rd) if rd else None,
                             max(t[1] for t in rd) if rd else None)


def _overlaps(r, a: bytes | None, b: bytes | None) -> bool:
    return (b is None or r.info.min_key <= b) and (a is None or r.info.max_key >= a)


def _range_task(v, level: int, lo, hi, deepest: int):
    """The manual task moving ``level``'s tables overlapping ``[lo, hi]`` one level down, or
    None when there is nothing to move (or ``level`` is the deepest, below L0)."""
    ins = [r for r in v.levels[level] if _overlaps(r, lo, hi)]
    if not ins or (level == deepest and level > 0):
        return None
    a = min(r.info.min_key for r in ins)
    b = max(r.info.max_key for r in ins)
    below = [r for r in v.levels[level + 1] if _overlaps(r, a, b)]
    if below:
        a = min(a, min(r.info.min_key for r in below))
        b = max(b, max(r.info.max_key for r in below))
    bottom = not any(_overlaps(r, a, b) for n in range(level + 2, MAX_LEVELS) for r in v.levels[n])
    return policy.Task(level, tuple(r.number for r in ins), tuple(r.number for r in below), False, bottom, a, b)
