"""State shared by the families that keep each key in one 64-byte line (``blocked``, ``counting``).

Their parameter block is the same 21 bytes — ``u64 capacity``, ``u64 num_lines``, ``u8 k``,
``u32 millibits_per_key`` — and their payload is ``num_lines * 64`` bytes; this mixin owns that
part of the envelope so each family keeps only its sizing and kernels.
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidArgument
from .base import check_capacity

PARAMS = struct.Struct("<QQBI")  # capacity, num_lines, k, millibits per key
MAX_LINES = (1 << 32) - 1  # lines are picked by a 32-bit multiply-shift


def lines_for(family: str, capacity: int, millibits: int) -> int:
    """RocksDB's sizing: ``ceil(capacity * millibits / 8000)`` bytes rounded up to whole lines."""
    nbytes = -(-(capacity * millibits) // 8000)
    num_lines = max(1, -(-nbytes // 64))
    if num_lines > MAX_LINES:
        raise InvalidArgument(f"{family} filter of {num_lines} lines exceeds 2^32 lines (256 GiB)")
    return num_lines


class CacheLineState:
    """Envelope parameters and payload of a one-line-per-key filter (a mixin for Filter classes)."""

    #: Largest k a stored filter may claim (checked when reading bytes).
    max_probes: ClassVar[int] = 30

    @classmethod
    def _plan(cls, capacity: int, bits_per_key: float | None = None,
              fpr: float | None = None) -> tuple[int, int, int, int]:
        """The checked ``(capacity, num_lines, k, millibits)`` of a new filter sized by ``fpr`` or
        ``bits_per_key`` (the family's ``_millibits`` and ``_probes_for``); raises InvalidArgument."""
        capacity = check_capacity(capacity, cls.family)
        if fpr is not None and bits_per_key is not None:
            raise InvalidArgument("give bits_per_key or fpr, not both")
        millibits = cls._millibits(bits_per_key, fpr)
        return capacity, lines_for(cls.family, capacity, millibits), cls._probes_for(millibits), millibits

    @classmethod
    def planned_size(cls, capacity: int, **kwargs: Any) -> tuple[int, int]:
        """As :meth:`Filter.planned_size`, by arithmetic (no allocation)."""
        _, num_lines, k, _ = cls._plan(capacity, **kwargs)
        return num_lines * 512, k

    def _init(self, capacity, num_lines, k, millibits, buf, count):
        self._capacity = capacity
        self._lines = num_lines
        self._k = k
        self._millibits = millibits
        self._buf = buf
        self._count = count
        self._readonly = not buf.flags.writeable
        self._bind(buf)

    def _bind(self, buf: np.ndarray) -> None:
        """Hook: set up views of the payload the kernels take (none by default)."""

    def _params(self) -> bytes:
        return PARAMS.pack(self._capacity, self._lines, self._k, self._millibits)

    @classmethod
    def _from_parts(cls, params: bytes, payload: np.ndarray, count: int):
        capacity, lines, k, millibits = PARAMS.unpack(params)
        if lines == 0 or lines > MAX_LINES or payload.nbytes != lines * 64 or not 1 <= k <= cls.max_probes:
            raise ValueError(f"inconsistent {cls.family} filter: lines={lines} k={k} payload={payload.nbytes}")
        self = cls.__new__(cls)
        self._init(capacity, lines, k, millibits, payload, count)
        return self

    def _payload(self) -> np.ndarray:
        return self._buf

    @property
    def num_lines(self) -> int:
        return self._lines

    @property
    def num_probes(self) -> int:
        return self._k
