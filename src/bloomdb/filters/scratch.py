"""Scratch memory for builders: large temporaries on transparent huge pages.

A static filter's builder touches a few arrays of ~10 bytes per key once each, in nearly random
order. From the system allocator every 4 KiB page of them costs a page fault on first touch and a
TLB entry after; an anonymous map advised ``MADV_HUGEPAGE`` (Linux; other systems ignore or lack
the advice) takes 2 MiB pages, so a 100 MB temporary faults ~50 times instead of ~25,000. At 10M
keys this took the fuse filters' counting pass from ~11 to ~7 ns/key (docs/benchmarks.md).

:func:`zeros` returns a zeroed array of any dtype; below :data:`MIN_MAPPED` bytes it is plain
``np.zeros`` (a map costs two system calls). The map is released when the last view of the array
goes away. Cost: the pages are zeroed by the kernel on first touch, never by a pass of ours.
"""

from __future__ import annotations

import mmap

import numpy as np

#: Smaller temporaries come from ``np.zeros`` (huge pages pay off from a few MiB).
MIN_MAPPED = 4 << 20

_HUGE = getattr(mmap, "MADV_HUGEPAGE", None)


def zeros(count: int, dtype) -> np.ndarray:
    """A zeroed, writable, C-contiguous array of ``count`` items of ``dtype``."""
    dt = np.dtype(dtype)
    nbytes = int(count) * dt.itemsize
    if nbytes < MIN_MAPPED or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.zeros(count, dt)
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if _HUGE is not None:
        try:
            mm.madvise(_HUGE)
        except OSError:  # the kernel has no transparent huge pages: 4 KiB pages, same contents
            pass
    return np.frombuffer(mm, dt, count)
