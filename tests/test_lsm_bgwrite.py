"""The background write work made cheaper (issue 14 part 2, seventh session): a table's build in
one kernel call, with its blocks' CRCs put in by the kernel; the files are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from bloomdb.checksum import HW_RANGES, crc32c
from bloomdb.lsm import DB
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.sstable import builder
from bloomdb.lsm.sstable import _block_kernels as BK
from bloomdb.lsm.sstable import _table_kernels as TK
from bloomdb.lsm.sstable.block import TRAILER
from bloomdb.lsm.sstable.builder import build_table_arrays, pack_bytes
from lsm_helpers import ManifestHookFS, small_options


def _entries(seed: int, n: int = 3000):
    """Sorted entries with repeated keys (several versions), deletions and empty values."""
    rng = np.random.default_rng(seed)
    keys = sorted({b"k%07d" % rng.integers(0, 10 * n) + b"x" * int(rng.integers(0, 40)) for _ in range(n)})
    ks, trs, vs = [], [], []
    seq = 10 * n
    for k in keys:
        for _ in range(int(rng.integers(1, 4))):
            live = int(rng.random() > 0.2)
            ks.append(k)
            trs.append((seq << 8) | live)
            vs.append(bytes(rng.integers(0, 256, int(rng.integers(0, 300)), np.uint8)) if live else b"")
            seq -= 1
    kd, ko = pack_bytes(ks)
    vd, vo = pack_bytes(vs)
    return kd, ko, np.array(trs, np.uint64), vd, vo


@pytest.mark.parametrize("seed", [1, 2])
def test_one_call_table_build_gives_the_separate_steps_answers(seed):
    kd, ko, tr, vd, vo = _entries(seed)
    vidx = np.arange(tr.shape[0], dtype=np.int64)
    framed, offs, sizes, lasts, vbytes, index, first, lo, hi, dels = TK.frame_table(
        kd, ko, tr, vd, vo, vidx, 4096, 16, TRAILER, True)
    f2, o2, s2, l2, vb2 = BK.encode_blocks(kd, ko, tr, vd, vo, vidx, 4096, 16, TRAILER)
    assert np.array_equal(framed, f2) and np.array_equal(offs, o2) and np.array_equal(sizes, s2)
    assert np.array_equal(lasts, l2) and vbytes == vb2
    assert np.array_equal(index, TK.encode_index(kd, ko, lasts, offs, sizes))
    assert np.array_equal(first, BK.first_of_key(kd, ko))
    assert (lo, hi, dels) == tuple(TK.trailer_stats(tr))
    assert TK.frame_table(kd, ko, tr, vd, vo, vidx, 4096, 16, TRAILER, False)[6].shape[0] == 0


@pytest.mark.skipif(not HW_RANGES, reason="the in-kernel CRC needs SSE4.2")
def test_in_kernel_block_crcs_are_the_librarys():
    kd, ko, tr, vd, vo = _entries(3)
    vidx = np.arange(tr.shape[0], dtype=np.int64)
    framed, offs, sizes = TK.frame_table_crc(kd, ko, tr, vd, vo, vidx, 4096, 16, TRAILER, True)[:3]
    mv = memoryview(framed)
    for o, z in zip(offs.tolist(), sizes.tolist()):
        assert framed[o + z] == 0  # raw
        assert int.from_bytes(bytes(mv[o + z + 1 : o + z + 5]), "little") == crc32c(mv[o : o + z + 1])


@pytest.mark.parametrize("spec,parts", [("blocked:10", 0), ("blocked:10", 2), (None, 0)])
def test_tables_are_byte_identical_with_and_without_the_in_kernel_crc(tmp_path, monkeypatch, spec, parts):
    kd, ko, tr, vd, vo = _entries(4)
    fs = RealFS(fsync=False)
    paths = []
    for hw in (True, False):
        if hw and not HW_RANGES:
            continue
        monkeypatch.setattr(builder, "HW_RANGES", hw)
        p = str(tmp_path / f"{int(hw)}.sst")
        build_table_arrays(fs, p, 7, kd, ko, tr, vd, vo, spec, 4096, 16, None, partition_blocks=parts)
        paths.append(p)
    blobs = [open(p, "rb").read() for p in paths]
    assert all(b == blobs[0] for b in blobs)


def test_a_store_built_through_the_one_call_kernel_reads_back_like_a_dict(tmp_path):
    rng = np.random.default_rng(5)
    model = {}
    with DB.open(tmp_path / "s", small_options()) as db:
        for i in range(6000):
            k = b"key%05d" % rng.integers(0, 3000)
            if rng.random() < 0.15:
                db.delete(k)
                model.pop(k, None)
            else:
                v = bytes(rng.integers(0, 256, int(rng.integers(0, 200)), np.uint8))
                db.put(k, v)
                model[k] = v
        db.wait_for_compactions()
    with DB.open(tmp_path / "s", small_options()) as db:
        assert dict(db.scan()) == model
        assert all(db.get(k) == v for k, v in model.items())


# -- the manifest as a log of whole states ---------------------------------------------------------
import os  # noqa: E402

from bloomdb.errors import CorruptionError  # noqa: E402
from bloomdb.lsm import manifest as mf  # noqa: E402
from bloomdb.lsm.sstable.builder import TableInfo  # noqa: E402


def _state(k: int) -> mf.ManifestState:
    return mf.ManifestState(100 + k, 1000 * k, 7 + k, [(k % 3, TableInfo(5 + i, 4096 * i, i, b"a%d" % i, b"z%d" % k,
                                                                          i, 2 * i)) for i in range(k + 1)])


def _v1(s: mf.ManifestState) -> bytes:
    """The manifest as the first format wrote it (one record, no header CRC)."""
    import struct

    body = mf.encode(s)[mf._HEAD2.size :]
    return struct.pack("<8sIII", mf.MAGIC, 1, crc32c(body), len(body)) + body


def test_a_manifest_log_reads_as_its_last_record_and_a_torn_append_as_the_one_before():
    recs = [mf.encode(_state(k)) for k in range(3)]
    whole = b"".join(recs)
    assert mf.decode(whole, "M") == _state(2)
    base = len(recs[0]) + len(recs[1])
    for cut in range(base, len(whole)):  # every prefix of the last record: a crash mid-append
        assert mf.decode(whole[:cut], "M") == _state(1), cut
    assert mf.decode(_v1(_state(4)), "M") == _state(4)  # the first format is still read


@pytest.mark.parametrize("zeros", [1, 19, 24, 300])
def test_a_zero_filled_tail_after_a_whole_record_is_a_torn_append_but_not_before_one(zeros):
    # a power loss can leave an append's new size with its bytes unwritten (zeros on XFS/ext4)
    recs = [mf.encode(_state(k)) for k in range(2)]
    assert mf.decode(b"".join(recs) + bytes(zeros), "M") == _state(1)
    big = [mf.encode(_state(k)) for k in (0, 400)]  # the second record spans pages
    assert len(big[1]) > 3 * 4096
    for keep in (4096, 8192):  # the pages before a page boundary reached the disk, the rest are zeros
        cut = keep - len(big[0])
        torn = big[0] + big[1][:cut] + bytes(len(big[1]) - cut)
        assert mf.decode(torn, "M") == _state(0)
        bad = bytearray(torn)
        bad[len(big[0]) + 10] ^= 0x04  # ...but a flipped bit in its header is damage
        with pytest.raises(CorruptionError):
            mf.decode(bytes(bad), "M")
    with pytest.raises(CorruptionError):  # zeros with nothing whole before them: no state to read
        mf.decode(bytes(zeros + 24), "M")
    with pytest.raises(CorruptionError):  # a nonzero byte after zeros is damage, not a torn tail
        mf.decode(b"".join(recs) + bytes(zeros) + b"\x01", "M")


def test_any_damaged_byte_of_a_manifest_log_is_corruption_never_an_older_state():
    whole = mf.encode(_state(1)) + mf.encode(_state(2))
    for i in range(len(whole)):
        for bit in (0x01, 0x80):
            bad = bytearray(whole)
            bad[i] ^= bit
            with pytest.raises(CorruptionError):
                mf.decode(bytes(bad), "M")
    with pytest.raises(CorruptionError):  # a cut inside the FIRST record: nothing whole to read
        mf.decode(whole[: len(mf.encode(_state(1))) - 1], "M")


class _CountingFS(ManifestHookFS):
    def __init__(self):
        super().__init__()
        self.writes = self.replaced = 0

    def before_manifest_write(self, path):
        self.writes += 1

    def write_atomic(self, path, data):
        self.replaced += os.path.basename(path) == "MANIFEST"
        super().write_atomic(path, data)


def test_edits_append_to_the_manifest_and_a_reopen_sees_the_last(tmp_path):
    fs = _CountingFS()
    model = {}
    with DB.open(tmp_path / "s", small_options(fs=fs)) as db:
        for i in range(8000):
            k, v = b"k%05d" % (i * 7919 % 5000), b"v%d" % i
            db.put(k, v)
            model[k] = v
        db.wait_for_compactions()
        tables = sorted(r.number for r in db._version.all_refs())
    assert fs.writes > 20 and fs.replaced <= 1 + fs.writes // 16  # the process's first write, rewrites past the bound
    raw = open(tmp_path / "s" / "MANIFEST", "rb").read()
    assert sorted(t.number for _, t in mf.decode(raw, "M").tables) == tables
    with DB.open(tmp_path / "s", small_options()) as db:
        assert dict(db.scan()) == model


def test_a_reopen_after_a_torn_manifest_append_replaces_the_file_before_appending(tmp_path):
    p = tmp_path / "s"
    with DB.open(p, small_options()) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"v" * 40)
        db.wait_for_compactions()
    mpath = p / "MANIFEST"
    torn = mf.encode(_state(3))[:30]  # a crash mid-append (not acknowledged: nothing depends on it)
    with open(mpath, "ab") as fh:
        fh.write(torn)
    with DB.open(p, small_options()) as db:
        assert db.get(b"k00017") == b"v" * 40
        for i in range(3000, 6000):
            db.put(b"k%05d" % i, b"w" * 40)
        db.wait_for_compactions()
        assert torn not in open(mpath, "rb").read()  # replaced before the first append
    with DB.open(p, small_options()) as db:
        assert db.get(b"k00017") == b"v" * 40 and db.get(b"k05999") == b"w" * 40


# -- a compaction's inputs in two kernel calls -------------------------------------------------
from bloomdb.lsm.compaction import _merge_kernels as MK  # noqa: E402
from bloomdb.lsm.compaction import executor  # noqa: E402
from bloomdb.lsm.sstable.cached_reader import open_table  # noqa: E402
from bloomdb.lsm.sstable.reader import decode_tables  # noqa: E402


def _tables(tmp_path, compression=None, count=3):
    fs = RealFS(fsync=False)
    out = []
    for t in range(count):
        kd, ko, tr, vd, vo = _entries(10 + t, 1500)
        p = str(tmp_path / f"{t:06d}.sst")
        build_table_arrays(fs, p, t, kd, ko, tr, vd, vo, "blocked:10", 4096, 16, compression)
        out.append(p)
    return fs, out


def _same(a, b):
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_one_call_decode_of_the_inputs_gives_the_table_by_table_answer(tmp_path):
    fs, paths = _tables(tmp_path)
    tables = [open_table(fs, p, i) for i, p in enumerate(paths)]
    got, counts = executor.decode_inputs(tables)
    want, wcounts = decode_tables([open_table(fs, p, i) for i, p in enumerate(paths)])
    _same(got, want)
    assert counts == wcounts and sum(counts) == got[2].shape[0]
    if HW_RANGES:  # the one-call path was taken (not the fallback)
        views = [t.lookup_arrays() for t in tables]
        words = np.array([(b.ctypes.data, b.shape[0], i.ctypes.data, i.shape[0]) for b, i, _ in views], np.int64)
        ok, *arrays, kc = MK.decode_inputs(words.ravel())
        assert ok and kc.tolist() == counts
        _same(arrays, want)


@pytest.mark.parametrize("where", ["block", "crc"])
def test_a_damaged_input_block_is_corruption_naming_its_table(tmp_path, where):
    fs, paths = _tables(tmp_path)
    t1 = open_table(fs, paths[1], 1)
    off, size = t1.offsets[2], t1.sizes[2]
    pos = off + size // 2 if where == "block" else off + size + 2
    del t1
    with open(paths[1], "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0x10]))
    tables = [open_table(fs, p, i) for i, p in enumerate(paths)]
    with pytest.raises(CorruptionError) as e:
        executor.decode_inputs(tables)
    assert e.value.path == paths[1]


def test_compressed_inputs_decode_through_the_table_by_table_path(tmp_path):
    pytest.importorskip("zstandard")
    fs, paths = _tables(tmp_path, "zstd")
    got, counts = executor.decode_inputs([open_table(fs, p, i) for i, p in enumerate(paths)])
    want, wcounts = decode_tables([open_table(fs, p, i) for i, p in enumerate(paths)])
    _same(got, want)
    assert counts == wcounts


@pytest.mark.parametrize("bottom,snap", [(True, 10 ** 9), (False, 10 ** 9), (True, 12000)])
def test_merge_and_split_in_one_call_gives_the_three_steps_answers(bottom, snap):
    parts = [_entries(20 + r, 800) for r in range(3)]
    kd, ko = pack_bytes([p[0][p[1][i] : p[1][i + 1]].tobytes() for p in parts for i in range(len(p[1]) - 1)])
    tr = np.concatenate([p[2] for p in parts])
    vd, vo = pack_bytes([p[3][p[4][i] : p[4][i + 1]].tobytes() for p in parts for i in range(len(p[4]) - 1)])
    starts = np.cumsum([0] + [p[2].shape[0] for p in parts]).astype(np.int64)
    idx, gk, go, gt, cuts = MK.merge_and_split(kd, ko, tr, vo, starts, snap, bottom, 16 << 10)
    want = MK.merge_runs(kd, ko, tr, starts, snap, bottom)
    assert np.array_equal(idx, want) and np.array_equal(gt, tr[want])
    wk, wo = BK.gather(kd, ko, want)
    assert np.array_equal(gk, wk) and np.array_equal(go, wo)
    vs = np.zeros(want.shape[0] + 1, np.int64)
    np.cumsum(vo[want + 1] - vo[want], out=vs[1:])
    assert np.array_equal(cuts, MK.split_points(wk, wo, vs, 16 << 10)) and len(cuts) > 2


# -- compaction outputs written beside the next output's build (executor.OutputFiles) ----------
from bloomdb.lsm.compaction import executor as EX  # noqa: E402


def test_output_files_come_back_in_order_from_the_file_writer_thread():
    import threading

    names = []

    def make(i):
        def finish():
            names.append(threading.current_thread().name)
            return f"table{i}"
        return finish

    files = EX.OutputFiles(depth=2)
    for i in range(5):
        files.add(f"info{i}", make(i))
    assert files.results() == [(f"info{i}", f"table{i}") for i in range(5)]
    assert len(names) == 5 and all(n.startswith("bloomdb-lsm-files") for n in names)


def test_output_files_wait_for_every_write_then_raise_the_first_failure():
    import threading

    done = []
    gate = threading.Event()

    def ok(i):
        def finish():
            gate.wait(5)
            done.append(i)
            return i
        return finish

    def bad():
        raise OSError("fsync failed")

    files = EX.OutputFiles(depth=8)
    files.add("a", ok(0))
    files.add("b", bad)
    files.add("c", ok(2))
    gate.set()
    with pytest.raises(OSError, match="fsync failed"):
        files.results()
    assert done == [0, 2]  # nothing still writing once the compaction gave up


def test_a_failed_output_fsync_installs_nothing_and_stops_writes(tmp_path):
    """A compaction whose output's fsync fails (in the file writer thread) raises, installs no
    edit (the manifest still names the inputs) and stops the store's writes; a reopen reads all."""
    from bloomdb.errors import BloomDBError
    from bloomdb.lsm.fs import FaultyFS

    fs = FaultyFS()
    o = small_options(fs=fs, background_compaction=False, level0_trigger=100, level0_stop=200)
    model = {}
    with DB.open(tmp_path / "s", o) as db:
        for i in range(3000):
            k, v = b"k%05d" % (i * 7919 % 3000), b"v%d" % i
            db.put(k, v)
            model[k] = v
        db.flush()
        before = [len(lv) for lv in db._version.levels]
        fs.fail_sync = True
        with pytest.raises(OSError, match="fsync failed"):  # the file writer thread's failure, re-raised
            db.compact_range()
        assert [len(lv) for lv in db._version.levels] == before
        with pytest.raises(BloomDBError):
            db.put(b"x", b"y")
        fs.fail_sync = False
    with DB.open(tmp_path / "s", small_options()) as db:
        assert dict(db.scan()) == model


