"""Arrays on recycled memory: large result buffers that do not pay a page fault per 4 KiB each call.

A join that returns rows writes every result column once into fresh memory. Memory new to the
process costs a page fault per 4 KiB page on first touch (~1.5 us each on the 2-core test
machine: ~190 ms for the 480 MB of a 20M-row, three-column result, as much as the join's own
work), and the C allocator hands large freed blocks back to the system, so, depending on what ran
before in the process, a repeated join paid that again on every call.

:func:`empty` carves arrays from slabs (anonymous memory maps of :data:`SLAB_BYTES`, one map per
array above half of that) that this module keeps once every array carved from them is gone: such a
slab goes to a free list, up to :data:`retain_bytes` in total (the oldest beyond that are
unmapped), and the next call writes into pages already mapped. The pool is shared by every thread
(a lock around a bump pointer); an array's death is noticed by the ``__del__`` of the small
object numpy keeps as its base (what every view of the array, numpy's or Arrow's, keeps alive),
which only queues the slab (no lock is taken there), and the queue is drained by the next
:func:`empty`.

Contract: like ``np.empty`` (contents undefined, writable, C-contiguous, owned by nobody else while
it lives). Cost: small requests (below :data:`MIN_BYTES`) are ``np.empty``; others one lock and a
few object allocations; memory held: the live arrays' slabs (an array kept alive keeps its whole
slab: at most ``SLAB_BYTES`` per live array) plus up to :data:`retain_bytes` of free slabs.
:func:`release` unmaps the free slabs; :func:`set_retain_bytes` changes the cap (0: keep none).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
from collections import deque

import numpy as np

#: Requests below this many bytes are plain ``np.empty`` (the allocator reuses small blocks itself).
MIN_BYTES = 64 << 10
#: Size of a shared slab; a request above half of it gets a map of its own (rounded to 1 MiB).
SLAB_BYTES = 8 << 20
_ALIGN = 64


def _default_retain() -> int:
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 8 << 30
    return int(min(1 << 30, phys // 8))


#: Bytes of free slabs kept for reuse (default: 1 GiB or an eighth of physical memory, the smaller).
retain_bytes = _default_retain()


class _Slab:
    __slots__ = ("mm", "anchor", "address", "size", "used", "live")

    def __init__(self, size: int):
        self.mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.anchor = ctypes.c_char.from_buffer(self.mm)  # pins the map while the slab is ours
        self.address = ctypes.addressof(self.anchor)
        self.size, self.used, self.live = size, 0, 0


class _Lease:
    """Owns one array's bytes: numpy makes the array from :attr:`__array_interface__` with this
    object as its base, so it lives as long as the array or any view of it (numpy's or Arrow's)."""

    __slots__ = ("__array_interface__", "slab")

    def __del__(self):
        dead = _dead  # None once the interpreter tears the module down
        if dead is not None:
            dead.append(self.slab)  # deque.append is atomic; __del__ may run inside any code, even under _lock


_lock = threading.Lock()
_free: deque[_Slab] = deque()  # free slabs, oldest first
_free_bytes = 0
_current: _Slab | None = None  # the shared slab being carved
_dead: deque[_Slab] = deque()  # one entry per array gone (appended by _Lease.__del__, drained under the lock)


def _drain() -> None:
    """Count the arrays gone since the last call; free slabs with none left (``_lock`` held)."""
    while True:
        try:
            slab = _dead.popleft()
        except IndexError:
            return
        slab.live -= 1
        if slab.live == 0:
            if slab is _current:
                slab.used = 0  # carve it again from the start
            else:
                _put_free(slab)


def _put_free(slab: _Slab) -> None:
    global _free_bytes
    slab.used = 0
    _free.append(slab)
    _free_bytes += slab.size
    _trim()


def _trim() -> None:
    """Unmap the oldest free slabs until at most ``retain_bytes`` are kept (``_lock`` held)."""
    global _free_bytes
    while _free_bytes > retain_bytes and _free:
        old = _free.popleft()
        _free_bytes -= old.size
        _close(old)


def _close(slab: _Slab) -> None:
    slab.anchor = None
    try:
        slab.mm.close()
    except BufferError:  # cannot happen (no live array); leave the map to the garbage collector
        pass


def _take_free(size: int) -> _Slab | None:
    """A free slab of exactly ``size`` bytes (newest first: its pages are most likely mapped)."""
    global _free_bytes
    for i in range(len(_free) - 1, -1, -1):
        if _free[i].size == size:
            slab = _free[i]
            del _free[i]
            _free_bytes -= size
            return slab
    return None


def empty(count: int, dtype) -> np.ndarray:
    """A writable, C-contiguous, uninitialised array of ``count`` items of ``dtype``."""
    global _current
    dt = np.dtype(dtype)
    nbytes = int(count) * dt.itemsize
    if nbytes < MIN_BYTES or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(count, dt)
    need = -(-nbytes // _ALIGN) * _ALIGN
    with _lock:
        _drain()
        if need > SLAB_BYTES // 2:
            size = -(-need // (1 << 20)) << 20
            slab = _take_free(size) or _Slab(size)
            off = 0
            slab.used = size
        else:
            slab = _current
            if slab is None or slab.used + need > slab.size:
                if slab is not None and slab.live == 0:
                    _put_free(slab)
                slab = _current = _take_free(SLAB_BYTES) or _Slab(SLAB_BYTES)
            off = slab.used
            slab.used += need
        slab.live += 1
    lease = _Lease()
    lease.slab = slab
    lease.__array_interface__ = {"data": (slab.address + off, False), "shape": (int(count),),
                                 "typestr": dt.str, "version": 3}
    return np.asarray(lease)


def release() -> int:
    """Unmap every free slab now; returns the bytes given back."""
    global _free_bytes
    with _lock:
        _drain()
        gone = _free_bytes
        while _free:
            _close(_free.popleft())
        _free_bytes = 0
    return gone


def set_retain_bytes(n: int) -> None:
    """Keep at most ``n`` bytes of free slabs (0: unmap each slab as soon as it is free)."""
    global retain_bytes
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        from .errors import InvalidArgument

        raise InvalidArgument(f"retain bytes must be a non-negative integer, got {n!r}")
    with _lock:
        retain_bytes = n
        _drain()
        _trim()


def stats() -> dict:
    """``{"free_bytes", "free_slabs"}`` of the pool (after counting the arrays gone)."""
    with _lock:
        _drain()
        return {"free_bytes": _free_bytes, "free_slabs": len(_free)}
