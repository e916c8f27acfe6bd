"""The in-kernel probe contract: how an engine's own numba kernel asks a filter about one hash.

An engine (the LSM store's probe directory, a join, a scan) that probes many filters with one key
hashes the key once and calls the filter family's own single-hash kernel -- it never re-implements
a bit layout and never tests a filter's class. A filter describes itself with
:meth:`Filter.probe_descriptor`: a :class:`ProbeDescriptor` (family tag, format version, the
leading arguments of the family's kernel), or ``None`` when the family has no single-hash kernel.
The engine picks the kernel by ``(tag, version)``: :data:`PROBE_KERNELS` names, per pair, the
module whose ``check_hash(*descriptor.args, h) -> bool`` answers exactly as
``filter.might_contain_hashes([h])`` does. A new layout gets a new format version, so an engine
compiled for the old pair simply stops matching (it then asks the filter in Python).

``h`` is the family's own 64-bit hash of the key (the one :meth:`Filter.might_contain_hashes`
takes): XXH3-64 (seed 0) of the key bytes for the XXH3 families, XXH64 of the plain encoding
for ``sbbf``, LevelDB's BloomHash for ``leveldb``. ``counting`` and ``cuckoo`` kernels do not
take the filter's write sequence: probe them in-kernel only while nothing removes from them
(an LSM table's filter never changes). An engine that hashes keys one way may only use the pairs whose hash it computes.

An engine that loads many filters inside its own kernel (the LSM store reads each table's filter
on the table's first lookup, in its lookup kernel) reads a descriptor straight from the
filter's envelope bytes with :func:`bloomdb.filters._descriptor_kernels.read_descriptor`: the
same tag, version, array (the payload in place, as ``from_bytes(copy=False)``) and scalars as
``from_bytes(...).probe_descriptor()``, checked as ``from_bytes`` checks them, for the families
it reads (``blocked``, ``counting``, ``register``, ``standard``, ``sbbf``); for any other bytes
it answers "not read here" and the engine calls ``from_bytes``. A test pins its answers to
every family's ``probe_descriptor``.

Cost: :meth:`Filter.probe_descriptor` allocates nothing (the arrays are the filter's own; a
memory-mapped filter's arrays are not re-checked against its file, see
:mod:`bloomdb.filters.mapped`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .format import FAMILY_TAGS


@dataclass(frozen=True)
class ProbeDescriptor:
    """A filter as its family's single-hash kernel takes it: ``check_hash(*args, h)``."""

    family_tag: int
    format_version: int
    args: tuple

    @property
    def kind(self) -> tuple[int, int]:
        """``(family_tag, format_version)``: the key an engine selects its kernel by."""
        return self.family_tag, self.format_version


#: ``blocked`` v1 (RocksDB FastLocalBloom): args ``(words32, num_lines, k)``, hash XXH3-64.
BLOCKED_V1 = (FAMILY_TAGS["blocked"], 1)
#: ``register`` v1: args ``(words32, num_words, k)``, hash XXH3-64.
REGISTER_V1 = (FAMILY_TAGS["register"], 1)
#: ``sbbf`` v1 (Parquet split-block): args ``(words32, num_blocks)``, hash XXH64 of the plain encoding.
SBBF_V1 = (FAMILY_TAGS["sbbf"], 1)
#: ``paired`` v1: args ``(words32, num_blocks, batch_blocks, half_k, idx_bits, bloom_bits)``, XXH3-64.
PAIRED_V1 = (FAMILY_TAGS["paired"], 1)
#: ``ribbon`` v1: args ``(words, num_starts, upper_cols, upper_start_block, seed)``, XXH3-64.
RIBBON_V1 = (FAMILY_TAGS["ribbon"], 1)
#: ``fuse8`` / ``fuse16`` v1: args ``(fingerprints, seed, seg_len, seg_count_len, fp_mask)``, XXH3-64.
FUSE8_V1 = (FAMILY_TAGS["fuse8"], 1)
FUSE16_V1 = (FAMILY_TAGS["fuse16"], 1)

#: ``standard`` v1: args ``(words64, num_bits, k)``, hash XXH3-64.
STANDARD_V1 = (FAMILY_TAGS["standard"], 1)
#: ``leveldb`` v1: args ``(filter_bytes,)``, hash LevelDB's BloomHash of the key bytes (seed 0xbc9f1d34).
LEVELDB_V1 = (FAMILY_TAGS["leveldb"], 1)
#: ``counting`` v1: args ``(counters_u8, num_lines, k)``, hash XXH3-64.
COUNTING_V1 = (FAMILY_TAGS["counting"], 1)
#: ``cuckoo`` v1: args ``(buckets_u8, fingerprint_bits, num_buckets)``, hash XXH3-64.
CUCKOO_V1 = (FAMILY_TAGS["cuckoo"], 1)

#: ``(tag, version)`` -> the module whose ``check_hash(*args, h)`` is that family's probe kernel.
PROBE_KERNELS: dict[tuple[int, int], str] = {
    BLOCKED_V1: "bloomdb.filters._blocked_kernels",
    REGISTER_V1: "bloomdb.filters._register_kernels",
    SBBF_V1: "bloomdb.filters._sbbf_kernels",
    PAIRED_V1: "bloomdb.filters._paired_kernels",
    RIBBON_V1: "bloomdb.filters._ribbon_kernels",
    FUSE8_V1: "bloomdb.filters._fuse_kernels",
    FUSE16_V1: "bloomdb.filters._fuse_kernels",
    STANDARD_V1: "bloomdb.filters._standard_kernels",
    LEVELDB_V1: "bloomdb.filters._leveldb_kernels",
    COUNTING_V1: "bloomdb.filters._counting_kernels",
    CUCKOO_V1: "bloomdb.filters._cuckoo_kernels",
}
