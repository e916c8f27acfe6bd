"""Write one table from sorted entries (the only writer of table files).

Cost: the data blocks are encoded by one numba kernel pass straight into the file's layout
(:func:`_block_kernels.encode_blocks`: values read where they lie, room left for each block's
trailer, so no framing copy); the filter
is built by the store's filter family from the table's distinct user keys in one batch
(``bloomdb.filters.build``, sized for exactly those keys, so it never saturates); per block one
CRC32C and, if asked, one compression call.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ... import filters
from ...checksum import HW_RANGES, crc32c
from ...errors import FilterBuildError, FilterFull
from . import _block_kernels as K
from . import _table_kernels as TK
from .block import RAW, TRAILER, compression_code, frame
from .footer import Handles, Meta, encode_footer, encode_meta


@dataclass(frozen=True)
class TableInfo:
    """What the manifest records about a table."""

    number: int
    file_size: int
    entries: int
    min_key: bytes
    max_key: bytes
    min_seq: int
    max_seq: int


def pack_bytes(items: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``items`` packed in Arrow layout: ``(data uint8, offsets int64 of len(items) + 1)``."""
    data = np.frombuffer(b"".join(items), dtype=np.uint8)
    off = np.zeros(len(items) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, items), np.int64, len(items)), out=off[1:])
    return data, off


def build_table(fs, path: str, number: int, keys: list[bytes], trailers: list[int], values: list[bytes],
                filter_spec: str | None, block_size: int, restart_interval: int,
                compression: str | None, sync: bool = True, partition_blocks: int = 0) -> TableInfo:
    """Write ``keys``/``trailers``/``values`` (sorted: key ascending, sequence descending; a
    trailer is ``seq << 8 | type``, type 1 value, 0 deletion with value ``b""``) to ``path``.
    """
    if not keys:
        raise ValueError("a table needs at least one entry")
    kdata, koff = pack_bytes(keys)
    vdata, voff = pack_bytes(values)
    return build_table_arrays(fs, path, number, kdata, koff, np.asarray(trailers, dtype=np.uint64), vdata, voff,
                              filter_spec, block_size, restart_interval, compression, sync, partition_blocks)


PARTITION_MAGIC = b"BDBP"
#: A table is written as ``NNNNNN.sst.tmp`` and renamed when complete: a file named ``.sst``
#: always ends in the table footer, and a crash mid-build leaves a ``.tmp`` that recovery knows
#: is the store's own (the store's garbage collection never guesses from a name alone).
TMP_SUFFIX = ".tmp"


def _filter_bytes(spec: str, kdata, koff, first, a: int, b: int) -> bytes:
    """The serialized filter of the distinct keys among entries ``a..b``."""
    sel = np.flatnonzero(first[a:b]) + a
    if sel.shape[0] == b - a:
        kd, ko = kdata[koff[a] : koff[b]], koff[a : b + 1] - koff[a]
    else:
        kd, ko = K.gather(kdata, koff, sel)
    import pyarrow as pa  # the packed keys handed over in Arrow layout: no copy

    keys_arr = pa.Array.from_buffers(pa.large_binary(), ko.shape[0] - 1,
                                     [None, pa.py_buffer(np.ascontiguousarray(ko)), pa.py_buffer(np.ascontiguousarray(kd))])
    return filters.build(spec, keys_arr, **table_filter_kwargs(spec)).to_bytes()


#: Bits per key of a table's filter when its spec gives a fixed size (``register:2``).
TABLE_BITS_PER_KEY = 10.0


def table_filter_kwargs(spec: str) -> dict:
    """Keywords that size one table's filter from its key count: ``{}`` for families that do so
    already; ``bits_per_key=TABLE_BITS_PER_KEY`` for a family whose plain spec is a fixed size
    (``register:2`` would cost 256 KiB per table whatever its size; ``register:2:8`` says 8)."""
    name, arg = filters.parse_spec(spec)
    cls = filters.family(name)
    if cls.sized_by_count or (arg is not None and "bits_per_key" in cls.spec_kwargs(arg)):
        return {}
    return {"bits_per_key": TABLE_BITS_PER_KEY}


#: Keys of the trial build of :func:`filter_spec_problem`: empty, binary, short and long keys.
_TRIAL_KEYS = [b"", b"\x00", b"\xff\x00\x01", b"a", b"bloomdb", b"k" * 17, bytes(range(64))] + [b"%08d" % i for i in range(64)]


#: Specs that passed :func:`filter_spec_problem` in this process (a refusal is not kept: a family
#: registered later may make it pass).
PASSED_SPECS: set[str] = set()


