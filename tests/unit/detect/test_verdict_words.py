"""A verdict's sentence never contradicts itself: tiny and certain is still "same" (issue 25 §10)."""

from __future__ import annotations

from acceptmon.detect.verdict import Verdict, judge
from tests.unit.detect.test_verdict import level


def test_a_tiny_certain_change_says_same_and_why() -> None:
    """Main said "SAME … p < 0.001: very unlikely to be chance"."""
    words = Verdict("same", "r2", "r1", -0.004, (-0.006, -0.002), 0.0001).words()
    assert words == (
        "r2 vs r1: SAME, accept len -0.4% (95% interval -0.6% to -0.2%), "
        "real (p < 0.001) but below the 2% change that matters"
    )
    assert "chance" not in words


def test_judged_runs_with_a_real_but_small_shift_read_the_same_way() -> None:
    v = judge([level("r1", "a", 2.41, 3000), level("r2", "b", 2.385, 3000, seed=2)])
    assert v is not None and v.state == "same" and v.p_value is not None and v.p_value < 0.01
    assert "SAME" in v.words() and "real (p" in v.words() and "that matters" in v.words()


def test_a_same_that_may_be_chance_still_says_so() -> None:
    words = Verdict("same", "r2", "r1", -0.004, (-0.03, 0.02), 0.4).words()
    assert words.endswith("p = 0.40: could well be chance")
