"""Small kernels of the probe scan (no Python objects, no GIL)."""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def every_row(positions, n):
    """Whether ``positions`` is ``0, 1, ..., n - 1`` (a chunk whose rows all matched: its values
    are then read in order, no gather). One pass, stopping at the first gap."""
    if positions.shape[0] != n:
        return False
    for i in range(n):
        if positions[i] != i:
            return False
    return True
