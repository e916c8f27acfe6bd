"""What one join did: :class:`JoinStats` (``explain=True``), summed from per-chunk :class:`ChunkResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .adaptive import Transition


@dataclass
class ChunkResult:
    """One probe chunk's share of the result and of the statistics."""

    file: str
    decoded: dict[str, int]
    skipped: bool = False
    skipped_bloom: bool = False
    skipped_where: bool = False  # statistics show no row passes ``where``
    filtered: bool = False
    rows: int = 0
    checked: int = 0
    rejected: int = 0
    probed: int = 0
    fps: int = 0
    matched: int = 0
    result_rows: int = 0
    partial: list[Any] | None = None  # aggregates without group_by
    groups: Any = None  # group-by partial (a pyarrow Table or kernel accumulators)
    arrays: list[pa.Array] | None = None  # result columns (rows)


@dataclass
class FileStats:
    """Per probe file (or input): chunks read and skipped, rows decoded per column."""

    chunks: int = 0
    skipped_minmax: int = 0
    skipped_bloom: int = 0
    skipped_where: int = 0
    rows: int = 0
    rows_decoded: dict[str, int] = field(default_factory=dict)


@dataclass
class JoinStats:
    """What one join did (``explain=True``). Row counts are summed over the probe scan."""

    how: str = "inner"
    probe: str = ""
    pushdown: str = "adaptive"
    filter: str | None = None
    filter_bytes: int = 0
    filter_estimated_fpr: float = 0.0
    threads: int = 1
    build_rows: int = 0
    build_keys: int = 0
    probe_rows: int = 0
    chunks: int = 0
    chunks_skipped_minmax: int = 0
    chunks_skipped_bloom: int = 0
    chunks_skipped_where: int = 0
    chunks_filtered: int = 0
    chunks_unfiltered: int = 0
    rows_filter_checked: int = 0
    rows_rejected_by_filter: int = 0
    rows_probed: int = 0
    false_positives: int = 0
    matched_rows: int = 0
    result_rows: int = 0
    build_only_rows: int = 0
    rows_decoded: dict[str, int] = field(default_factory=dict)
    files: dict[str, FileStats] = field(default_factory=dict)
    transitions: list[Transition] = field(default_factory=list)
    build_seconds: float = 0.0
    probe_seconds: float = 0.0

    @property
    def rejection_rate(self) -> float:
        return self.rows_rejected_by_filter / self.rows_filter_checked if self.rows_filter_checked else 0.0

    def add(self, r: ChunkResult) -> None:
        """Count one chunk's result in."""
        self.chunks += 1
        self.probe_rows += r.rows
        self.chunks_skipped_minmax += int(r.skipped)
        self.chunks_skipped_bloom += int(r.skipped_bloom)
        self.chunks_skipped_where += int(r.skipped_where)
        if not (r.skipped or r.skipped_bloom or r.skipped_where):
            self.chunks_filtered += r.filtered
            self.chunks_unfiltered += not r.filtered
        self.rows_filter_checked += r.checked
        self.rows_rejected_by_filter += r.rejected
        self.rows_probed += r.probed
        self.false_positives += r.fps
        self.matched_rows += r.matched
        self.result_rows += r.result_rows
        f = self.files.setdefault(r.file, FileStats())
        f.chunks += 1
        f.rows += r.rows
        f.skipped_minmax += int(r.skipped)
        f.skipped_bloom += int(r.skipped_bloom)
        f.skipped_where += int(r.skipped_where)
        for k, v in r.decoded.items():
            self.rows_decoded[k] = self.rows_decoded.get(k, 0) + v
            f.rows_decoded[k] = f.rows_decoded.get(k, 0) + v

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["transitions"] = [t.__dict__ for t in self.transitions]
        d["files"] = {k: dict(v.__dict__) for k, v in self.files.items()}
        d["rejection_rate"] = self.rejection_rate
        return d

    def explain(self) -> str:
        lines = [
            f"{self.how} hash join, probe = {self.probe}, pushdown = {self.pushdown}, threads = {self.threads}",
            f"  build: {self.build_rows:,} rows, {self.build_keys:,} distinct keys, {self.build_seconds * 1e3:.1f} ms",
            f"  filter: {self.filter or 'none'}"
            + (f" ({self.filter_bytes:,} bytes, ~{100 * self.filter_estimated_fpr:.2f}% FP expected)" if self.filter else ""),
            f"  scan: {self.chunks} chunks ({self.chunks_skipped_minmax} skipped by min/max, {self.chunks_skipped_bloom}"
            f" by the file's Bloom filters, {self.chunks_skipped_where} by where, {self.chunks_filtered} filtered,"
            f" {self.chunks_unfiltered} unfiltered), {self.probe_rows:,} rows, {self.probe_seconds * 1e3:.1f} ms",
            f"  filter: checked {self.rows_filter_checked:,} rows, rejected {self.rows_rejected_by_filter:,}"
            f" ({100 * self.rejection_rate:.1f}%); hash table probed {self.rows_probed:,} rows,"
            f" caught {self.false_positives:,} filter false positives",
            f"  matched {self.matched_rows:,} probe rows -> {self.result_rows:,} result rows"
            + (f" ({self.build_only_rows:,} build rows without a match)" if self.build_only_rows else ""),
            "  rows decoded per column: " + ", ".join(f"{k} {v:,}" for k, v in self.rows_decoded.items()),
        ]
        if len(self.files) > 1:
            for name, f in self.files.items():
                lines.append(f"  {name}: {f.chunks} chunks, {f.skipped_minmax} skipped by min/max, {f.skipped_bloom} by"
                             f" Bloom, {f.skipped_where} by where, {f.rows:,} rows; decoded " + (", ".join(f"{k} {v:,}" for k, v in
                                                                           f.rows_decoded.items()) or "nothing"))
        if self.transitions:
            lines.append("  filter switched: " + ", ".join(
                f"{t.to} at chunk {t.chunk} (rejecting {100 * t.rejection_rate:.1f}%)" for t in self.transitions))
        return "\n".join(lines)

    __str__ = explain
