"""The verdict "is it better now?" on histograms with a known answer."""

from __future__ import annotations

import random

from acceptmon.detect.series import Hists, centi, load_bucket
from acceptmon.detect.verdict import MIN_INTERVALS, RunLevel, judge, judge_pair, p_words


def level(run_id: str, config: str, mean: float, n: int, seed: int = 1) -> RunLevel:
    rng = random.Random(seed)
    h = Hists()
    for _ in range(n):
        h.add(load_bucket(rng.choice((2, 8, 20)), (4, 16, 64)), centi(max(1.0, rng.gauss(mean, 0.12))))
    return RunLevel(run_id, config, h.copy(), h.n)


def test_a_drop_from_47_to_19_percent_is_worse_with_its_size() -> None:
    v = judge([level("r1", "a", 2.41, 200), level("r2", "b", 1.57, 200, seed=2)])
    assert v is not None and v.state == "worse" and v.against_run_id == "r1"
    assert v.relative_change is not None and -0.40 < v.relative_change < -0.30
    assert v.interval is not None and v.interval[0] < v.relative_change < v.interval[1]
    assert v.p_value is not None and v.p_value < 1e-6
    assert "WORSE" in v.words() and "very unlikely to be chance" in v.words()


def test_a_fix_is_better_and_the_same_level_is_same() -> None:
    runs = [level("r1", "a", 2.41, 200), level("r2", "b", 1.57, 200, 2), level("r3", "a", 2.41, 200, 3)]
    v = judge(runs)
    assert v is not None and (v.state, v.against_run_id) == ("better", "r2")
    # r2 was worse than r1, so r1 is the last good run: against it, r3 is the same.
    assert v.good_run_id == "r1" and v.good is not None and v.good.state == "same"


def test_too_few_intervals_says_how_many_more() -> None:
    v = judge([level("r1", "a", 2.41, 200), level("r2", "b", 1.57, 10, 2)])
    assert v is not None and v.state == "insufficient" and v.needs_more == MIN_INTERVALS - 10
    assert "not enough data yet" in v.words() and f"{MIN_INTERVALS - 10} more" in v.words()


def test_the_baseline_is_the_last_run_with_another_config() -> None:
    runs = [level("r1", "a", 2.41, 200), level("r2", "b", 1.9, 200, 2), level("r3", "b", 1.9, 200, 3)]
    v = judge(runs)
    assert v is not None and v.against_run_id == "r1" and v.state == "worse"


def test_without_a_visible_change_the_previous_run_is_the_baseline() -> None:
    v = judge([level("r1", "a", 2.41, 200), level("r2", "a", 2.41, 200, 2)])
    assert v is not None and v.against_run_id == "r1" and v.state == "same"


def test_one_run_or_none() -> None:
    assert judge([]) is None
    only = judge([level("r1", "a", 2.41, 200)])
    assert only is not None and only.state == "insufficient" and only.against_run_id is None


def test_runs_without_intervals_are_skipped() -> None:
    empty = RunLevel("r2", "b", {}, 0)
    v = judge([level("r1", "a", 2.41, 200), empty])
    assert v is not None and v.run_id == "r1"


def test_no_common_load_stratum_is_insufficient() -> None:
    low, high = Hists(), Hists()
    for i in range(100):
        low.add(0, 240 + i % 5)
        high.add(3, 150 + i % 5)
    v = judge_pair(RunLevel("r2", "b", high.copy(), 100), RunLevel("r1", "a", low.copy(), 100))
    assert v.state == "insufficient"


def test_p_values_in_words() -> None:
    assert p_words(0.0001).startswith("p < 0.001")
    assert "unlikely" in p_words(0.005) and "weak" in p_words(0.03) and "chance" in p_words(0.4)
