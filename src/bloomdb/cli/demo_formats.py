"""Demo section: filters in other people's formats (the Floe post's table, LevelDB bytes, Parquet)."""

from __future__ import annotations

import os
import tempfile


def section() -> None:
    """Print the register family's FP table, a LevelDB filter's bytes and Parquet row-group pruning."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .. import parquet
    from ..bench import filter_bench as fb
    from ..filters.leveldb import LevelDBBloom

    print("\n* 'Two bits are better than one': 256K keys in a 256 KiB register-blocked filter")
    rows = [fb.run_one(s, n=256 * 1024, repeats=1, absent=1_000_000) for s in ("register:1", "register:2")]
    print(fb.format_table(rows))
    print("   (the post: k=1 11.68%, k=2 5.69%)")

    f = LevelDBBloom.build([b"hello", b"world"], 10)
    print(f"\n* LevelDB's filter for ['hello', 'world'] at 10 bits/key, as LevelDB writes it: "
          f"{f.to_leveldb_bytes().hex()}")

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "demo.parquet")
        ids = np.arange(0, 300_000, 3, dtype=np.int64)
        pq.write_table(pa.table({"id": ids}), path, row_group_size=25_000,
                       bloom_filter_options={"id": {"ndv": 25_000, "fpp": 0.01}})
        probe = np.array([3, 150_000, 4, 299_997], dtype=np.int64)
        hits = parquet.row_groups_that_may_contain(path, "id", probe)
        print(f"\n* A Parquet file (pyarrow, {pq.ParquetFile(path).num_row_groups} row groups, Bloom filters on 'id'):")
        for v, row in zip(probe, hits):
            print(f"   id={v:>7}: read row groups {np.flatnonzero(row).tolist()}")
