"""The probe scan of one chunk: prune, filter, probe, apply ``where``, hand the matches to a sink.

Per chunk: skip it when its min/max statistics show no row passes ``where``, or its key
min/max (or the file's own Bloom filters) exclude every build key; decode the key column(s); if filtering is on for this chunk, check every key against the
build side's filter (one batch kernel) and probe the hash table only for the survivors (all rows
when off); evaluate ``where`` on the matches (or, for joins that keep unmatched probe rows, on
every row); then the sink (:mod:`.rows`, :mod:`.aggregate`, :mod:`.groupby`) decodes the other
columns it needs at the result's rows only (filtering on) or whole (off, the plain
scan-then-join). A chunk pruned before reading still yields its rows to left, full and anti
joins (every one unmatched).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .adaptive import AdaptivePolicy
from .build import BuildSide
from .compare import KeyDomain
from .keys import JoinKeys
from .outer import unmatched_rows
from .plan import KEEPS_PROBE
from .predicates import Predicate, chunk_may_pass, passing
from .sources import ProbeChunk, ProbeSource
from .stats import ChunkResult

_NONE = np.zeros(0, np.int64)


class Sink(Protocol):
    def chunk(self, ch: ProbeChunk, r: ChunkResult, pos: np.ndarray, grp: np.ndarray, unmatched: np.ndarray,
              whole: bool) -> None:
        """Fill ``r`` with the result of one chunk: matched probe rows ``pos`` (ascending) of key
        groups ``grp``; ``unmatched`` probe rows the join keeps; ``whole`` = decode columns whole."""


class Scanner:
    """Scans chunk ``i`` of ``src`` when called (thread-safe: one call per chunk, any order)."""

    def __init__(self, src: ProbeSource, bs: BuildSide, pkeys: list[str], domains: list[KeyDomain], how: str,
                 policy: AdaptivePolicy, bloom: np.ndarray | None, preds: list[Predicate], sink: Sink,
                 matched_groups: np.ndarray | None):
        self.src, self.bs, self.pkeys, self.domains, self.how = src, bs, pkeys, domains, how
        self.policy, self.bloom, self.preds, self.sink, self.matched_groups = policy, bloom, preds, sink, matched_groups
        self.ptype = src.schema.field(pkeys[0]).type
        self._in_range = self._ranges()

    def _ranges(self) -> np.ndarray | None:
        """Per chunk, whether a build key lies in its key min/max, decided here for every chunk
        before the scan starts (one sort of the build keys, in this thread; the pool's threads
        then neither sort them twice nor take turns at the GIL for a search per chunk). None
        for sources whose chunks are known only as the scan takes them (streams)."""
        n = self.src.num_chunks
        if not n or self.bs.non_null_rows == 0:
            return None
        stat = self.domains[0].stat_range
        return np.array([self.bs.any_key_between(stat(*self.src.key_stats(i, self.pkeys[0]), self.ptype))
                         for i in range(n)], np.bool_)

    def __call__(self, i: int) -> ChunkResult:
        n = self.src.chunk_rows(i)
        r = ChunkResult(self.src.file_of(i), {}, rows=n)
        if self.preds and not chunk_may_pass(self.preds, self.src, i):
            r.skipped_where = True  # no row passes ``where``: nothing of this chunk is in any join
            return r
        pruned = self._pruned(i)
        if pruned:
            r.skipped, r.skipped_bloom = pruned == "minmax", pruned == "bloom"
            if self.how in KEEPS_PROBE and n:
                self._all_unmatched(self._open(i), r)
            return r
        ch = self._open(i)
        r.decoded = ch.decoded
        pos, grp, use = self._match(i, ch, r)
        if self.how in KEEPS_PROBE:
            alive = passing(self.preds, ch, np.arange(n, dtype=np.int64), True) if self.preds else None
            if alive is not None:
                ok = np.zeros(n, np.bool_)
                ok[alive] = True
                pos, grp = pos[ok[pos]], grp[ok[pos]]
            unmatched = unmatched_rows(n, pos, alive)
        else:
            alive = passing(self.preds, ch, pos, not use)
            if alive is not None:
                pos, grp = pos[alive], grp[alive]
            unmatched = _NONE
        r.matched = pos.shape[0]
        if self.matched_groups is not None:
            self.matched_groups[grp] = True
        self.sink.chunk(ch, r, pos, grp, unmatched, not use or self.how in KEEPS_PROBE)
        return r

    def _open(self, i: int):
        ch = self.src.chunk(i)
        ch.recycle = self.how in KEEPS_PROBE  # its whole columns are result columns
        return ch

    def _pruned(self, i: int) -> str | None:
        """"minmax" / "bloom" when no build key can be in chunk ``i``, else None."""
        bs = self.bs
        if bs.non_null_rows == 0:
            return "minmax"
        if self._in_range is not None:
            if not self._in_range[i]:
                return "minmax"
        elif not bs.any_key_between(self.domains[0].stat_range(*self.src.key_stats(i, self.pkeys[0]), self.ptype)):
            return "minmax"
        if self.bloom is not None and not self.bloom[i]:
            return "bloom"
        return None

    def _all_unmatched(self, ch: ProbeChunk, r: ChunkResult) -> None:
        r.decoded = ch.decoded
        rows = np.arange(ch.num_rows, dtype=np.int64)
        alive = passing(self.preds, ch, rows, True)
        self.sink.chunk(ch, r, _NONE, _NONE, rows if alive is None else rows[alive], True)

    def _keys(self, ch: ProbeChunk) -> JoinKeys:
        if len(self.pkeys) == 1:
            return ch.keys(self.pkeys[0], self.domains[0])
        return self.bs.probe_keys([ch.keys(p, d) for p, d in zip(self.pkeys, self.domains)])

    def _match(self, i: int, ch: ProbeChunk, r: ChunkResult) -> tuple[np.ndarray, np.ndarray, bool]:
        """(matched positions, their key groups, whether the filter ran) of chunk ``i``."""
        keys = self._keys(ch)
        bs = self.bs
        use = bs.filter is not None and self.policy.decide(i)
        r.filtered = use
        if not use:
            pos, grp, r.probed = bs.probe(keys, None)
            return pos, grp, False
        sel = np.flatnonzero(bs.filter_pass(keys))
        r.checked, r.rejected = keys.n, keys.n - sel.shape[0]
        self.policy.record(i, r.checked, r.rejected)
        pos, grp, r.probed = bs.probe(keys, sel)
        r.fps = r.probed - pos.shape[0]
        return pos, grp, True


def scan_all(scanner: Any, tasks: Any, threads: int, window: int | None = None):
    """``scanner(i)`` for every ``i`` of ``tasks``, in order, ``threads`` at a time; at most
    ``window`` (default 4 x threads) results wait to be consumed, so a stream holds little."""
    if threads <= 1:
        yield from map(scanner, tasks)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    window = window or 4 * threads
    with ThreadPoolExecutor(max_workers=threads) as ex:
        pending: deque = deque()
        for t in tasks:
            pending.append(ex.submit(scanner, t))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
