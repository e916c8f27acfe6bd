"""``filters.open(path, mmap=True)``: a filter opened and checked never answers from a file that
changed under it. Replacing the file by rename (``save``) leaves the open filter's contents as they
were; rewriting or truncating it in place makes queries raise CorruptionError instead of giving
false negatives (on main they silently answered False for keys that were added)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from bloomdb import filters
from bloomdb.errors import CorruptionError

from filter_families import all_families, make_filled

KEYS = [f"k{i}" for i in range(3000)]


def _saved(name, tmp_path):
    f = make_filled(name, KEYS, capacity=3000)
    path = tmp_path / f"{name}.blm"
    f.save(path)
    return f, path


def _payload_range(path):
    from bloomdb.filters import format as fmt

    data = path.read_bytes()
    env = fmt.decode(data)
    return env.payload_offset, env.payload_length


@pytest.mark.parametrize("name", all_families())
def test_replaced_by_rename_keeps_the_old_contents(name, tmp_path):
    f, path = _saved(name, tmp_path)
    g = filters.open(path, mmap=True)
    other = make_filled(name, ["something", "else"], capacity=3000)
    other.save(path)  # temp file + rename: the usual safe write
    assert g.might_contain_many(KEYS).all()
    assert all(g.might_contain(k) for k in KEYS[:50])
    assert g == f and g.to_bytes() == f.to_bytes()
    assert filters.open(path) == other


@pytest.mark.parametrize("name", all_families())
def test_rewrite_in_place_is_detected_never_a_false_negative(name, tmp_path):
    f, path = _saved(name, tmp_path)
    g = filters.open(path, mmap=True)
    assert g.might_contain_many(KEYS).all()
    off, length = _payload_range(path)
    with open(path, "r+b") as fh:  # clear the bits in place (same size; leveldb's k byte kept)
        fh.seek(off)
        fh.write(b"\0" * (length - 1))
    for query in (lambda: g.might_contain_many(KEYS), lambda: g.might_contain(KEYS[0]), g.to_bytes, g.copy):
        with pytest.raises(CorruptionError, match="changed in place"):
            query()
    assert filters.open(path, mmap=False, verify=False).might_contain_many(KEYS).sum() < len(KEYS)


@pytest.mark.parametrize("name", all_families())
def test_truncated_in_place_is_detected_before_the_pages_are_touched(name, tmp_path):
    _, path = _saved(name, tmp_path)
    g = filters.open(path, mmap=True)
    os.truncate(path, 64)  # touching the lost pages would be SIGBUS (main crashed here)
    for touch in (lambda: g.might_contain_many(KEYS), lambda: g.might_contain_hashes(np.arange(10, dtype=np.uint64)),
                  g.stats, g.fill_ratio, g.to_bytes):
        with pytest.raises(CorruptionError):
            touch()


@pytest.mark.parametrize("name", all_families())
def test_unmapped_and_copied_filters_are_immune(name, tmp_path):
    _, path = _saved(name, tmp_path)
    g = filters.open(path, mmap=False)
    h = filters.open(path, mmap=True).copy()
    with open(path, "r+b") as fh:
        off, length = _payload_range(path)
        fh.seek(off)
        fh.write(b"\0" * length)
    assert g.might_contain_many(KEYS).all() and h.might_contain_many(KEYS).all()


def test_mapped_filter_closes_its_file(tmp_path):
    _, path = _saved("blocked", tmp_path)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(20):
        g = filters.open(path, mmap=True)
        assert g.might_contain(KEYS[0])
        del g
    import gc

    gc.collect()
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) <= before + 1
