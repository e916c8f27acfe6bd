"""What the deletable families (``counting``, ``cuckoo``) share: ``remove`` / ``remove_many``.

A family implements ``_remove_hashes(hashes) -> int``: remove every hash **all or nothing**,
returning ``-1`` on success or the index of the first key that cannot be present (the filter is
then exactly as before the call). ``count`` is the size of the multiset held: adds minus removes
(never below 0: a counting filter whose counters saturated lets a key be removed more often
than it was added, and cannot tell).

Removing a key that was never added is an error the filter can usually see (``NotFoundError``,
a ``KeyError``). When such a key is a false positive (``might_contain`` says True) the filter
cannot tell it from a present key and removes it — that takes counters or a fingerprint that
belong to other keys and can later cause false negatives. Only remove keys you added.

Concurrency (both families): every write — add, remove, union — runs alone (the filter's
:class:`~bloomdb.filters.writers.WriteGate`, exclusive). Queries take no lock: a write that can
hide a present key for a moment (a cuckoo add, which may relocate tags; a counting remove) keeps
the sequence counter ``_seq`` odd while it runs, the query kernel reports whether ``_seq``
changed while it read, and if it did the keys it found absent are checked again with writers held
off. So a query never misses a key whose add returned, and costs two fenced loads when no write
overlaps it (when one does, its negatives wait for that write to end).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from .. import keys as _keys
from ..errors import NotFoundError
from .base import HashedFilter, single_key_batch


def hashes_of(keys: Any) -> np.ndarray:
    """XXH3-64 hashes of a whole key batch (any form) as one contiguous uint64 array."""
    from ..hashing import hash_batch

    parts = [hash_batch(b) for b in _keys.to_batches(keys)]
    if not parts:
        return np.zeros(0, np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class DeletableFilter(HashedFilter):
    """A hashed filter that can also forget keys (``remove``, ``remove_many``)."""

    #: The family supports ``remove`` (the generic tests and tools look for this).
    deletable = True
    shared_writes = False

    def __new__(cls, *args: Any, **kwargs: Any) -> "DeletableFilter":
        self = super().__new__(cls, *args, **kwargs)
        self._seq = np.zeros(1, np.uint64)  # odd while a write that may hide keys runs
        return self

    @abstractmethod
    def _remove_hashes(self, hashes: np.ndarray) -> int:
        """Remove all hashes or none; -1 on success, else the index of the first absent key.
        Called with writers held off."""

    @abstractmethod
    def _probe(self, hashes: np.ndarray, out: np.ndarray) -> bool:
        """The query kernel into ``out``; False when a write overlapped it (``_seq`` moved)."""

    def _query_hashes(self, hashes: np.ndarray, out: np.ndarray) -> None:
        if self._probe(hashes, out):
            return
        miss = np.flatnonzero(~out)
        if miss.size:
            again = np.zeros(miss.size, np.bool_)
            with self._gate.write(False):  # no writer now: the answer is exact
                self._probe(np.ascontiguousarray(hashes[miss]), again)
            out[miss] = again

    def _removed(self, hashes: np.ndarray) -> int:
        """Remove as one exclusive write and update ``count``; returns what ``_remove_hashes`` returns."""
        with self._writing(False):
            bad = self._remove_hashes(hashes) if hashes.shape[0] else -1
        if bad < 0:
            with self._lock:
                self._count = max(0, self._count - int(hashes.shape[0]))
        return bad

    def remove(self, key: Any) -> None:
        """Forget one copy of ``key``. Raises NotFoundError (a KeyError), changing nothing, when
        ``key`` is certainly not held. Cost: one kernel call (~µs)."""
        self._check_mutable()
        from ..hashing import hash_batch

        if self._removed(hash_batch(single_key_batch(key))) >= 0:
            raise NotFoundError(f"key {key!r} is not in this {self.family} filter")

    def remove_many(self, keys: Any) -> None:
        """Forget one copy of each key of the batch, **all or nothing**.

        Keys are removed in order, so a key repeated ``r`` times in the batch must be held at
        least ``r`` times. If any key cannot be present, NotFoundError names the first one (its
        index is ``exc.index``) and the filter is left exactly as it was. Cost: one kernel pass
        (plus one undo pass over the keys before the failing one).
        """
        self._check_mutable()
        bad = self._removed(hashes_of(keys))
        if bad >= 0:
            exc = NotFoundError(
                f"key #{bad} of the batch is not in this {self.family} filter; nothing was removed"
            )
            exc.index = bad
            raise exc
