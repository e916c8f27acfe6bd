"""Python values (lists, object arrays) as one Arrow array, without losing what ``pa.array`` drops.

``pa.array`` infers ``timestamp[us]`` from pandas Timestamps and silently drops their
nanoseconds, so ``[pd.Timestamp("...00.000000123")]`` became a different instant: a join key that
matched the wrong row, a Parquet value looked up as absent. :func:`array_from_values` reads such
values as ``timestamp[ns]`` (the zone of the first aware one, as ``pa.array`` infers it).
Cost: one extra pass over the values when they hold pandas Timestamps.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def array_from_values(values: list) -> pa.Array:
    """``pa.array(values)``, with pandas Timestamps kept to the nanosecond. Raises what
    ``pa.array`` raises for values it cannot convert."""
    if any(hasattr(v, "nanosecond") for v in values):
        present = [v for v in values if v is not None and v == v]  # not None / NaT
        kind = pa.array(present[:1]).type if present else pa.timestamp("ns")
        if pa.types.is_timestamp(kind):
            return _nanoseconds(values, kind.tz)
    return pa.array(values)


def _nanoseconds(values: list, tz: str | None) -> pa.Array:
    ticks = [_ticks(v, tz) for v in values]
    return pa.array(ticks, pa.int64()).view(pa.timestamp("ns", tz))


def _ticks(v: Any, tz: str | None) -> int | None:
    if v is None or v != v:  # None, NaT
        return None
    if hasattr(v, "value") and hasattr(v, "nanosecond"):
        return int(v.value)  # ns since the epoch (UTC for an aware Timestamp)
    return int(pa.scalar(v, pa.timestamp("ns", tz)).value)
