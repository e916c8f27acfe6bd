"""``filters.open(path, mmap="r+")``: adds land in the file, ``flush``/``close`` make the header
vouch for them, a writer that dies before flushing leaves a file every reader refuses, one writer
per file (advisory lock), and static / growing families refuse the mode clearly."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bloomdb import filters
from bloomdb.errors import CorruptionError, FilterFull, FilterInUse, InvalidArgument, KeyTypeError

from filter_families import all_families, make_filled

KEYS = [f"k{i}" for i in range(2000)]
MORE = [f"m{i}" for i in range(500)]
ABSENT = [f"absent{i}" for i in range(5000)]


def writable_families():
    out = []
    for name in all_families():
        cls = filters.family(name)
        if not cls.static and not cls.writable_map_refusal:
            out.append(name)
    return out


def _saved(name, tmp_path, keys=KEYS, capacity=4000):
    f = make_filled(name, keys, capacity=capacity)
    path = tmp_path / f"{name}.blm"
    f.save(path)
    return f, path


def test_mutable_families_support_it():
    assert set(writable_families()) >= {"standard", "blocked", "register", "sbbf", "counting", "cuckoo"}


@pytest.mark.parametrize("name", writable_families())
def test_adds_land_in_the_file(name, tmp_path):
    f, path = _saved(name, tmp_path)
    with filters.open(path, mmap="r+") as g:
        g.add_many(MORE)
        g.add("one more")
        expected = g.copy()
    f.add_many(MORE)
    f.add("one more")
    h = filters.open(path, mmap=False)  # verifies both CRCs
    assert h == expected == f
    assert h.count == len(KEYS) + len(MORE) + 1
    assert h.might_contain_many(KEYS + MORE).all()


@pytest.mark.parametrize("name", writable_families())
def test_flush_makes_the_file_verify_while_still_open(name, tmp_path):
    _, path = _saved(name, tmp_path)
    g = filters.open(path, mmap="r+")
    g.add_many(MORE)
    with pytest.raises(CorruptionError, match="open for writing"):
        filters.open(path, mmap=False)  # written, not flushed: refused, not answered from
    g.flush()
    h = filters.open(path, mmap=False)
    assert h.count == g.count and h.might_contain_many(MORE).all()
    g.add("later")
    g.close()
    assert filters.open(path, mmap=False).might_contain("later")
    with pytest.raises(Exception, match="read-only"):
        g.add("after close")
    assert g.might_contain("later")  # queries still work on the map


CRASH = textwrap.dedent("""
    import os, sys
    from bloomdb import filters
    g = filters.open(sys.argv[1], mmap="r+")
    g.add_many([f"m{i}" for i in range(500)])
    if sys.argv[2] == "flush":
        g.flush()
        g.add("after flush")
    os._exit(0)  # no close, no atexit: as if killed
