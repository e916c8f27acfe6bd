"""The Filter protocol, checked for every registered family."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bloomdb import errors, filters
from filter_families import all_families, make_empty, make_filled

FAMILIES = all_families()

key_strategy = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
)


@pytest.mark.parametrize("name", FAMILIES)
@given(keys=st.lists(key_strategy, max_size=200))
def test_no_false_negatives_any_keys(name, keys):
    f = make_filled(name, keys, capacity=max(1, len(keys)))
    if keys:
        assert f.might_contain_many(keys).all()
        assert all(f.might_contain(k) for k in keys[:20])


@pytest.mark.parametrize("name", FAMILIES)
def test_no_false_negatives_batch_forms(name):
    rng = np.random.default_rng(7)
    ints = rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64)
    strs = [f"user:{i}:{i * 31}" for i in range(5000)]
    f = make_filled(name, list(ints) + strs, capacity=10_000)
    assert f.might_contain_many(ints).all()
    assert f.might_contain_many(ints.view(np.uint64)).all()
    assert f.might_contain_many(strs).all()
    assert f.might_contain_many(pa.array(strs)).all()
    assert f.might_contain_many(pa.array(strs, type=pa.large_string())).all()
    assert f.might_contain_many(pa.array([s.encode() for s in strs], type=pa.binary())).all()
    assert f.might_contain_many(pa.chunked_array([strs[:100], strs[100:]])).all()
    assert f.might_contain_many(pa.array(strs)[17:300]).all()
    assert f.might_contain_many(np.array(strs)).all()
    assert f.might_contain_many(np.array([s.encode() for s in strs], dtype=object)).all()
    assert f.might_contain(int(ints[3])) and f.might_contain(np.int64(ints[3]))
    assert f.might_contain(strs[9]) and f.might_contain(strs[9].encode())


@pytest.mark.parametrize("name", FAMILIES)
def test_int_and_bytes_encodings_agree(name):
    f = make_filled(name, [5, -1, 2**63])
    assert f.might_contain((5).to_bytes(8, "little"))
    assert f.might_contain(np.uint64(5))
    assert f.might_contain(2**64 - 1)  # -1 and 2**64-1 share the 8-byte encoding
    assert f.might_contain_many(np.array([2**63], dtype=np.uint64)).all()


@pytest.mark.parametrize("name", FAMILIES)
def test_round_trips(name, tmp_path):
    keys = [f"k{i}" for i in range(3000)]
    f = make_filled(name, keys, capacity=3000)
    probe = [f"k{i}" for i in range(0, 20000, 3)]
    expected = f.might_contain_many(probe)

    g = filters.from_bytes(f.to_bytes())
    assert type(g) is type(f) and g.count == f.count and g == f
    assert np.array_equal(g.might_contain_many(probe), expected)

    path = tmp_path / "f.blm"
    f.save(path)
    for use_mmap in (True, False):
        h = filters.open(path, mmap=use_mmap)
        assert np.array_equal(h.might_contain_many(probe), expected)
        assert h.to_bytes() == f.to_bytes()

    p = pickle.loads(pickle.dumps(f))
    assert np.array_equal(p.might_contain_many(probe), expected)

    c = f.copy()
    assert c == f and c._payload().ctypes.data != f._payload().ctypes.data


@pytest.mark.parametrize("name", FAMILIES)
def test_payload_is_cache_line_aligned(name, tmp_path):
    f = make_filled(name, [f"k{i}" for i in range(100)])
    assert f._payload().ctypes.data % 64 == 0
    assert filters.from_bytes(f.to_bytes())._payload().ctypes.data % 64 == 0
    f.save(tmp_path / "a.blm")
    assert filters.open(tmp_path / "a.blm", mmap=True)._payload().ctypes.data % 64 == 0


@pytest.mark.parametrize("name", FAMILIES)
def test_corruption_is_detected(name, tmp_path):
    f = make_filled(name, [f"k{i}" for i in range(500)])
    data = bytearray(f.to_bytes())
    rng = np.random.default_rng(3)
    for _ in range(40):
        bad = bytearray(data)
        pos = int(rng.integers(0, len(bad)))
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        if bad == data:
            continue
        with pytest.raises(errors.CorruptionError):
            filters.from_bytes(bytes(bad))
    for cut in (0, 3, 39, 63, len(data) - 1):
        with pytest.raises(errors.CorruptionError):
            filters.from_bytes(bytes(data[:cut]))
    with pytest.raises(errors.CorruptionError):
        filters.from_bytes(b"XXXX" + bytes(data[4:]))
    path = tmp_path / "bad.blm"
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(errors.CorruptionError) as exc:
        filters.open(path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("name", FAMILIES)
def test_union(name):
    a_keys = [f"a{i}" for i in range(1000)]
    b_keys = [f"b{i}" for i in range(1000)]
    cls = filters.family(name)
    if cls.static:
        pytest.skip("static filters are built once; union is defined for dynamic families")
    a = filters.create(cls.example_spec, capacity=2000)
    b = filters.create(cls.example_spec, capacity=2000)
    a.add_many(a_keys)
    b.add_many(b_keys)
    u = a | b
    assert u.might_contain_many(a_keys + b_keys).all()
    assert u.count == 2000
    a |= b
    assert a.might_contain_many(b_keys).all()
    other = filters.create(cls.example_spec, capacity=50_000)
    with pytest.raises(ValueError):
        a.union(other)


def test_union_refuses_other_family():
    a = filters.create("blocked:10", capacity=100)
    b = filters.create("standard:10", capacity=100)
    with pytest.raises(errors.IncompatibleFilters):
        a | b


@pytest.mark.parametrize("name", FAMILIES)
def test_empty_filter_contains_nothing(name):
    f = make_empty(name)
    assert not f.might_contain_many([f"x{i}" for i in range(100)]).any()
    assert f.count == 0


@pytest.mark.parametrize("name", FAMILIES)
def test_facts(name):
    f = make_filled(name, [f"k{i}" for i in range(1000)])
    assert f.num_bits > 0 and f.num_probes >= 1
    assert f.size_bytes * 8 >= f.num_bits
    assert 0.0 < f.fill_ratio() <= 1.0
    assert 0.0 <= f.estimated_fpr() < 1.0
    assert f.count == 1000
    s = f.stats()
    assert s["family"] == name
    with pytest.raises(TypeError):
        "k1" in f  # noqa: B015


@pytest.mark.parametrize("spec", ["standard:10", "blocked:10"])
def test_bad_parameters(spec):
    for cap in (0, -5, 1.5, None, True):
        with pytest.raises(errors.InvalidArgument):
            filters.create(spec, capacity=cap)
    name = spec.split(":")[0]
    for bpk in ("nan", "-1", "0", "abc"):
        with pytest.raises(errors.InvalidArgument):
            filters.create(f"{name}:{bpk}", capacity=10)
    cls = filters.family(name)
    for fpr in (0.0, 1.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError):
            cls(capacity=10, fpr=fpr)
    assert isinstance(errors.InvalidArgument("x"), ValueError)


def test_unknown_family_and_bad_spec():
    with pytest.raises(errors.InvalidArgument):
        filters.create("nosuch:10", capacity=10)
    with pytest.raises(errors.InvalidArgument):
        filters.create("", capacity=10)


def test_bad_keys():
    f = filters.create("blocked:10", capacity=10)
    with pytest.raises(errors.KeyTypeError):
        f.add(1.5)
    with pytest.raises(TypeError):
        f.add(None)
    with pytest.raises(ValueError):
        f.add(2**64)
    with pytest.raises(ValueError):
        f.add(-(2**63) - 1)
    with pytest.raises(TypeError):
        f.add_many("abc")  # a single string is not a batch
    with pytest.raises(TypeError):
        f.add_many([1, 2.5])
    with pytest.raises(TypeError):
        f.add_many(["a", None])
    with pytest.raises(ValueError):
        f.add_many(pa.array(["a", None]))
    with pytest.raises(TypeError):
        f.add_many(np.array([1.0, 2.0]))
    assert f.count == 0


def test_fpr_and_bits_parameters_agree():
    from bloomdb.filters.blocked import BlockedBloom
    from bloomdb.filters.standard import StandardBloom

    s = StandardBloom(capacity=10_000, fpr=0.01)
    assert 9.5 < s.num_bits / 10_000 < 9.7  # -ln(0.01)/ln2^2 = 9.585
    b = BlockedBloom(capacity=10_000, fpr=0.01)
    assert b.expected_fpr(b.num_bits / 10_000) <= 0.0101
    assert BlockedBloom(capacity=10_000, bits_per_key=10).num_probes == 6


def test_available_lists_families():
    names = [i.name for i in filters.available()]
    assert "standard" in names and "blocked" in names


@pytest.mark.parametrize("name", FAMILIES)
def test_probe_descriptor_is_the_familys_own_kernel(name):
    """The in-kernel probe contract (bloomdb.filters.probe): a family that publishes a descriptor
    answers through ``check_hash(*args, h)`` of the kernel module named for its (tag, version)
    exactly as ``might_contain_hashes``; a family without one returns None."""
    import importlib

    from bloomdb.filters import format as fmt
    from bloomdb.filters.probe import PROBE_KERNELS

    f = make_filled(name, [b"k%d" % i for i in range(2000)])
    d = f.probe_descriptor()
    if d is None:
        assert not type(f).has_probe_kernel
        return
    assert d.kind == (fmt.FAMILY_TAGS[name], type(f).family_version)
    kernels = importlib.import_module(PROBE_KERNELS[d.kind])
    h = np.random.default_rng(1).integers(0, 2**63, 3000, dtype=np.int64).astype(np.uint64)
    if name != "sbbf":  # sbbf hashes the plain encoding with XXH64; leveldb BloomHash; the others XXH3
        from bloomdb.hashing import hash_batch
        from bloomdb.keys import to_batches

        batch = to_batches([b"k%d" % i for i in range(2000)])[0]
        if name == "leveldb":  # LevelDB's BloomHash of the key bytes
            from bloomdb.filters.leveldb import bloom_hashes

            h[:2000] = bloom_hashes(batch)
        else:
            h[:2000] = hash_batch(batch)
    want = f.might_contain_hashes(h)
    got = np.array([kernels.check_hash(*d.args, x) for x in h])
    assert np.array_equal(got, want)
    if name != "sbbf":
        assert want[:2000].all()


@pytest.mark.parametrize("name", FAMILIES)
def test_hash_and_key_probes_write_into_out(name):
    f = make_filled(name, [b"a", b"b", 7])
    keys = [b"a", b"b", 7, b"zz"]
    out = np.ones(4, np.bool_)
    assert f.might_contain_many(keys, out=out) is out
    assert np.array_equal(out, f.might_contain_many(keys))
    h = np.arange(5, dtype=np.uint64)
    out = np.ones(5, np.bool_)
    try:
        want = f.might_contain_hashes(h)
    except NotImplementedError:
        return
    assert f.might_contain_hashes(h, out=out) is out and np.array_equal(out, want)


@pytest.mark.parametrize("bad", [np.zeros(3, np.bool_), np.zeros(4, np.int8), np.zeros((2, 2), np.bool_),
                                 np.zeros(8, np.bool_)[::2], [False] * 4])
def test_a_bad_out_array_is_refused(bad):
    f = filters.create("blocked:10", capacity=10)
    with pytest.raises(errors.InvalidArgument):
        f.might_contain_hashes(np.arange(4, dtype=np.uint64), out=bad)
    with pytest.raises(errors.InvalidArgument):
        f.might_contain_many([1, 2, 3, 4], out=bad)


def test_no_filters_module_imports_its_own_package():
    """``base`` and the families take what they need from modules (``registry``, ``format``),
    never from ``bloomdb.filters/__init__`` (a hidden cycle: the package imports them)."""
    import ast
    import pathlib

    folder = pathlib.Path(filters.__file__).parent
    for path in folder.glob("*.py"):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                for alias in node.names:
                    assert (folder / f"{alias.name}.py").exists(), f"{path.name} imports {alias.name!r} from the package"
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "bloomdb.filters":
                raise AssertionError(f"{path.name} imports the bloomdb.filters package")
