"""What a batch of keys is, beyond lists and 1-D arrays, as an rbloom user expects: a 2-D numpy
array is refused with InvalidArgument naming its shape (rbloom's ``update`` refuses it: its rows
are unhashable) -- it was flattened before -- in adds, queries and static builds alike, nothing
added; an (n, 1) column is one key per row (``arr.view("V16")`` of an (n, 16) uint8 array); a dict
gives its keys, as ``set.update`` and rbloom's ``update`` do, and queries agree with the adds."""

from __future__ import annotations

import numpy as np
import pytest

from bloomdb import filters
from bloomdb.errors import InvalidArgument

FAMILIES = ["standard:10", "blocked:10", "register:2", "sbbf:10", "counting:40", "cuckoo:12", "scalable:0.01"]


@pytest.mark.parametrize("spec", FAMILIES)
@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (1, 4), (2, 2, 1)])
def test_a_matrix_of_keys_is_refused_naming_its_shape(spec, shape):
    f = filters.create(spec, capacity=1000)
    keys = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    with pytest.raises(InvalidArgument, match=r"shape \(" + ", ".join(map(str, shape))):
        f.add_many(keys)
    assert f.count == 0 and not f.might_contain_many(keys.ravel()).any()
    with pytest.raises(InvalidArgument, match="shape"):
        f.might_contain_many(keys)


@pytest.mark.parametrize("spec", ["ribbon:10", "fuse8", "paired:10"])
def test_static_builds_refuse_a_matrix(spec):
    with pytest.raises(InvalidArgument, match=r"shape \(2, 3\)"):
        filters.build(spec, np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("spec", FAMILIES)
def test_a_column_is_one_key_per_row(spec):
    rows = np.random.default_rng(1).integers(0, 256, (50, 16), dtype=np.uint8)
    f = filters.create(spec, capacity=1000)
    f.add_many(rows.view("V16"))  # shape (50, 1)
    assert f.might_contain_many(rows.view("V16").ravel()).all()
    assert all(f.might_contain(bytes(r)) for r in rows)
    g = filters.create(spec, capacity=1000)
    g.add_many(np.arange(10, dtype=np.int64).reshape(10, 1))
    assert g.might_contain_many(np.arange(10)).all()


@pytest.mark.parametrize("spec", FAMILIES)
def test_a_dict_gives_its_keys_as_set_update(spec):
    d = {"alice": 1, "bob": 2, 7: "x"}
    f = filters.create(spec, capacity=1000)
    f.add_many(d)
    model = set()
    model.update(d)
    assert model == {"alice", "bob", 7}
    assert f.might_contain_many(d).all() and all(f.might_contain(k) for k in model)
    assert f.count == 3
