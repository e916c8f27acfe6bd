"""``on="k"`` (and ``left_on`` / ``right_on``) naming a pandas DataFrame's named index level, as
pandas' ``merge`` accepts it: the level joins as a column, answers equal ``pd.merge``'s; a name
that is both a level and a column is refused as pandas refuses it. Refused before
(InvalidArgument "probe side has no key column 'k'")."""

from __future__ import annotations

import pandas as pd
import pytest

from bloomdb.errors import InvalidArgument
from bloomdb.join import hash_join

LEFT = pd.DataFrame({"k": [1, 2, 2, 3, 5], "j": ["a", "b", "b", "c", "a"], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
RIGHT = pd.DataFrame({"k": [2, 3, 4, 2], "j": ["b", "x", "a", "b"], "w": [20, 30, 40, 21]})
HOWS = {"inner": "inner", "left": "left", "right": "right", "full": "outer"}


def _rows(df: pd.DataFrame, cols: list[str]) -> list:
    out = [tuple(None if pd.isna(x) else x for x in r) for r in df[cols].itertuples(index=False)]
    return sorted(out, key=lambda r: [(x is None, x) for x in r])


@pytest.mark.parametrize("how", sorted(HOWS))
@pytest.mark.parametrize("indexed", ["left", "right", "both"])
def test_on_a_named_index_level_as_pandas_merge(how, indexed):
    left = LEFT.set_index("k") if indexed in ("left", "both") else LEFT
    right = RIGHT.set_index("k") if indexed in ("right", "both") else RIGHT
    want = pd.merge(left, right.drop(columns="j"), on="k", how=HOWS[how])
    if "k" not in want.columns:  # pandas keeps a key that is a level on both sides as the index
        want = want.reset_index()
    got = hash_join(left, right.drop(columns="j"), on="k", how=how).to_pandas()
    assert _rows(got, ["k", "v", "w"]) == _rows(want, ["k", "v", "w"])


def test_multi_column_key_with_a_level_and_left_on_right_on():
    left = LEFT.set_index(["k", "j"])
    right = RIGHT.rename(columns={"k": "kk"}).set_index("kk")
    want = pd.merge(left.reset_index(), right.reset_index(), left_on=["k", "j"], right_on=["kk", "j"])
    got = hash_join(left, right, left_on=["k", "j"], right_on=["kk", "j"]).to_pandas()
    assert _rows(got, ["k", "j", "v", "w"]) == _rows(want, ["k", "j", "v", "w"])
    assert hash_join(left, right, left_on=["k", "j"], right_on=["kk", "j"], how="semi").num_rows == 2


def test_a_name_both_a_level_and_a_column_is_refused_as_pandas_does():
    both = LEFT.set_index("k", drop=False)
    with pytest.raises(ValueError, match="ambiguous"):
        pd.merge(both, RIGHT, on="k")
    with pytest.raises(InvalidArgument, match="ambiguous"):
        hash_join(both, RIGHT, on="k")
    assert LEFT.columns.tolist() == ["k", "j", "v"]  # the caller's frame is never changed
