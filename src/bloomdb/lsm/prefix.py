"""Prefix extractors (RocksDB's ``prefix_extractor``): tables keep a filter over their keys'
prefixes, so ``DB.iterator(prefix=p)`` skips every table whose prefix filter says ``p`` is not
there.

An extractor maps a key to its prefix, or ``None`` when the key is outside its domain (such keys
are in no prefix filter). The contract, RocksDB's ``SliceTransform``'s: a key's prefix is a
prefix of the key, and every key that starts with a prefix value ``q`` has prefix ``q``.
:meth:`for_prefix` says which prefix filter answers for an iterator's ``prefix`` (``None``: none
can; then every table is read):

* :class:`FixedPrefix` ``(n)``: the first ``n`` bytes; shorter keys are outside the domain. An
  iterator prefix of ``n`` bytes or more is checked as its first ``n``.
* :class:`CappedPrefix` ``(n)``: the first ``n`` bytes, or the whole key when shorter. Same rule
  for iterator prefixes (a shorter one is a prefix of many capped prefixes).
* any callable ``key -> bytes | None`` (:class:`CustomPrefix` wraps it): an iterator prefix ``p``
  is checked when the callable maps ``p`` to ``p`` itself.

A table records its extractor's :attr:`name` beside the prefix filter; a table written under
another extractor (the store was reopened with a different one) is read without its prefix
filter, never giving a wrong answer. A callable's name is its qualified name (so changing what a
function of the same name does between opens is the one change the store cannot see).
"""

from __future__ import annotations

from ..errors import InvalidArgument


class FixedPrefix:
    """The first ``n`` bytes of keys at least ``n`` long (RocksDB's ``NewFixedPrefixTransform``)."""

    def __init__(self, n: int):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidArgument(f"{type(self).__name__} takes a length >= 1, got {n!r}")
        self.n = n
        self.name = f"{type(self).__name__.lower().replace('prefix', '')}:{n}"

    def __call__(self, key: bytes) -> bytes | None:
        return key[: self.n] if len(key) >= self.n else None

    def for_prefix(self, p: bytes) -> bytes | None:
        return p[: self.n] if len(p) >= self.n else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n})"


class CappedPrefix(FixedPrefix):
    """The first ``n`` bytes, or the whole key when shorter (RocksDB's ``NewCappedPrefixTransform``)."""

    def __call__(self, key: bytes) -> bytes:
        return key[: self.n]


class CustomPrefix:
    """A callable ``key -> prefix bytes or None`` as an extractor (see the module contract)."""

    def __init__(self, fn):
        self.fn = fn
        self.name = "custom:" + getattr(fn, "__qualname__", type(fn).__qualname__)

    def __call__(self, key: bytes) -> bytes | None:
        p = self.fn(key)
        if p is not None and type(p) is not bytes:
            raise InvalidArgument(f"the prefix extractor {self.name} returned {type(p).__name__}, not bytes or None")
        return p

    def for_prefix(self, p: bytes) -> bytes | None:
        return p if self(p) == p else None


def extractor(x):
    """``Options.prefix_extractor`` as an extractor object (``None`` stays ``None``)."""
    if x is None or isinstance(x, (FixedPrefix, CustomPrefix)):
        return x
    if callable(x):
        return CustomPrefix(x)
    raise InvalidArgument(f"Options.prefix_extractor must be FixedPrefix(n), CappedPrefix(n), a callable or None, got {x!r}")
