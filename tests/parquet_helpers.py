"""Shared by the Parquet page reader's tests: a copy of a file with bytes of one column chunk flipped."""

from __future__ import annotations

import pyarrow.parquet as pq
from hypothesis import strategies as st


def flipped_copy(p, q, data):
    """Write ``p`` to ``q`` with 1-4 bytes of a random column chunk of row group 0 flipped (drawn
    from hypothesis ``data``). Returns ``(the file's intact metadata, the damaged chunk's metadata)``."""
    raw = bytearray(p.read_bytes())
    md = pq.ParquetFile(p).metadata
    c = md.row_group(0).column(data.draw(st.integers(0, md.num_columns - 1)))
    start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(start, start + c.total_compressed_size - 1))
        raw[at] ^= data.draw(st.integers(1, 255))
    q.write_bytes(bytes(raw))
    return md, c
