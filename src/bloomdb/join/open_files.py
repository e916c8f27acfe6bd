"""Probe inputs kept open between joins: a columnar table or Parquet file is mapped once per process.

Opening is cheap, but a fresh memory map faults every page it touches in again (about a
microsecond each): at 1% selectivity that was more than half of a join's time over a warm
table. So, as a database keeps its files open between queries, :func:`kept_open` holds the last
:data:`KEEP_OPEN` opened inputs, keyed by path and the identity of the bytes that describe them:
inode, size, change and modification times and a CRC32C of a columnar table's manifest or of a
Parquet file's footer (which lists every chunk's offset, size and statistics). A table rewritten
at the same path is a different key and is opened anew. :func:`release_files` drops
them all (their maps close when the last join using them finishes).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Callable

from ..checksum import crc32c

KEEP_OPEN = 8

_open: OrderedDict[tuple, Any] = OrderedDict()
_lock = threading.Lock()


def kept_open(kind: str, path: str, identity_file: str, opener: Callable[[], Any], tail: bool = False) -> Any:
    """The object ``opener()`` made for ``(kind, path)`` while ``identity_file`` is unchanged:
    its whole content, or with ``tail`` its Parquet footer, is checksummed on every call (a
    small read; the footer's length is in the last 8 bytes)."""
    with open(identity_file, "rb") as fh:
        st = os.fstat(fh.fileno())
        if tail and st.st_size >= 8:
            fh.seek(st.st_size - 8)
            n = int.from_bytes(fh.read(4), "little")
            fh.seek(max(0, st.st_size - 8 - n))
        crc = crc32c(fh.read())
    key = (kind, os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, crc)
    with _lock:
        obj = _open.get(key)
        if obj is not None:
            _open.move_to_end(key)
            return obj
    obj = opener()
    with _lock:
        _open[key] = obj
        while len(_open) > KEEP_OPEN:
            _open.popitem(last=False)
    return obj


def release_files() -> None:
    """Forget every kept input (e.g. before deleting the files, on platforms that refuse to delete
    a mapped file)."""
    with _lock:
        _open.clear()
