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
from lsm_helpers import small_options


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