def filter_spec_problem(spec: str) -> str | None:
    """Why tables cannot carry filter ``spec`` (``None``: they can). The filter is built over a
    few keys exactly as a table builds it, read back from its bytes by the reader's path
    (:func:`bloomdb.filters.from_bytes`) and asked for every key through the family's contract:
    an exception (a bad family or parameter: ``"blocked:-1"``, ``"cuckoo:10"``), a false
    negative or another family read back is a reason. Cost: one tiny build (the family's
    kernels are loaded once per process), once per spec per process when it passes
    (:data:`PASSED_SPECS`: every ``DB.open`` validates its options)."""
    if spec in PASSED_SPECS:
        return None
    try:
        kdata, koff = pack_bytes(_TRIAL_KEYS)
        blob = _filter_bytes(spec, kdata, koff, np.ones(len(_TRIAL_KEYS), np.bool_), 0, len(_TRIAL_KEYS))
        f = filters.from_bytes(blob)
        name, _ = filters.parse_spec(spec)
        if f.family != name:
            return f"a {name} filter reads back as family {f.family!r}"
        lost = [k for k in _TRIAL_KEYS if not f.might_contain(k)]
    except Exception as e:  # noqa: BLE001 - every failure is a reason to refuse the spec
        return f"{type(e).__name__}: {e}"
    if lost:
        return f"the filter read back from its bytes misses {len(lost)} of {len(_TRIAL_KEYS)} keys it was built from"
    PASSED_SPECS.add(spec)
    return None


def _table_filter(spec: str | None, kdata, koff, lasts, first, partition_blocks: int):
    """``(filter bytes, [])`` for one filter per table, or ``(b"", [(partition filter, its last
    key), ...])`` for partitioned filters. A filter the family cannot build for these keys (a
    cuckoo table that fills, a ribbon that finds no seed: rare) gives a table without a filter,
    ``(b"", [])``: every lookup then reads the table -- slower, never a wrong answer, and the
    store keeps running instead of stopping on a flush that can never succeed. ``first``: entry
    ``i`` is the newest version of its key (:func:`._block_kernels.first_of_key`)."""
    if spec is None:
        return b"", []
    n = first.shape[0]
    try:
        if partition_blocks <= 0:
            return _filter_bytes(spec, kdata, koff, first, 0, n), []
        lasts_l = lasts.tolist()
        out = []
        a = 0
        for g in range(0, len(lasts_l), partition_blocks):
            b = lasts_l[min(g + partition_blocks, len(lasts_l)) - 1] + 1
            out.append((_filter_bytes(spec, kdata, koff, first, a, b), kdata[koff[b - 1] : koff[b]].tobytes()))
            a = b
        return b"", out
    except (FilterFull, FilterBuildError):
        return b"", []


def _prefix_filter(prefix, spec: str | None, kdata, koff) -> tuple[str | None, bytes]:
    """``(extractor name, filter bytes)`` of the distinct prefixes of the keys (``(None, b"")``
    without an extractor or a filter spec, or when the family cannot build it). Cost: one
    extractor call per entry, then one filter build."""
    if prefix is None or spec is None:
        return None, b""
    import pyarrow as pa

    keys = pa.Array.from_buffers(pa.large_binary(), koff.shape[0] - 1, [None, pa.py_buffer(np.ascontiguousarray(koff)),
                                                                         pa.py_buffer(np.ascontiguousarray(kdata))])
    seen = set(map(prefix, keys.to_pylist()))
    seen.discard(None)
    try:
        blob = filters.build(spec, pa.array(sorted(seen), pa.large_binary())).to_bytes() if seen else b""
    except (FilterFull, FilterBuildError):
        return None, b""
    return prefix.name, blob


def build_table_arrays(fs, path: str, number: int, kdata, koff, tr, vdata, voff, filter_spec: str | None,
                       block_size: int, restart_interval: int, compression: str | None,
                       sync: bool = True, partition_blocks: int = 0, range_dels: tuple = (), prefix=None,
                       whole_key_filter: bool = True, vidx=None) -> TableInfo:
    """:func:`build_table` over packed arrays: :func:`table_parts` written by :func:`write_table_file`."""
    parts, info = table_parts(number, kdata, koff, tr, vdata, voff, filter_spec, block_size, restart_interval,
                              compression, partition_blocks, range_dels, prefix, whole_key_filter, vidx)
    write_table_file(fs, path, parts, sync)
    return info


