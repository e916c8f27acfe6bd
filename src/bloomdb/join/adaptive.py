"""When to filter: the adaptive first-pass filtering policy of the probe scan.

The filter pays when it rejects many rows (the scan then skips hash-table probes and decoding of
the other columns for them); when almost every row matches it is pure overhead. Policy:

* ``"on"`` / ``"off"``: always / never filter.
* ``"adaptive"``: start filtering. Keep the (rows checked, rows rejected) of the last ``window``
  filtered chunks; once at least ``min_chunks`` were seen and the rejection rate over the window
  is below ``threshold``, switch filtering off. While off, every ``sample_every``-th chunk is still
  filtered (a sample, so the rate keeps being measured); when the rate over the samples since the
  switch (the last ``window`` of them) reaches ``threshold`` again, switch back on.

Thread-safe: chunks may be decided and recorded out of order by a pool of workers.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from ..errors import InvalidArgument

MODES = ("adaptive", "on", "off")


@dataclass
class Transition:
    chunk: int
    to: str  # "on" | "off"
    rejection_rate: float


@dataclass
class AdaptivePolicy:
    mode: str = "adaptive"
    threshold: float = 0.10
    window: int = 8
    min_chunks: int = 4
    sample_every: int = 16
    transitions: list[Transition] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InvalidArgument(f"pushdown must be one of {MODES}, got {self.mode!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise InvalidArgument(f"threshold must be in [0, 1], got {self.threshold!r}")
        if self.window < 1 or self.min_chunks < 1 or self.sample_every < 1:
            raise InvalidArgument("window, min_chunks and sample_every must be >= 1")
        self._lock = threading.Lock()
        self._on = self.mode != "off"
        self._recent: deque[tuple[int, int]] = deque(maxlen=self.window)
        self._since_off = 0

    @property
    def filtering(self) -> bool:
        return self._on

    def decide(self, chunk: int) -> bool:
        """Whether to filter chunk ``chunk`` (call once per chunk, before scanning it)."""
        if self.mode != "adaptive":
            return self._on
        with self._lock:
            if self._on:
                return True
            self._since_off += 1
            return self._since_off % self.sample_every == 0

    def record(self, chunk: int, checked: int, rejected: int) -> None:
        """Report a filtered chunk's rows checked and rows rejected by the filter."""
        if self.mode != "adaptive" or checked == 0:
            return
        with self._lock:
            self._recent.append((checked, rejected))
            c = sum(x for x, _ in self._recent)
            rate = sum(r for _, r in self._recent) / c
            if self._on and len(self._recent) >= self.min_chunks and rate < self.threshold:
                self._on = False
                self._since_off = 0
                self._recent.clear()
                self.transitions.append(Transition(chunk, "off", rate))
            elif not self._on and rate >= self.threshold:
                self._on = True
                self._recent.clear()
                self.transitions.append(Transition(chunk, "on", rate))