def test_a_manifest_record_encoded_with_the_table_cache_is_the_same_bytes_and_the_cache_forgets_dead_tables():
    # each table's part is encoded once per level (the store keeps the cache; a number names one
    # table for ever): the same record as encoding it whole, a table moved to another level
    # encoded again, dropped tables pruned
    def state(k: int) -> mf.ManifestState:
        return mf.ManifestState(100 + k, 1000 * k, 7, [(i % 3, TableInfo(5 + i, 4096 * i, i, b"a%d" % i, b"z%d" % i,
                                                                       i, 2 * i)) for i in range(k, 2 * k + 1)])

    cache: dict = {}
    for k in range(12):
        s = state(k)
        assert mf.encode(s, cache) == mf.encode(s)
        mf.prune(cache, s)
    moved = mf.ManifestState(9, 9, 9, [(lvl + 1, t) for lvl, t in state(11).tables])
    assert mf.encode(moved, cache) == mf.encode(moved)
    assert mf.decode(mf.encode(moved, cache), "M") == moved
    cache.update({(1000 + i) << 3: b"stale" for i in range(100)})  # parts of tables no record lists any more
    mf.prune(cache, moved)
    assert set(cache) == {t.number << 3 | lvl for lvl, t in moved.tables}
    assert mf.encode(moved, cache) == mf.encode(moved)
