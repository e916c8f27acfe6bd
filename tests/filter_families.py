"""Which families the generic filter tests run over, and how to make one of each."""

from __future__ import annotations

from bloomdb import filters


def all_families():
    return [info.name for info in filters.available()]


def make_filled(name: str, keys, capacity: int | None = None):
    """A filter of family ``name`` holding ``keys`` (static families through their builder)."""
    cls = filters.family(name)
    spec = cls.example_spec or name
    if cls.static:
        return filters.build(spec, keys)
    if getattr(cls, "max_copies", None) is not None:
        # cuckoo holds a key at most 8 times; hypothesis lists can repeat a key more often
        from bloomdb.keys import encode_key

        seen: set = set()
        keys = [k for k in keys if not (encode_key(k) in seen or seen.add(encode_key(k)))]
    f = filters.create(spec, capacity=capacity or max(1, len(keys)))
    f.add_many(keys)
    return f


def make_empty(name: str, capacity: int = 1000):
    cls = filters.family(name)
    spec = cls.example_spec or name
    if cls.static:
        return filters.build(spec, [])
    return filters.create(spec, capacity=capacity)
