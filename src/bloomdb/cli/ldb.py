"""``bloomdb ldb PATH COMMAND``: look into and change a store from the shell (RocksDB's ``ldb``).

Commands: ``get KEY``, ``put KEY VALUE``, ``delete KEY``, ``scan [--from K] [--to K] [--limit N]
[--reverse]``, ``dump`` (every entry, then ``Keys in range: N``), ``compact [--from K] [--to K]``,
``stats`` (``bloomdb.stats`` and the table list), ``checkpoint DEST``, ``repair``.

Reading commands open the store read-only (no lock: they work beside a running writer); writing
ones open it normally. Keys and values on the command line are UTF-8 text, or hex with
``--hex`` (``0x`` optional); printed keys and values are escaped like Python bytes literals
(``\\x00``), or hex with ``--hex``. ``get`` of a missing key prints ``NotFound`` and exits 1.
"""

from __future__ import annotations

import argparse
import binascii

from .args import positive_int

NAME = "ldb"
HELP = "look into and change an LSM store (get, put, delete, scan, dump, compact, stats, checkpoint, repair)"
READS = ("get", "scan", "dump", "stats")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="the store's folder")
    p.add_argument("--hex", action="store_true", help="keys and values in hex, in and out")
    sub = p.add_subparsers(dest="ldb_command", metavar="COMMAND", required=True)
    sub.add_parser("get", help="print the value of KEY").add_argument("key")
    put = sub.add_parser("put", help="set KEY to VALUE")
    put.add_argument("key")
    put.add_argument("value")
    sub.add_parser("delete", help="delete KEY").add_argument("key")
    for name, what in (("scan", "print 'key : value' per entry in key order"),
                       ("dump", "print every entry ('key ==> value') and the count"),
                       ("compact", "compact the key range (all by default)")):
        q = sub.add_parser(name, help=what)
        q.add_argument("--from", dest="start", default=None, help="first key (inclusive)")
        q.add_argument("--to", dest="end", default=None, help="end key (exclusive)")
        if name != "compact":
            q.add_argument("--limit", type=positive_int, default=None, help="print at most N entries")
            q.add_argument("--reverse", action="store_true", help="descending key order")
    sub.add_parser("stats", help="per-level tables, filter and read counters")
    sub.add_parser("checkpoint", help="a consistent copy of the store in the new folder DEST").add_argument("dest")
    sub.add_parser("repair", help="rebuild the manifest from the tables and logs (LevelDB's RepairDB)")


def parse_bytes(text: str, hexa: bool) -> bytes:
    """A key or value given on the command line."""
    if not hexa:
        return text.encode("utf-8")
    from ..errors import InvalidArgument

    digits = text[2:] if text[:2].lower() == "0x" else text
    try:
        return binascii.unhexlify(digits)
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"{text!r} is not hex") from None


def show(b, hexa: bool) -> str:
    """A key or value as printed: escaped like a bytes literal, or ``0x...``."""
    b = bytes(b)
    return "0x" + b.hex().upper() if hexa else repr(b)[2:-1]


def run(args: argparse.Namespace) -> int:
    from ..lsm import DB, repair

    cmd, hexa = args.ldb_command, args.hex
    if cmd == "repair":
        print(repair(args.path))
        return 0
    key = parse_bytes(args.key, hexa) if getattr(args, "key", None) is not None else None
    bounds = [None if getattr(args, a, None) is None else parse_bytes(getattr(args, a), hexa) for a in ("start", "end")]
    from ..lsm import Options

    with DB.open(args.path, Options(create_if_missing=False), read_only=cmd in READS) as db:
        if cmd == "get":
            v = db.get(key)
            print("NotFound" if v is None else show(v, hexa))
            return 1 if v is None else 0
        if cmd == "put":
            db.put(key, parse_bytes(args.value, hexa), sync=True)
            print("OK")
        elif cmd == "delete":
            db.delete(key, sync=True)
            print("OK")
        elif cmd in ("scan", "dump"):
            _print_range(db, bounds, args, " : " if cmd == "scan" else " ==> ", cmd == "dump")
        elif cmd == "compact":
            db.compact_range(*bounds)
            print("OK")
        elif cmd == "stats":
            print(db.get_property("bloomdb.stats"), end="")
            print(db.get_property("bloomdb.sstables"), end="")
        elif cmd == "checkpoint":
            print(f"checkpoint written to {db.checkpoint(args.dest)}")
    return 0


def _print_range(db, bounds, args, sep: str, count: bool) -> None:
    n = 0
    it = db.iterator(bounds[0], bounds[1], reverse=args.reverse)
    try:
        for k, v in it:
            if args.limit is not None and n >= args.limit:
                break
            print(f"{show(k, args.hex)}{sep}{show(v, args.hex)}")
            n += 1
    finally:
        it.close()
    if count:
        print(f"Keys in range: {n}")
