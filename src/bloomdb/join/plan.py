"""Parsing what the caller asked for: join keys, output columns, aggregates and group-by keys."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgument

HOWS = ("inner", "left", "right", "full", "semi", "anti")
#: joins whose result holds build columns (semi / anti return probe rows only)
WITH_BUILD = ("inner", "left", "right", "full")
#: joins that emit build rows without a probe match (probe columns null there)
KEEPS_BUILD = ("right", "full")
#: joins that emit probe rows without a build match
KEEPS_PROBE = ("left", "full", "anti")
AGG_FUNCS = ("sum", "count", "min", "max", "avg")
_AGG_RE = re.compile(r"^\s*(\w+)\s*\(\s*([^()]*?)\s*\)\s*$")


@dataclass(frozen=True)
class OutColumn:
    side: str  # "probe" | "build"
    name: str  # column name on that side
    out: str  # name in the result
    fill: str | None = None  # build column filling this probe key where only the build side matched


@dataclass(frozen=True)
class Agg:
    func: str  # sum | count | min | max | avg
    column: str | None  # None for count(*)
    out: str
    side: str = "probe"  # the side ``column`` is read from
    fill: str | None = None  # build key filling this probe key on build-only rows (the joined key, as USING)


def _names(value: Any, name: str) -> list[str] | None:
    """Key column names from a string or a list of strings; None when ``value`` is None."""
    if value is None:
        return None
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(x, str) and x for x in value):
        return list(value)
    raise InvalidArgument(f"{name} must be a column name or a non-empty list of column names, got {value!r}")


def parse_on(on: Any, left_on: Any = None, right_on: Any = None) -> tuple[list[str], list[str]]:
    """``(probe key columns, build key columns)`` from pandas-style ``on`` / ``left_on`` + ``right_on``.

    ``on="k"`` names the key column of both sides; ``on=["a", "b"]`` a multi-column key, the same
    columns on both sides (a list is never a (probe, build) pair); ``left_on`` / ``right_on`` name
    the probe's and the build's key columns when they differ, lists of equal length.
    """
    keys = _names(on, "on")
    left, right = _names(left_on, "left_on"), _names(right_on, "right_on")
    if keys is not None:
        if left is not None or right is not None:
            raise InvalidArgument("give either on= or left_on= and right_on=, not both")
        return keys, list(keys)
    if left is None or right is None:
        raise InvalidArgument("name the join key: on='k', or both left_on= (probe) and right_on= (build)")
    if len(left) != len(right):
        raise InvalidArgument(f"left_on has {len(left)} columns and right_on {len(right)}; they pair up one to one")
    return left, right


def resolve(c: str, probe: pa.Schema, build: pa.Schema, how: str, what: str = "column") -> tuple[str, str]:
    """``(side, name)`` of a column reference: a name looked up on the probe side first, then the
    build side; ``"probe.x"`` / ``"build.x"`` pick a side. Build columns need a join that keeps them."""
    side, _, name = c.partition(".")
    if not (name and side in ("probe", "build")):
        if c in probe.names:
            side, name = "probe", c
        elif c in build.names:
            side, name = "build", c
        else:
            raise InvalidArgument(f"no {what} {c!r} on either side of the join")
    schema = probe if side == "probe" else build
    if name not in schema.names:
        raise InvalidArgument(f"no {what} {name!r} on the {side} side")
    if side == "build" and how not in WITH_BUILD:
        raise InvalidArgument(f"a {how} join returns probe rows only; {c!r} is a build column")
    return side, name


def _coalesced(pkeys: list[str] | None, bkeys: list[str] | None, how: str | None = None) -> set[str]:
    """The probe keys named alike on both sides (one joined column, as ``USING``); with ``how``,
    only where the join fills them from the build key (right and full joins), else empty."""
    if how is not None and how not in KEEPS_BUILD:
        return set()
    return {p for p, b in zip(pkeys or [], bkeys or []) if p == b}


def output_columns(columns: Any, how: str, probe: pa.Schema, build: pa.Schema, pkeys: list[str],
                   bkeys: list[str], suffix: str = "_right") -> list[OutColumn]:
    """Resolve ``columns`` (None = every probe column, plus the build side's non-key columns for
    joins that keep build columns; a build column named like a probe column gets ``suffix``, as in
    Polars' ``join(suffix="_right")``). A key named alike on both sides (``on="k"``) is one column: in
    right and full joins the probe key is filled from the build key where only the build side has
    the row (pandas' and DuckDB's ``USING`` coalescing). A key pair with different names
    (``left_on="k", right_on="kk"``) keeps both columns, as pandas' merge and DuckDB's ``SELECT *``
    do: ``k`` the probe's value (null on build-only rows), ``kk`` the build's."""
    same = _coalesced(pkeys, bkeys)
    fills = {p: p for p in same} if how in KEEPS_BUILD else {}
    if columns is None:
        out = [OutColumn("probe", n, n, fills.get(n)) for n in probe.names]
        if how in WITH_BUILD:
            taken = set(probe.names)
            for n in build.names:
                if n not in same:
                    out.append(OutColumn("build", n, f"{n}{suffix}" if n in taken else n))
        if len({o.out for o in out}) != len(out):
            raise InvalidArgument(f"result column names clash with suffix {suffix!r}; give another suffix or columns=")
        return out
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise InvalidArgument(f"columns must be a list of column names, got {columns!r}")
    if not columns:  # a table of no columns cannot say how many rows matched
        raise InvalidArgument("columns is empty; name at least one column (or count with aggregates=['count(*)'])")
    out = []
    for c in columns:
        side, name = resolve(c, probe, build, how)
        # "k" is the joined key (coalesced, as USING); "probe.k" is the probe row's own value (null
        # on build-only rows, as DuckDB's l.k)
        coalesced = side == "probe" and not c.startswith("probe.")
        out.append(OutColumn(side, name, c, fills.get(name) if coalesced else None))
    if len({o.out for o in out}) != len(out):
        raise InvalidArgument("output column names must be unique")
    return out


def parse_group_by(group_by: Any, how: str, probe: pa.Schema, build: pa.Schema, pkeys: list[str] | None = None,
                   bkeys: list[str] | None = None) -> list[OutColumn]:
    """Group-by columns of either side (names as in ``columns``: in right and full joins a key
    named alike on both sides is the joined key, filled from the build key on build-only rows,
    unless written ``"probe.k"``)."""
    names = _names(group_by, "group_by")
    fills = _coalesced(pkeys, bkeys, how)
    out = []
    for c in names:
        side, name = resolve(c, probe, build, how, "group-by column")
        coalesced = side == "probe" and name in fills and not c.startswith("probe.")
        out.append(OutColumn(side, name, c, name if coalesced else None))
    if len({o.out for o in out}) != len(out):
        raise InvalidArgument("group_by names a column twice")
    return out


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def orderable(t: pa.DataType) -> bool:
    """Whether ``min`` / ``max`` of a column of type ``t`` answer (as DuckDB's): numbers, bool,
    dates, times, timestamps, durations, decimals, strings and binary (by their bytes), and
    dictionaries of those, and the null type (no value: null). Intervals and nested types are refused."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return (_numeric(t) or pa.types.is_null(t) or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t)
            or pa.types.is_duration(t) or pa.types.is_decimal(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t))


def parse_aggregates(aggregates: Any, probe: pa.Schema, build: pa.Schema | None = None,
                     how: str = "inner", pkeys: list[str] | None = None, bkeys: list[str] | None = None) -> list[Agg]:
    """``["sum(x)", "count(*)", ("max", "y"), "avg(build.z)"]`` or ``{"total": "sum(x)", ...}``.

    Columns resolve as in ``columns`` (probe first; ``build.x`` for a build column; in right and
    full joins a key named alike on both sides is the joined key, its build value on build-only
    rows, unless written ``probe.k``); sum and avg
    need numeric or bool columns, min and max also take dates, times, timestamps, durations,
    decimals, strings and binary (:func:`orderable`); ``count(*)`` counts result rows.
    """
    build = build if build is not None else pa.schema([])
    if isinstance(aggregates, dict):
        items = list(aggregates.items())
    elif isinstance(aggregates, (list, tuple)) and not (len(aggregates) == 2 and aggregates[0] in AGG_FUNCS
                                                       and not isinstance(aggregates[1], (list, tuple))):
        items = [(None, a) for a in aggregates]
    else:
        raise InvalidArgument(f"aggregates must be a list like ['sum(x)', 'count(*)'] or a dict, got {aggregates!r}")
    fills = _coalesced(pkeys, bkeys, how)
    out = []
    for name, a in items:
        if isinstance(a, str):
            m = _AGG_RE.match(a)
            if not m:
                raise InvalidArgument(f"cannot parse aggregate {a!r} (expected e.g. 'sum(x)' or 'count(*)')")
            func, col = m.group(1).lower(), m.group(2)
        elif isinstance(a, (tuple, list)) and len(a) == 2:
            func, col = str(a[0]).lower(), a[1]
        else:
            raise InvalidArgument(f"cannot parse aggregate {a!r}")
        if func not in AGG_FUNCS:
            raise InvalidArgument(f"aggregate function {func!r} is not one of {AGG_FUNCS}")
        col = None if col in (None, "*", "") else col
        if col is None and func != "count":
            raise InvalidArgument(f"{func}(*) is not an aggregate; name a column")
        side, cname = "probe", None
        if col is not None:
            side, cname = resolve(col, probe, build, how, "aggregate column")
            t = (probe if side == "probe" else build).field(cname).type
            if func in ("min", "max") and not orderable(t):
                raise InvalidArgument(f"{func}({col}): column type {t} has no order to take a {func} in")
            if func in ("sum", "avg") and not _numeric(t):
                raise InvalidArgument(f"{func}({col}): column type {t} is not numeric")
        label = name if name is not None else f"{func}({col if col is not None else '*'})"
        coalesced = side == "probe" and cname in fills and not col.startswith("probe.")
        out.append(Agg(func, cname, label, side, cname if coalesced else None))
    if not out:
        raise InvalidArgument("aggregates is empty")
    if len({a.out for a in out}) != len(out):
        raise InvalidArgument("aggregate names must be unique")
    return out
