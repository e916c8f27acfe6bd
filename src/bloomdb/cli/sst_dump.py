"""``bloomdb sst-dump FILE``: what one table file holds (RocksDB's ``sst_dump``).

Prints the table's properties (entries, deletions, sequences, key range, sizes), its blocks
(count, raw/compressed), its index, its filter (family, spec, bytes, bits per key, probes and
the family's model FP rate, or its partitions), then verifies it: every block's CRC32C, the
filter readable, and every key of the table passing its own filter (a filter must never say
"absent" for a key it holds). ``--scan`` prints the entries (``key @ seq : type => value``).
Exit status: 0, or 1 when verification fails (what failed is printed).
"""

from __future__ import annotations

import argparse
import os
import re

import numpy as np

from .args import positive_int
from .ldb import show

NAME = "sst-dump"
HELP = "print a table file's properties, blocks, index and filter, and verify its checksums"
_KINDS = {0: "raw", 1: "zstd", 2: "lz4"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a table file (NNNNNN.sst)")
    p.add_argument("--scan", action="store_true", help="print the entries too")
    p.add_argument("--limit", type=positive_int, default=None, help="print at most N entries")
    p.add_argument("--hex", action="store_true", help="keys and values in hex")
    p.add_argument("--no-verify", action="store_true", help="skip the checksum and filter checks")


def run(args: argparse.Namespace) -> int:
    from ..lsm.fs import RealFS
    from ..lsm.sstable import Table

    path = args.file
    m = re.match(r"^(\d+)\.sst$", os.path.basename(path))
    t = Table(RealFS(), path, int(m.group(1)) if m else 0)  # footer, meta and index are checked here
    meta = t.meta
    with open(path, "rb") as fh:
        raw = fh.read()
    kinds = [raw[o + s] for o, s in zip(t.offsets, t.sizes)]
    print(f"file: {path} ({t.file_size:,} bytes)")
    print(f"entries: {meta.entries:,} ({meta.deletions:,} deletions), sequences {meta.min_seq}..{meta.max_seq}")
    print(f"keys: {show(meta.min_key, args.hex)} .. {show(meta.max_key, args.hex)} "
          f"({meta.key_bytes:,} key bytes, {meta.value_bytes:,} value bytes)")
    print("data blocks: %d (%s), %s bytes" % (
        len(kinds), ", ".join(f"{_KINDS.get(k, k)} {kinds.count(k)}" for k in sorted(set(kinds))), f"{sum(t.sizes):,}"))
    print(f"index: {len(t.last_keys)} entries (last key and offset of each data block)")
    _print_filter(t)
    code = 0 if args.no_verify else _verify(t)
    if args.scan:
        _scan(t, args)
    return code


def _print_filter(t) -> None:
    spec = t.meta.filter_spec
    f = t.filter()
    if t.filter_damaged:
        print(f"filter: {spec!r}, DAMAGED (the table answers 'may contain' for every key)")
    elif t.partitions is not None:
        print(f"filter: {spec!r}, partitioned: {len(t.partitions[0])} partitions, "
              f"{sum(t.partitions[2]):,} bytes, partition index {t.filter_bytes:,} bytes")
    elif f is None:
        print("filter: none")
    else:
        print(f"filter: {f.family} (spec {spec!r}), {t.filter_bytes:,} bytes, {f.bits_per_key:.2f} bits/key "
              f"over {f.capacity:,} keys, k={f.num_probes}, model FP rate {f.estimated_fpr():.3g}")


def _verify(t) -> int:
    from ..errors import CorruptionError

    try:
        kd, ko, _, _, _ = t.decode_arrays()  # every data block's CRC32C, then its entries
    except CorruptionError as e:
        print(f"verify: FAILED: {e}")
        return 1
    f = t.filter()
    if t.filter_damaged:
        print("verify: FAILED: the filter block is damaged")
        return 1
    if f is not None:
        keys = sorted({bytes(kd[ko[i] : ko[i + 1]]) for i in range(len(ko) - 1)})
        missed = int(np.count_nonzero(~np.asarray(f.might_contain_many(keys), bool)))
        if missed:
            print(f"verify: FAILED: the filter says 'absent' for {missed} of the table's {len(keys)} keys")
            return 1
    print(f"verify: OK (every block's CRC32C{'; every key passes the filter' if f is not None else ''})")
    return 0


def _scan(t, args) -> None:
    kd, ko, tr, vd, vo = t.decode_arrays()
    n = len(ko) - 1 if args.limit is None else min(args.limit, len(ko) - 1)
    for i in range(n):
        seq, kind = int(tr[i]) >> 8, int(tr[i]) & 0xFF
        k = show(kd[ko[i] : ko[i + 1]].tobytes(), args.hex)
        v = show(vd[vo[i] : vo[i + 1]].tobytes(), args.hex)
        print(f"{k} @ {seq} : {'value' if kind == 1 else 'delete'} => {v if kind == 1 else ''}")
