"""Who may write a filter's payload at a given moment, and whether with atomic operations.

Every filter owns one :class:`WriteGate`. Two kinds of writer go through it:

* **shared** writers (the bit-setting Bloom families: standard, blocked, register, sbbf). A writer
  that finds the filter idle writes alone ("exclusive") with plain stores: no atomic costs it
  anything. Writers that arrive while another writes wait for that write to end, then run
  together ("shared"), each setting bits with an atomic OR; later writers join them until all have
  left. Bits only ever get set and OR commutes, so concurrent writers lose nothing and the bytes do
  not depend on how writes overlapped.
* **exclusive** writers (counting, cuckoo — multi-word updates — and every reader that needs a
  stable table, such as a snapshot or a query re-check of those families): one at a time, never
  together with any other writer.

Cost: one uncontended lock round trip per write call (well under a microsecond); nothing per key.
A writer that arrives during another's write waits for it once (the overlap is where atomics
start). A stream of shared writers that never pauses can delay an exclusive one.
"""

from __future__ import annotations

import threading


class WriteGate:
    """The per-filter writer gate (see the module docstring)."""

    __slots__ = ("_cond", "_exclusive", "_shared", "_waiting")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._exclusive = False  # one writer owns the payload, writing with plain stores
        self._shared = 0  # writers running together, each with atomic OR
        self._waiting = 0  # shared writers waiting for an exclusive write to end

    def enter_shared(self) -> bool:
        """Start a bit-setting write. Returns True when it must use atomic OR (others may write)."""
        with self._cond:
            if not self._exclusive and self._shared == 0 and self._waiting == 0:
                self._exclusive = True
                return False
            self._waiting += 1
            while self._exclusive:
                self._cond.wait()
            self._waiting -= 1
            self._shared += 1
            return True

    def enter_exclusive(self) -> bool:
        """Start a write (or a read that needs a stable payload) alone. Returns False (no atomics)."""
        with self._cond:
            while self._exclusive or self._shared:
                self._cond.wait()
            self._exclusive = True
            return False

    def leave(self, atomic: bool) -> None:
        """End a write started by :meth:`enter_shared` / :meth:`enter_exclusive` (pass its result)."""
        with self._cond:
            if atomic:
                self._shared -= 1
            else:
                self._exclusive = False
            self._cond.notify_all()

    def write(self, shared: bool, on_enter=None) -> "_Write":
        """``with gate.write(shared) as atomic:`` — :meth:`enter_shared` or :meth:`enter_exclusive`;
        ``on_enter()`` (if given) runs once admitted, before the body (a writable map marks its
        file there); if it raises, the write is left and nothing else runs."""
        return _Write(self, shared, on_enter)


class _Write:
    __slots__ = ("_gate", "_shared", "_atomic", "_on_enter")

    def __init__(self, gate: WriteGate, shared: bool, on_enter=None) -> None:
        self._gate = gate
        self._shared = shared
        self._on_enter = on_enter

    def __enter__(self) -> bool:
        self._atomic = self._gate.enter_shared() if self._shared else self._gate.enter_exclusive()
        if self._on_enter is not None:
            try:
                self._on_enter()
            except BaseException:
                self._gate.leave(self._atomic)
                raise
        return self._atomic

    def __exit__(self, *exc: object) -> None:
        self._gate.leave(self._atomic)
