"""A store used as a mapping, in rocksdict's (and a dict's) forms.

:class:`DictForms` gives :class:`~.db.DB` ``db[key]`` (:class:`~bloomdb.errors.NotFoundError`,
a ``KeyError``, when absent; a list of keys reads them all, as rocksdict's ``db[[k1, k2]]``),
``db[key] = value``, ``del db[key]`` (deleting an absent key is not an error: a tombstone is
written without a read, as rocksdict's and LevelDB's ``delete``), ``keys()``, ``values()`` and
``items()`` (rocksdict's ``backwards`` and ``from_key``: iterate from ``from_key``, or the nearest
key in the direction of iteration) and ``key_may_exist(key, fetch=False)``.

Cost: each form is one call of the store's own method (``get``, ``put``, ``delete``,
``multi_get``, a drained ``iterator``); nothing is kept here.
"""

from __future__ import annotations

from ..errors import NotFoundError
from .memtable import ABSENT as _ABSENT


class DictForms:
    """The mapping forms of a store (see the module docstring); relies on its ``get``, ``put``,
    ``delete``, ``multi_get`` and ``iterator``."""

    __slots__ = ()

    def __getitem__(self, key):
        if type(key) is list:
            return self.multi_get(key)
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            raise NotFoundError(f"key {key!r} not found")
        return value

    def __setitem__(self, key, value) -> None:
        self.put(key, value)

    def __delitem__(self, key) -> None:
        self.delete(key)

    def _walk(self, from_key, backwards: bool, include_key: bool, include_value: bool):
        if backwards:
            it = self.iterator(stop=from_key, include_stop=True, reverse=True,
                               include_key=include_key, include_value=include_value)
        else:
            it = self.iterator(start=from_key, include_key=include_key, include_value=include_value)
        return it.drain()

    def keys(self, backwards: bool = False, from_key=None):
        """The keys in order (descending with ``backwards``), from ``from_key`` on if given."""
        return self._walk(from_key, backwards, True, False)

    def values(self, backwards: bool = False, from_key=None):
        """The values in their keys' order (see :meth:`keys`)."""
        return self._walk(from_key, backwards, False, True)

    def items(self, backwards: bool = False, from_key=None):
        """``(key, value)`` pairs in key order (see :meth:`keys`)."""
        return self._walk(from_key, backwards, True, True)

    def key_may_exist(self, key, fetch: bool = False):
        """rocksdict's: False when ``key`` is certainly absent. Here the answer is exact (a get:
        an absent key costs the filter probes alone, a present one a block read), so True means
        present; ``fetch=True`` returns ``(present, value or None)``."""
        value = self.get(key)
        return (value is not None, value) if fetch else value is not None
