"""``Filter.planned_size(capacity, **kw)``: the ``(num_bits, num_probes)`` the filter
``cls(capacity, **kw)`` has, by arithmetic for the families whose size is arithmetic, so
``bloomdb calc`` prints sizes past this machine's memory (it refused them before: "a filter of
111.8 GiB needs more than this machine's memory" for 10^11 keys of ``standard``/``blocked``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bloomdb import filters
from bloomdb.bench.calc import calculate
from bloomdb.errors import InvalidArgument

SIZED = {
    "standard": st.fixed_dictionaries({}, optional={"bits_per_key": st.floats(1, 40), "num_probes": st.integers(1, 30)}),
    "blocked": st.one_of(st.fixed_dictionaries({"bits_per_key": st.floats(1, 40)}),
                         st.fixed_dictionaries({"fpr": st.floats(1e-6, 0.5)})),
    "counting": st.one_of(st.fixed_dictionaries({"bits_per_key": st.floats(4, 200)}),
                          st.fixed_dictionaries({"fpr": st.floats(1e-5, 0.5)})),
    "sbbf": st.one_of(st.fixed_dictionaries({"bits_per_key": st.floats(1, 40)}),
                      st.fixed_dictionaries({"fpr": st.floats(1e-4, 0.5)}),
                      st.fixed_dictionaries({"num_bytes": st.sampled_from([32, 64, 4096, 1 << 20])})),
    "cuckoo": st.fixed_dictionaries({}, optional={"fingerprint_bits": st.sampled_from([8, 12, 16])}),
}


@pytest.mark.parametrize("name", sorted(SIZED))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_planned_size_is_the_made_filters_size(name, data):
    cls = filters.family(name)
    capacity = data.draw(st.integers(1, 50_000), label="capacity")
    kw = data.draw(SIZED[name], label="kwargs")
    f = cls(capacity=capacity, **kw)
    assert cls.planned_size(capacity, **kw) == (f.num_bits, f.num_probes)


@pytest.mark.parametrize("name", ["register", "scalable"])
def test_the_default_makes_the_filter_and_reads_its_size(name):
    cls = filters.family(name)
    f = cls(capacity=5000)
    assert cls.planned_size(5000) == (f.num_bits, f.num_probes)


@pytest.mark.parametrize("name", sorted(SIZED))
def test_bad_arguments_raise_what_the_constructor_raises(name):
    cls = filters.family(name)
    for bad in (0, -1, 2.5, "many"):
        with pytest.raises(InvalidArgument):
            cls.planned_size(bad)


def test_calc_prints_sizes_past_this_machines_memory():
    rows = {r.family: r for r in calculate(100_000_000_000, 0.01)}
    for name in ("standard", "blocked"):
        r = rows[name]
        assert not r.note and 9 < r.bits_per_key < 11 and 0.009 < r.expected_fpr <= 0.01, r
        assert r.bytes > 100_000_000_000 and r.keys_that_fit >= 100_000_000_000, r
