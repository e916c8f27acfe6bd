"""Shared by the Parquet page reader's tests: reads compared with pyarrow's, and a copy of a file
with bytes of one column chunk flipped."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from bloomdb.parquet import ParquetColumns


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


def check_arrow(path, seed: int = 0, declined: tuple = (), expect=None) -> int:
    """Every column of every row group read whole, at random ascending positions (with repeats),
    at the last row and at none: equal to pyarrow's reading, type included. Columns in
    ``declined`` must return None; others must be read. Returns the number of reads compared."""
    rng = np.random.default_rng(seed)
    pf = pq.ParquetFile(path)
    reads = 0
    with ParquetColumns(path) as pc:
        for g in range(pf.metadata.num_row_groups):
            ref = pf.read_row_group(g)
            n = ref.num_rows
            for name in ref.column_names:
                col = ref.column(name).combine_chunks()
                picks = [None, np.zeros(0, np.int64)]
                if n:
                    picks += [np.sort(rng.choice(n, min(n, 41), replace=True)), np.array([n - 1])]
                for positions in picks:
                    got = pc.read_arrow(g, name, positions)
                    if name in declined:
                        assert got is None, name
                        continue
                    assert got is not None, (path, g, name)
                    want = col if positions is None else col.take(pa.array(positions, pa.int64()))
                    assert got.type == want.type, (name, got.type, want.type)
                    assert got.equals(want), (name, g, positions)
                    reads += 1
    return reads


def varint(x: int) -> bytes:
    """``x`` (>= 0) as a ULEB128 varint (Thrift's and the hybrid encoding's run headers)."""
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        out.append(b | (0x80 if x else 0))
        if not x:
            return bytes(out)
