"""An iterator's first round, short: what a seek that reads a few entries pays
(``iterator(prefix=p)``, ``seek(key)`` then ``next()``).

The general merge (:func:`.scan.visible_rounds`) has a fixed cost per round -- per-source
generators, bound searches, a pyarrow conversion -- that a scan spreads over thousands of
entries but a seek reading ten pays whole (63-70 us per prefix seek, 4-5x LevelDB). Here the
first forward round takes, from every source that may hold the range (the memtables' copied
entries; every L0 table; in each deeper level the one table holding the range's start), the
entries from the start on: one :func:`._seek_kernels.seek_table` call per table decodes the
block holding the start (and the next ones, up to ``LIMIT`` entries or the range's end). The
round ends at the *bound* -- the smallest last key among sources that may hold more -- so every
entry up to it is complete; one :func:`._scan_kernels.merge_visible` call picks the visible
versions and Python slices the few keys and values out of one ``bytes`` each. The rounds after
it are the general merge from just after the bound.

The first round is first asked of :mod:`.cursor` (the same round in one kernel call); this
module's Python round runs where that one does not apply (range tombstones, two memtables, a
filter the kernel does not check). A table without mapped bytes (the ``cache_bytes`` route), a
compressed block or a malformed one sends the whole round to the general merge (which reads,
decompresses or raises as usual).
"""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from . import _scan_kernels as SK
from . import cursor
from ._seek_kernels import seek_table
from .scan import _slice
from .sstable.reader import concat_packed

#: entries a table source decodes at least in the first round (when its blocks hold them)
LIMIT = 16
_NO_KEY = np.zeros(0, np.uint8)


def rounds(view, a, b, values: bool, general):
    """Forward rounds ``(keys, values)`` of ``view`` over ``[a, b)``: the short first round,
    then ``general(start)`` -- the general merge's rounds from ``start`` -- after its bound."""
    r = cursor.first_round(view, a, b, values, LIMIT)
    if r is None:
        r = first_round(view, a, b, values)
    if r is None:
        yield from general(a)
        return
    keys, vals, bound = r
    if keys:
        yield keys, vals
    if bound is not None:
        nxt = bound + b"\x00"
        if b is None or nxt < b:
            yield from general(nxt)


def overlapping(version, a, b) -> list[list]:
    """Per level, the tables of ``version`` whose key range meets ``[a, b)`` (L0: a scan of its
    few tables; deeper levels: two binary searches over the level's key ranges, kept per
    version)."""
    bounds = version.__dict__.get("_seek_bounds")
    if bounds is None:
        bounds = version.__dict__["_seek_bounds"] = [
            ([r.table for r in level], [r.table.max_key for r in level], [r.table.min_key for r in level])
            for level in version.levels]
    out = []
    for li, (tables, maxs, mins) in enumerate(bounds):
        if li == 0:
            out.append([t for t in tables if not ((b is not None and t.min_key >= b) or (a is not None and t.max_key < a))])
        else:
            i = 0 if a is None else bisect_left(maxs, a)
            j = len(tables) if b is None else bisect_left(mins, b)
            out.append(tables[i:j])
    return out


def _table_sources(view, a, b):
    """The tables that may hold the first entries of ``[a, b)``: every L0 table overlapping it,
    and per deeper level the first table whose last key is ``>= a`` (if it starts before ``b``)."""
    out = []
    for li, level in enumerate(view.tables):
        if li == 0:
            out += [t for t in level if not ((b is not None and t.min_key >= b) or (a is not None and t.max_key < a))]
        elif level:
            i = 0 if a is None else bisect_left(level, a, key=_max_key)
            if i < len(level) and (b is None or level[i].min_key < b):
                out.append(level[i])
    return out


def _max_key(t) -> bytes:
    return t.max_key


def first_round(view, a, b, values: bool):
    """``(keys, values, bound)``: the visible entries of ``[a, b)`` up to ``bound`` (``None``:
    the whole range was read), or ``None`` when a source needs the general merge."""
    lo = np.frombuffer(a if a is not None else b"", np.uint8)
    hi = _NO_KEY if b is None else np.frombuffer(b, np.uint8)
    parts = []
    for p in view.mem:
        n = len(p[2])
        s = SK.count_below(p[0], p[1], lo, False) if a is not None else 0
        e = SK.count_below(p[0], p[1], hi, False) if b is not None else n
        if s < e:
            parts.append(p if (s, e) == (0, n) else _slice(p, s, e))
    bound = None
    for t in _table_sources(view, a, b):
        arrs = t.lookup_arrays()
        if arrs is None:
            return None
        while True:
            st, blk, more, *p = seek_table(arrs[0], arrs[1], arrs[2], lo, hi, b is not None, LIMIT)
            if st != 1:
                break
            if not t.check_block(blk):  # compressed: the general merge decompresses
                return None
        if st < 0:
            return None  # the general merge names the damage
        if len(p[2]):
            parts.append(p)
        if more:
            if not len(p[2]):
                return None
            last = p[0][p[1][-2] : p[1][-1]].tobytes()
            if bound is None or last < bound:
                bound = last
    if bound is not None:
        bk = np.frombuffer(bound, np.uint8)
        cut = []
        for p in parts:
            c = SK.count_below(p[0], p[1], bk, True)
            if c:
                cut.append(p if c == len(p[2]) else _slice(p, 0, c))
        parts = cut
    if not parts:
        return [], None, bound
    kd, ko, tr, vd, vo = concat_packed(parts)
    starts = [0]
    for p in parts:
        starts.append(starts[-1] + len(p[2]))
    sel = SK.merge_visible(kd, ko, tr, np.array(starts, np.int64), view.snap, False)
    if view.hide is not None and sel.shape[0]:
        sel = view.hide(kd, ko, tr, sel)
    sel = sel.tolist()
    cut = len(sel) > LIMIT
    if cut:  # a cursor reads a few: the round ends at its LIMIT-th visible key
        sel = sel[:LIMIT]
    keys = _pick(kd, ko, sel)
    if cut:
        bound = keys[-1]
    return keys, (_pick(vd, vo, sel) if values else None), bound


def _pick(data, off, sel) -> list[bytes]:
    raw = data.tobytes()
    o = off.tolist()
    return [raw[o[i] : o[i + 1]] for i in sel]

