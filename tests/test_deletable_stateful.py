"""The deletable families against a reference multiset, under random operation sequences.

Model: a ``Counter`` of canonical keys (``encode_key``). Invariants after every step: every key the
model holds is reported present (no false negative, ever), and ``count`` equals the model's size.
Errors must agree: removing a held key succeeds; removing a key the model does not hold raises
NotFoundError and changes nothing whenever the filter can see it is absent (``might_contain``
False; when it is a false positive the filter cannot know, and the test does not remove it —
that is the documented contract); ``remove_many`` is all or nothing; a cuckoo filter refuses a
9th copy of a key with FilterFull, may refuse others only when both of the key's buckets are full
(checked on the bytes, via the documented layout), and then changes nothing; ``add_many`` keeps
exactly the keys before the refused one.
"""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from bloomdb import errors, filters
from bloomdb.keys import encode_key
from deletable_reference import cuckoo_place, cuckoo_slots

# distinct canonical encodings: ints, str and bytes that do not collide with each other
POOL = [7, -1, 2**40 + 3, 0, "alice", "bob", "", "ü-ñ", b"\x00\xff", b"carol", "x" * 30, 123456789]
ABSENT = [f"absent-{i}" for i in range(12)] + [10**12 + i for i in range(6)]


def _machine(spec: str, capacity: int):
    class DeletableMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.f = filters.create(spec, capacity=capacity)
            self.model: Counter = Counter()
            self.cuckoo = self.f.family == "cuckoo"

        def _snapshot(self):
            return self.f._payload().copy(), self.f.count

        def _unchanged(self, snap):
            payload, count = snap
            assert np.array_equal(self.f._payload(), payload) and self.f.count == count

        def _full_is_justified(self, key):
            """A cuckoo insert may fail only when both of the key's buckets are full."""
            i1, i2, _ = cuckoo_place(self.f, key)
            slots = cuckoo_slots(self.f)
            return (slots[i1] != 0).all() and (slots[i2] != 0).all()

        @rule(key=st.sampled_from(POOL), times=st.integers(1, 3))
        def add(self, key, times):
            for _ in range(times):
                enc = encode_key(key)
                snap = self._snapshot()
                try:
                    self.f.add(key)
                except errors.FilterFull:
                    assert self.cuckoo and self._full_is_justified(key)
                    self._unchanged(snap)
                else:
                    assert not (self.cuckoo and self.model[enc] == self.f.max_copies)
                    self.model[enc] += 1

        @rule(keys=st.lists(st.sampled_from(POOL), max_size=6))
        def add_many(self, keys):
            try:
                self.f.add_many(keys)
                added = len(keys)
            except errors.FilterFull as exc:
                assert self.cuckoo and self._full_is_justified(keys[exc.added])
                added = exc.added
            self.model.update(encode_key(k) for k in keys[:added])

        @rule(data=st.data())
        def remove_present(self, data):
            held = sorted((k for k in POOL if self.model[encode_key(k)] > 0), key=repr)
            if not held:
                return
            key = data.draw(st.sampled_from(held))
            self.f.remove(key)
            self.model[encode_key(key)] -= 1

        @rule(key=st.sampled_from(POOL + ABSENT))
        def remove_absent(self, key):
            if self.model[encode_key(key)] > 0 or self.f.might_contain(key):
                return  # held, or a false positive: removing it is the caller's error
            snap = self._snapshot()
            with pytest.raises(errors.NotFoundError) as exc:
                self.f.remove(key)
            assert isinstance(exc.value, KeyError)
            self._unchanged(snap)

        @rule(data=st.data(), spoil=st.booleans())
        def remove_many(self, data, spoil):
            held = [k for k in POOL for _ in range(self.model[encode_key(k)])]
            batch = data.draw(st.lists(st.sampled_from(held), max_size=5)) if held else []
            want = Counter(encode_key(k) for k in batch)
            if any(self.model[e] < c for e, c in want.items()):
                spoil = True  # a key repeated more often than held: the batch must fail
            else:
                absent = [k for k in ABSENT if not self.f.might_contain(k)]
                if spoil and absent:
                    batch.insert(data.draw(st.integers(0, len(batch))), absent[0])
                else:
                    spoil = False
            if spoil:
                snap = self._snapshot()
                with pytest.raises(errors.NotFoundError) as exc:
                    self.f.remove_many(batch)
                assert 0 <= exc.value.index < len(batch)
                self._unchanged(snap)
            else:
                self.f.remove_many(batch)
                self.model.subtract(want)

        @rule(how=st.sampled_from(["bytes", "pickle", "copy"]))
        def round_trip(self, how):
            if how == "bytes":
                g = filters.from_bytes(self.f.to_bytes())
            elif how == "pickle":
                g = pickle.loads(pickle.dumps(self.f))
            else:
                g = self.f.copy()
            assert g == self.f
            self.f = g

        @invariant()
        def no_false_negatives(self):
            held = [k for k in POOL if self.model[encode_key(k)] > 0]
            if held:
                assert self.f.might_contain_many(held).all()
            assert self.f.count == sum(self.model.values())

    DeletableMachine.__name__ = f"Machine_{spec.replace(':', '_')}"
    return DeletableMachine


# roomy filters: an absent key is a false positive only rarely (the rule then skips it)
TestCountingMachine = _machine("counting:64", 256).TestCase
TestCuckooMachine = _machine("cuckoo:16", 64).TestCase
TestCuckoo8Machine = _machine("cuckoo:8", 8).TestCase  # 4 buckets: crowded, kicks happen
TestCounting4Machine = _machine("counting:4", 2).TestCase  # one line, k=1: saturation happens