def table_parts(number: int, kdata, koff, tr, vdata, voff, filter_spec: str | None, block_size: int,
                restart_interval: int, compression: str | None, partition_blocks: int = 0, range_dels: tuple = (),
                prefix=None, whole_key_filter: bool = True, vidx=None) -> tuple[list, TableInfo]:
    """The bytes of a table as ``(parts, TableInfo)`` (the file is the parts in order), nothing
    written: :func:`build_table` over packed arrays (Arrow layout: ``kdata``/``koff`` user keys,
    ``vdata``/``voff`` values, ``tr`` uint64 trailers): no Python object per entry.

    ``partition_blocks > 0``: partitioned filters, one filter per ``partition_blocks`` data
    blocks (each stored as its own block), and the filter block holds their index.
    ``range_dels``: range tombstones ``(start, end, seq)`` kept in the meta block (their
    sequences count in the table's ``min_seq``/``max_seq``). ``prefix``: an extractor (``name``,
    ``key -> prefix or None``): a filter of ``filter_spec`` over the distinct prefixes goes into the
    meta block (:func:`_prefix_filter`). ``whole_key_filter=False``: no filter over whole keys.
    ``vidx``: entry ``i``'s value is item ``vidx[i]`` of ``vdata``/``voff`` (default: item ``i``),
    so a caller that sorted or selected entries need not gather their values first."""
    n = koff.shape[0] - 1
    if n <= 0:
        raise ValueError("a table needs at least one entry")

    def key(i):
        return kdata[koff[i] : koff[i + 1]].tobytes()

    if vidx is None:
        vidx = np.arange(n, dtype=np.int64)
    code = compression_code(compression)
    parts: list = []
    want_first = filter_spec is not None and whole_key_filter
    if code == RAW:  # blocks encoded in place with room for their trailers, CRCs put in by the kernel
        kernel = TK.frame_table_crc if HW_RANGES else TK.frame_table
        framed, offs, sizes, lasts, vbytes, index, first, lo, hi, dels = kernel(
            kdata, koff, tr, vdata, voff, vidx, block_size, restart_interval, TRAILER, want_first)
        if not HW_RANGES:  # one library call per block
            mv = memoryview(framed)
            crcs = [crc32c(mv[o : o + z + 1]) for o, z in zip(offs.tolist(), sizes.tolist())]
            TK.put_u32(framed, offs + sizes + 1, np.array(crcs, np.int64))
        parts.append(framed)
        pos = framed.shape[0]
    else:
        out, starts, bsizes, lasts, vbytes, _, first, lo, hi, dels = TK.frame_table(
            kdata, koff, tr, vdata, voff, vidx, block_size, restart_interval, 0, want_first)
        raw = out.tobytes()
        offl, sizel = [], []
        pos = 0
        for a, z in zip(starts.tolist(), bsizes.tolist()):
            framed = frame(raw[a : a + z], code)
            offl.append(pos)
            sizel.append(len(framed) - TRAILER)
            parts.append(framed)
            pos += len(framed)
        offs, sizes = np.array(offl, np.int64), np.array(sizel, np.int64)
        index = TK.encode_index(kdata, koff, lasts, offs, sizes)
    # filter: distinct user keys (versions of a key are adjacent)
    fbytes, pblocks = _table_filter(filter_spec if want_first else None, kdata, koff, lasts, first, partition_blocks)
    if pblocks:  # one filter per group of data blocks, each its own checked block, then their index
        pindex = [PARTITION_MAGIC, struct.pack("<I", len(pblocks))]
        for blob, lk in pblocks:
            pindex.append(struct.pack("<QII", pos, len(blob), len(lk)))
            pindex.append(lk)
            framed = frame(blob, 0)
            parts.append(framed)
            pos += len(framed)
        fbytes = b"".join(pindex)
    rseqs = [q for _, _, q in range_dels]
    meta = Meta(n, int(dels), min([int(lo)] + rseqs), max([int(hi)] + rseqs), int(koff[-1] - koff[0]),
                int(vbytes), len(lasts), key(0), key(n - 1), filter_spec if fbytes else None,
                tuple(range_dels), *_prefix_filter(prefix, filter_spec, kdata, koff))
    handles = []
    for blob in (fbytes, encode_meta(meta), index):
        framed = frame(blob, 0)
        handles.append((pos, len(blob)))
        parts.append(framed)
        pos += len(framed)
    h = Handles(handles[0][0], handles[0][1], handles[1][0], handles[1][1], handles[2][0], handles[2][1])
    parts.append(encode_footer(h))
    return parts, TableInfo(number, pos + 64, n, meta.min_key, meta.max_key, meta.min_seq, meta.max_seq)


def write_table_file(fs, path: str, parts: list, sync: bool = True) -> None:
    """Write a table's ``parts`` (:func:`table_parts`) as ``path``: to ``path + TMP_SUFFIX``, fsynced
    (``sync``), closed, then renamed (a complete table only under its real name)."""
    tmp = path + TMP_SUFFIX  # complete tables only under their real name (see TMP_SUFFIX)
    f = fs.open_append(tmp)
    try:
        # two writes: the first part (uncompressed: every data block) as it is, no copy, and the
        # rest joined -- each write releases the GIL, and taking it back behind a busy writer
        # waits up to the switch interval (a compressed table's ~1000 block frames were as many)
        f.write(parts[0])
        if len(parts) > 1:
            f.write(b"".join(parts[1:]))
        if sync:
            f.sync()
    finally:
        f.close()
    fs.rename(tmp, path)
