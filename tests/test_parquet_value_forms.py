"""``row_groups_that_may_contain`` and the filters of ``read_filters`` never rule out a value a row
group holds, whatever form the caller passes it in: an Arrow array, its ``to_pylist()`` (pandas
Timestamps for nanosecond columns, whose nanoseconds ``pa.array`` would drop), a numpy
``datetime64`` array (refused with a raw TypeError before) or a list of pandas values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bloomdb import parquet

N = 400
RNG = np.random.default_rng(5)
TABLE = pa.table({
    "d": pa.array(RNG.integers(-1000, 30000, N).astype(np.int32)).cast(pa.date32()),
    "ts_ms": pa.array(RNG.integers(-2**40, 2**40, N), pa.timestamp("ms")),
    "ts_ns": pa.array(RNG.integers(0, 2**60, N), pa.timestamp("ns")),
    "ts_tz": pa.array(RNG.integers(0, 2**60, N), pa.timestamp("ns", tz="Asia/Kolkata")),
})  # fmt: skip


def _forms(col: pa.Array) -> dict:
    return {"arrow": col, "pylist": col.to_pylist(), "numpy": col.to_numpy(zero_copy_only=False),
            "pandas": list(col.to_pandas())}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("forms") / "t.parquet"
    pq.write_table(TABLE, p, row_group_size=100,
                   bloom_filter_options={c: {"ndv": 100, "fpp": 0.05} for c in TABLE.column_names})
    return p


@pytest.mark.parametrize("form", ["arrow", "pylist", "numpy", "pandas"])
@pytest.mark.parametrize("column", TABLE.column_names)
def test_held_values_are_found_in_every_form(path, column, form):
    pf = pq.ParquetFile(path)
    filters = parquet.read_filters(path, column)
    for rg in range(pf.num_row_groups):
        col = pf.read_row_group(rg, columns=[column]).column(0).combine_chunks()
        values = _forms(col)[form]
        assert parquet.row_groups_that_may_contain(path, column, values)[:, rg].all()
        assert filters[rg].might_contain_many(values).all()
    # and the filters still rule values out: other row groups' values are mostly absent (numpy
    # drops the zone of an instant: a local time is not compared with one, so nothing is ruled out)
    if (column, form) == ("ts_tz", "numpy"):
        return
    other = pf.read_row_group(1, columns=[column]).column(0).combine_chunks()
    assert parquet.row_groups_that_may_contain(path, column, _forms(other)[form])[:, 0].mean() < 0.5
