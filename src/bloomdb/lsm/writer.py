"""The store's write path, what a writer pays per call: :class:`WritePath` (``put``, ``delete``,
``delete_range``, ``write``, ``write_batch``), mixed into :class:`~.db.DB`.

Every write takes the store's lock once (LevelDB's writer takes its mutex once too), appends one
checksummed WAL record (a copy into the mapped log, :mod:`.logfile`) and inserts into the
memtable; ``sync=True`` fsyncs the log before the call returns. Durability is the log's: a write
that returned is in the OS page cache and survives the process being killed.

``put``'s fast path (the common write) checks ONE number: ``mem.bytes >= _mem_limit``. Every
condition that needs the general path is folded into that limit, which is 0 (so the test always
fails over to :meth:`WritePath._write_one`) while the store is read-only, closing, stopped by an
I/O error, or a snapshot is live (the memtable must keep the versions a put hides); else it is
the memtable's size, so a full memtable takes the general path too (it waits for room there).
The flags are :class:`_Gated` attributes: assigning one (always under the store's lock)
recomputes the limit, so no writer can miss a change; so do a memtable switch and a write of a
range tombstone (the fast path records no sequence in the memtable, :mod:`.memtable`). Cost of the
fast path: the call, the lock, one ``struct`` pack, one CRC32C call, one mapped-memory copy and one
dict insert of the value itself (~1.2-1.5 us); it allocates no object the garbage collector
tracks.

``put`` takes the lock with ``acquire()``/``release()`` inside ``try``/``finally`` instead of a
``with`` block: ``with`` calls the RLock's ``__exit__(None, None, None)`` through the generic
argument parser and costs ~0.08 us more per put (measured). The ``acquire()`` is inside the
``try`` so that an exception raised by a signal handler just after it returns (the interpreter
runs them after a C call) still releases the lock; if the handler interrupts an ``acquire()``
still waiting for another thread, the ``release()`` raises ``RuntimeError`` (chained to that
exception) and the lock stays as it was.
"""

from __future__ import annotations

from ..checksum import crc32c
from ..errors import BloomDBError, InvalidArgument, StoreClosed
from . import batch as wb, opening, readonly, wal
from .batch import BoundBatch, WriteBatch, key_bytes as _key, value_bytes as _value
from .memtable import ENTRY_OVERHEAD

OVERFLOW = 2  # a memtable may grow to this many times ``memtable_bytes`` while the previous one is flushed (:meth:`WritePath._room`)
_BODIES = wal.BODIES
_U32 = wal._U32


class _Gated:
    """A store attribute (``_bg_error``, ``_closing``, ``_keep_old``) whose every assignment
    recomputes the put fast path's limit (:meth:`WritePath._regate`). Read: one descriptor call."""

    def __set_name__(self, owner, name: str) -> None:
        self.slot = "_gated" + name

    def __get__(self, db, owner=None):
        if db is None:
            return self
        return getattr(db, self.slot, None)

    def __set__(self, db, value) -> None:
        setattr(db, self.slot, value)  # not db.__dict__: that would give up the instance's fast attribute layout
        db._regate()