""")


@pytest.mark.parametrize("name", ["blocked", "counting", "cuckoo"])
@pytest.mark.parametrize("when", ["before", "flush"])
def test_a_crash_leaves_a_file_that_verifies_or_is_refused(name, tmp_path, when):
    f, path = _saved(name, tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", CRASH, str(path), when], check=True, env=env)
    for verify in (True, False):  # even without the payload check: the header is refused
        with pytest.raises(CorruptionError, match="open for writing"):
            filters.open(path, mmap=False, verify=verify)
        with pytest.raises(CorruptionError, match="open for writing"):
            filters.from_bytes(path.read_bytes())


def test_a_clean_exit_without_close_flushes(tmp_path):
    f, path = _saved("blocked", tmp_path)
    script = CRASH.replace("os._exit(0)", "").replace('g.add("after flush")', 'g.add("after flush")\n    del g')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for when in ("flush", "exit"):
        subprocess.run([sys.executable, "-c", script, str(path), when], check=True, env=env)
        h = filters.open(path, mmap=False)
        assert h.might_contain_many(MORE).all()


@pytest.mark.parametrize("name", writable_families())
def test_nothing_changes_after_a_raising_call(name, tmp_path):
    _, path = _saved(name, tmp_path)
    before = path.read_bytes()
    with filters.open(path, mmap="r+") as g:
        snapshot = g.to_bytes()
        with pytest.raises(KeyTypeError):
            g.add_many(["fine", 1.5])
        with pytest.raises(InvalidArgument):
            g.add_many(MORE, threads=0)
        if hasattr(g, "remove_many"):
            with pytest.raises(KeyError):
                g.remove_many([KEYS[0], "never added"])
        assert g.to_bytes() == snapshot
    assert path.read_bytes() == before


def test_on_full_raise_adds_nothing_to_the_file(tmp_path):
    f = filters.create("blocked:10", capacity=100, on_full="raise")
    f.add_many(range(100))
    path = tmp_path / "f.blm"
    f.save(path)
    before = path.read_bytes()
    with filters.open(path, mmap="r+") as g:
        assert g.on_full == "raise"  # the policy is in the bytes now
        with pytest.raises(FilterFull):
            g.add_many(range(100, 10_000))
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", [n for n in all_families() if n not in writable_families()])
def test_static_and_growing_families_refuse(name, tmp_path):
    _, path = _saved(name, tmp_path)
    with pytest.raises(InvalidArgument, match="mmap='r\\+'"):
        filters.open(path, mmap="r+")
    # the refusal released the file: a reader and another refusal both work
    assert filters.open(path, mmap=True).might_contain_many(KEYS).all()


def test_bad_mode_is_refused(tmp_path):
    _, path = _saved("blocked", tmp_path)
    for bad in ("w", "r+b", 1, None):
        with pytest.raises(InvalidArgument, match="mmap must be"):
            filters.open(path, mmap=bad)


def test_one_writer_per_file(tmp_path):
    _, path = _saved("blocked", tmp_path)
    g = filters.open(path, mmap="r+")
    with pytest.raises(FilterInUse):
        filters.open(path, mmap="r+")
    with pytest.raises(FilterInUse):
        filters.open(path, mmap=True)  # a reader's map would change under it
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    other = subprocess.run(
        [sys.executable, "-c", "import sys; from bloomdb import filters; filters.open(sys.argv[1], mmap='r+')", str(path)],
        env=env, capture_output=True, text=True,
    )
    assert other.returncode != 0 and "FilterInUse" in other.stderr
    g.close()
    with filters.open(path, mmap="r+") as h:  # the lock went with close
        h.add("x")
    reader = filters.open(path, mmap=True)
    with pytest.raises(FilterInUse):
        filters.open(path, mmap="r+")
    del reader


def test_writes_from_many_threads_land(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    _, path = _saved("blocked", tmp_path, keys=[], capacity=80_000)
    chunks = [np.arange(i * 10_000, (i + 1) * 10_000, dtype=np.uint64) for i in range(8)]
    with filters.open(path, mmap="r+") as g:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(g.add_many, chunks))
    h = filters.open(path, mmap=False)
    assert h.count == 80_000 and h.might_contain_many(np.concatenate(chunks)).all()


@pytest.mark.parametrize("name", writable_families())
def test_a_file_smaller_than_a_page(name, tmp_path):
    """A small filter's file is under one page (4 KiB): its first add and its flush sync the whole
    file (they asked for a page and raised ValueError "flush values out of range")."""
    f = filters.create(name, capacity=100) if name != "register" else filters.create("register:2", size_bytes=1024)
    path = tmp_path / f"{name}.blm"
    f.save(path)
    assert path.stat().st_size < 4096
    with filters.open(path, mmap="r+") as g:
        g.add_many(KEYS[:50])
        with pytest.raises(CorruptionError, match="open for writing"):
            filters.open(path, mmap=False)
        g.flush()
        assert filters.open(path, mmap=False).might_contain_many(KEYS[:50]).all()
        g.add("last")
    h = filters.open(path, mmap=False)
    assert h.count == 51 and h.might_contain_many(KEYS[:50] + ["last"]).all()
