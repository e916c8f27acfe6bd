"""Progress bars for long commands: what is done, the rate and how long is left (tqdm, on stderr).

A bar shows only on a terminal (``disable=None``): piped or captured output stays clean. Every
bench function that runs for long takes an optional bar and calls ``update``; none needs one.
"""

from __future__ import annotations

import sys
from typing import Any


def bar(total: int, desc: str, unit: str = "step", enabled: bool = True, unit_scale: bool = False) -> Any:
    """A tqdm bar of ``total`` steps on stderr, shown when stderr is a terminal and ``enabled``.
    ``update(n)``, ``write(text)`` and ``close()`` are safe to call either way."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, leave=False, mininterval=0.5,
                file=sys.stderr, disable=None if enabled else True, dynamic_ncols=True)
