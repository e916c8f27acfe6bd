"""Which folder is a bloomdb store: the identity file, and what :meth:`DB.open` may do to a folder.

A store is proven by its identity file ``BLOOMDB`` (written first, atomically, when a store is
created; see docs/formats.md), or -- for stores made before the identity file existed -- by a
``MANIFEST`` that starts with the store's manifest magic. :func:`inspect` classifies a folder
without changing anything:

* ``ABSENT``: no folder, or an empty one (or one holding only ``BLOOMDB.tmp``, this module's
  identity file torn by a crash before its rename): a store may be created there;
* ``HALF``: the identity file but no manifest yet (creation crashed half-way): opens as a new,
  empty store (nothing else of ours can exist yet: the manifest is written before any log or
  table);
* ``STORE`` / ``LEGACY``: a store (``LEGACY``: no identity file yet; :func:`claim` adds it);
* anything else -- a LevelDB or RocksDB folder, a folder of photos -- raises
  :class:`InvalidArgument`: the store never creates itself beside files it did not write, so it
  can never delete them (LevelDB's ``create_if_missing`` semantics, RocksDB's refusal to open a
  foreign folder).
"""

from __future__ import annotations

import os
import uuid

from ..errors import InvalidArgument
from . import manifest as mf

IDENTITY = "BLOOMDB"
MAGIC = b"bloomdb-lsm-store 1\n"
ABSENT, HALF, STORE, LEGACY = "absent", "half-created", "store", "legacy"


def inspect(fs, path: str) -> str:
    """Classify folder ``path`` (see the module docstring). Reads at most two small files;
    raises :class:`InvalidArgument` for a folder that is not a store and not empty."""
    if not fs.exists(path):
        return ABSENT
    try:
        names = set(fs.listdir(path))
    except OSError as e:
        raise InvalidArgument(f"{path}: not a folder a store can live in ({e.strerror or e})") from None
    tmp = IDENTITY + ".tmp"
    if tmp in names and IDENTITY not in names and _is_claim(_read(fs, path, tmp)):
        names.discard(tmp)  # our own identity file, torn by a crash before its rename: not a store yet
    if IDENTITY in names:
        if _read(fs, path, IDENTITY)[: len(MAGIC)] != MAGIC:
            raise InvalidArgument(f"{path}: its {IDENTITY} file is not a bloomdb store identity; refusing to open it")
        return STORE if "MANIFEST" in names else HALF
    if "MANIFEST" in names and _read(fs, path, "MANIFEST")[: len(mf.MAGIC)] == mf.MAGIC:
        return LEGACY
    if not names:
        return ABSENT
    shown = ", ".join(sorted(names)[:6]) + (", ..." if len(names) > 6 else "")
    raise InvalidArgument(
        f"{path}: not a bloomdb store and not empty ({len(names)} entries: {shown}); the store is "
        f"only created in a new or empty folder and never touches files it did not write"
    )


def _read(fs, path: str, name: str) -> bytes:
    """The first bytes of ``name`` in ``path`` (``b"?"`` when it cannot be read as a file: then
    it is nothing of ours)."""
    try:
        return bytes(fs.read_all(os.path.join(path, name))[:64])
    except OSError:
        return b"?"


def _is_claim(data: bytes) -> bool:
    """Whether ``data`` is (a prefix of) an identity file :func:`claim` writes."""
    head = data[: len(MAGIC)]
    return MAGIC.startswith(head) and (len(data) <= len(MAGIC) or data[len(MAGIC) :].rstrip(b"\n").isalnum())


def claim(fs, path: str) -> None:
    """Make ``path`` a store: create the folder and write the identity file (atomically, first,
    before anything else the store writes). Idempotent for a folder that already has it."""
    fs.makedirs(path)
    p = os.path.join(path, IDENTITY)
    if not fs.exists(p):
        fs.write_atomic(p, MAGIC + uuid.uuid4().hex.encode() + b"\n")
