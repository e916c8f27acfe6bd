"""Pickling filters: the byte envelope in band (protocols < 5) or out of band (protocol 5).

Protocol 5 (:pep:`574`) lets a pickler hand large buffers to a ``buffer_callback`` instead of
copying them into the pickle stream; multiprocessing's and Dask's serializers ship those buffers
as separate frames. A filter pickles as its envelope header (family, parameters, count, payload
CRC, ``on_full``; a few hundred bytes) plus one :class:`pickle.PickleBuffer` over its own payload
array: no copy on the sending side. On arrival the payload is checked against the CRC (a torn or
damaged transfer is a :class:`~bloomdb.errors.CorruptionError`, never a filter with wrong bits)
and used in place when it is a writable, 64-byte-aligned buffer, else copied once into one.

Like numpy arrays, a filter unpickled from out-of-band buffers of the *same process* (``loads(...,
buffers=...)`` of the very buffers ``dumps`` produced) shares memory with the original: take
:meth:`Filter.copy` when that matters. Pickle a filter no thread is adding to: the CRC is taken
at ``dumps`` with writers held off, and bits set between that moment and the buffer's transfer
make the arrival raise CorruptionError.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from ..checksum import crc32c
from . import format as fmt
from . import registry


def reduce_filter(f: Any, protocol: int) -> tuple:
    """``__reduce_ex__`` of a filter (see the module docstring)."""
    if protocol < 5:
        return (from_pickled_bytes, (f.to_bytes(),))
    with f._gate.write(False):  # a stable payload for the CRC
        f._check_source()
        payload, count = f._payload(), f._count
        crc = crc32c(payload)
    return (from_pickled_buffer, (f._header(count, payload, crc), pickle.PickleBuffer(payload)))


def from_pickled_bytes(data: bytes) -> Any:
    """A filter from its whole envelope (protocols < 5)."""
    return registry.from_bytes(data)


def from_pickled_buffer(header: bytes, buffer: Any) -> Any:
    """A filter from its envelope header and its payload buffer (protocol 5); CorruptionError
    when the payload does not match the header's length or CRC."""
    env = fmt.decode(header, payload=buffer, source="a pickled filter")
    raw = buffer.raw() if isinstance(buffer, pickle.PickleBuffer) else memoryview(buffer).cast("B")
    payload = np.frombuffer(raw, dtype=np.uint8)
    if not payload.flags.writeable or payload.ctypes.data % fmt.ALIGN:
        copy = fmt.aligned_empty(payload.nbytes)
        copy[:] = payload
        payload = copy
    cls = registry.family_by_tag(env.family_tag)
    return cls._from_envelope(env, payload, "a pickled filter")
