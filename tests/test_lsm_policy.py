"""The compaction policy is a pure function of the version's shape: tested without files."""

from bloomdb.lsm.compaction.policy import TableShape, pick, scores


def t(n, size, lo, hi):
    return TableShape(n, size, lo, hi)


def empty(levels=7):
    return [[] for _ in range(levels)]


def test_nothing_to_do():
    lv = empty()
    lv[0] = [t(1, 100, b"a", b"z")]
    assert pick(lv, {}, 4, 1000, 10) is None


def test_l0_trigger_takes_all_l0_and_overlapping_l1():
    lv = empty()
    lv[0] = [t(5, 10, b"c", b"f"), t(4, 10, b"a", b"b"), t(3, 10, b"e", b"g"), t(2, 10, b"x", b"y")]
    lv[1] = [t(10, 10, b"a", b"a"), t(11, 10, b"h", b"k"), t(12, 10, b"m", b"z")]
    task = pick(lv, {}, 4, 1000, 10)
    assert task.level == 0 and set(task.inputs) == {2, 3, 4, 5}
    assert set(task.next_inputs) == {10, 11, 12}
    assert not task.trivial_move and task.bottom


def test_level_by_size_ratio_and_round_robin():
    lv = empty()
    lv[1] = [t(1, 600, b"a", b"c"), t(2, 600, b"d", b"f")]  # 1200 > 1000
    lv[2] = [t(3, 100, b"b", b"b"), t(4, 100, b"e", b"e")]
    task = pick(lv, {}, 4, 1000, 10)
    assert task.level == 1 and task.inputs == (1,) and task.next_inputs == (3,)
    task2 = pick(lv, {1: b"c"}, 4, 1000, 10)
    assert task2.inputs == (2,) and task2.next_inputs == (4,)
    task3 = pick(lv, {1: b"f"}, 4, 1000, 10)  # wraps around
    assert task3.inputs == (1,)


def test_trivial_move_and_bottom():
    lv = empty()
    lv[1] = [t(1, 2000, b"a", b"c")]
    lv[3] = [t(9, 10, b"b", b"b")]
    task = pick(lv, {}, 4, 1000, 10)
    assert task.trivial_move and task.level == 1 and not task.bottom
    lv[3] = [t(9, 10, b"x", b"y")]
    assert pick(lv, {}, 4, 1000, 10).bottom


def test_highest_score_wins_and_ratio_scales():
    lv = empty()
    lv[0] = [t(1, 1, b"a", b"b")] * 5  # score 1.25
    lv[2] = [t(2, 25000, b"a", b"b")]  # max 10000 -> score 2.5
    sc = scores(lv, 4, 1000, 10)
    assert sc[0] == 1.25 and sc[2] == 2.5 and sc[-1] == 0.0
    assert pick(lv, {}, 4, 1000, 10).level == 2


def test_disjoint_l0_moves_without_merging():
    lv = empty()
    lv[0] = [t(4, 10, b"m", b"p"), t(3, 10, b"g", b"k"), t(2, 10, b"a", b"c"), t(1, 10, b"d", b"f")]
    lv[1] = [t(9, 10, b"q", b"z")]
    task = pick(lv, {}, 4, 1000, 10)
    assert task.level == 0 and task.trivial_move and set(task.inputs) == {1, 2, 3, 4}
    lv[0][0] = t(4, 10, b"e", b"p")  # overlaps table 1 and 3: a real merge
    assert not pick(lv, {}, 4, 1000, 10).trivial_move


def test_the_level_table_with_the_least_overlap_below_goes_first():
    lv = empty()
    lv[1] = [t(1, 600, b"a", b"c"), t(2, 600, b"d", b"f"), t(5, 300, b"g", b"h")]  # 1500 > 1000
    lv[2] = [t(3, 900, b"b", b"b"), t(4, 100, b"e", b"e"), t(6, 50, b"g", b"g"), t(7, 70, b"h", b"i")]
    task = pick(lv, {}, 4, 1000, 10)  # overlap per byte: 1.5, 0.17, 0.4
    assert task.inputs == (2,) and task.next_inputs == (4,)
    assert pick(lv, {1: b"f"}, 4, 1000, 10).inputs == (2,)  # not the round-robin's next (5)
    lv[2] = [t(3, 900, b"b", b"b"), t(4, 100, b"e", b"e")]  # table 5 overlaps nothing: a trivial move
    task = pick(lv, {}, 4, 1000, 10)
    assert task.inputs == (5,) and task.trivial_move