class WritePath:
    """Writes of :class:`~.db.DB` (see the module's docstring). Relies on the store's ``_lock``,
    ``_mem``, ``_imm``, ``_bg``, ``_vs``, ``_seq``, ``_log``, ``options``, ``read_only``, ``path``
    and ``_make_room``."""

    _bg_error = _Gated()  # an I/O failure stopped writes (reads keep working)
    _closing = _Gated()  # close() has begun
    _keep_old = _Gated()  # a snapshot is live: memtables keep the versions they replace

    def _regate(self) -> None:
        """Recompute ``_mem_limit`` from the flags and the memtable (callers hold the store's
        lock, or own the store alone: ``__init__``; called again after every change of ``_mem``
        and after a write of a range tombstone). A memtable holding a range tombstone takes the
        general path too: the fast path records no sequence (:mod:`.memtable`); so does one
        holding batch puts not yet in its dict (``MemTable.defer``: the general path inserts them
        first, so a later put is not overwritten by an older batch's)."""
        mem = getattr(self, "_mem", None)
        blocked = (self.read_only or self._bg_error is not None or self._closing or self._keep_old
                   or (mem is not None and (mem.rdels or mem.pending_keys)))
        self._mem_limit = 0 if blocked else self._room()
        # the get fast path's gate (``DB.get``): ``(memtable's dict, version)`` of the current state when a
        # plain get needs nothing but the memtable's dict and the version's tables -- no immutable
        # memtable, no batch puts kept aside, no range tombstone anywhere, not closing -- else None.
        # Set only here, under the lock, from ``_state``: so callers run this after every change of
        # ``_state``; a write that keeps batch puts aside clears it itself (``write``).
        st = getattr(self, "_state", None)
        quick = None
        if type(st) is tuple and not self._closing:
            m, imm, ver = st
            if imm is None and not m.pending_keys and not m.rdels and not ver.range_dels:
                quick = (m.latest, ver)  # a memtable's dict is never replaced
        self._quick = self._gate[0] = quick  # the cell: the store's builtin get reads it (:mod:`.quickget`)

    def _room(self) -> int:
        """The memtable's size limit now (caller holds the lock): ``memtable_bytes``, or
        ``OVERFLOW`` times that while the previous memtable is being flushed by the flush thread
        and L0 is below ``level0_stop`` -- the writer goes on filling the memtable instead of
        waiting for that flush (RocksDB's writer waits only when ``max_write_buffer_number``
        memtables are full; LevelDB's waits at once). Memory: up to ``OVERFLOW + 1`` memtables'
        bytes instead of 2. The put fast path's limit follows it (:meth:`_regate`, called again by each
        switch and install)."""
        o = self.options
        if (getattr(self, "_imm", None) is not None and self._bg.thread is not None
                and len(self._vs.current.levels[0]) < o.level0_stop):
            return OVERFLOW * o.memtable_bytes
        return o.memtable_bytes

    def _fold(self, mem, imm) -> None:
        """Insert the batch puts ``mem`` and ``imm`` keep aside (``MemTable.defer``) into their
        dicts, under the store's lock (no writer adds to them meanwhile), and open the put fast
        path again: what a reader calls first when it finds any (``DB.get``, ``DB.multi_get``). A
        reader pays the dict inserts a batch writer did not make, once after a run of batches; a
        fill that reads nothing never does."""
        with self._lock:
            mem.fold()
            if imm is not None:
                imm.fold()
            self._regate()

    def _check_writable(self) -> None:
        if self._closed or self._closing:
            raise StoreClosed(f"{self.path}: the store is closed")
        if self.read_only:
            raise readonly.refuse(self.path, "writing")
        if self._bg_error is not None:
            raise BloomDBError(f"{self.path}: the store stopped after an I/O error: {self._bg_error!r}")

    def put(self, key, value, sync: bool = False) -> None:
        """Set ``key`` to ``value``. ``sync=True``: the WAL is fsynced before returning.
        Cost: one WAL append (a copy into the mapped log, :mod:`.logfile`; a ``write`` syscall on
        other file systems) and one memtable insert, both inlined here (the fast path, see the
        module's docstring; tests/test_lsm_put_paths.py pins it to the general path)."""
        if type(key) is not bytes:
            key = _key(key)
        if type(value) is not bytes:
            value = _value(value)
        lock = self._lock
        try:  # the lock taken and released by hand: half the cost of ``with`` (see the module's docstring)
            lock.acquire()
            mem = self._mem
            if sync or mem.bytes >= self._mem_limit:
                return self._write_one(key, value, sync)
            seq = self._seq + 1
            kl, vl = len(key), len(value)  # wal.encode_put, inlined
            st = _BODIES.get((kl, vl))
            body = wal.put_body(seq, key, value) if st is None else st.pack(21 + kl + vl, seq, 1, 1, kl, key, vl, value)
            rec = _U32.pack(crc32c(body)) + body
            try:
                self._log.append(rec)
            except ValueError:  # a mapped log's reserved space is full: add() reserves more
                self._append(rec, False)
            except BaseException as e:
                self._append_failed(e)
            self._seq = seq
            mem.latest[key] = value  # MemTable.add without keep_old and sequence, inlined (:mod:`.memtable`)
            mem.bytes += kl + vl + ENTRY_OVERHEAD
        finally:
            lock.release()

    def _write_one(self, key: bytes, value, sync: bool) -> None:
        """One put (``value`` bytes) or delete (``None``), every check made: the general path
        (called with the lock held)."""
        self._check_writable()
        self._make_room()
        seq = self._seq + 1
        self._append(wal.encode_put(seq, key, value), sync)
        self._seq = seq
        mem = self._mem
        folded = bool(mem.pending_keys)  # add() inserts the pending batch puts first
        mem.add(seq, key, value, self._keep_old)
        if folded:
            self._regate()  # the put fast path opens again

    def delete(self, key, sync: bool = False) -> None:
        """Remove ``key`` (writes a tombstone). Deleting a missing key is not an error."""
        key = _key(key)
        with self._lock:
            self._write_one(key, None, sync)

    def delete_range(self, start, end, sync: bool = False) -> None:
        """Remove every key in ``[start, end)`` (RocksDB's ``DeleteRange``): one range tombstone
        (:mod:`.rangedel`). ``end < start`` raises InvalidArgument; ``start == end`` is a no-op."""
        self.write(WriteBatch().delete_range(start, end), sync)

    def write(self, batch: WriteBatch, sync: bool = False) -> None:
        """Apply ``batch`` atomically: one WAL record, consecutive sequence numbers."""
        if not isinstance(batch, WriteBatch):
            raise InvalidArgument(f"write() takes a WriteBatch, not {type(batch).__name__}")
        ops = batch.ops
        if not ops:
            return
        with self._lock:
            self._check_writable()
            self._make_room()
            first = self._seq + 1
            rec, puts = wb.record(batch, first)
            self._append(rec, sync)
            wb.apply(self._mem, first, ops, puts, self._keep_old)
            self._seq = first + len(ops) - 1
            if not batch._puts_only:  # it may hold a range tombstone: see _regate
                self._regate()
            elif self._mem.pending_keys:  # batch puts kept aside (MemTable.defer): puts take the general path
                self._mem_limit = 0
                self._quick = self._gate[0] = None  # and gets fold them first (DB.get's full path)

    def write_batch(self, *, transaction: bool = False, sync: bool = False) -> BoundBatch:
        """plyvel's ``db.write_batch()``: a :class:`WriteBatch` bound to this store, applied
        atomically by its ``write()`` (which keeps its operations) or at the end of a ``with``
        block (then cleared). ``transaction=True``: a block left by an exception writes nothing;
        else the batch is written anyway (plyvel's rule)."""
        return BoundBatch(self, transaction, sync)

    def _append(self, record, sync: bool) -> None:
        try:
            self._log.add(record, sync)
        except BaseException as e:
            self._append_failed(e)

    def _append_failed(self, e: BaseException):
        """A log append failed: the log's tail is unknown now, nothing may be appended after it."""
        self._bg_error = e
        raise opening.as_store_error(self.path, e, opening=False)
