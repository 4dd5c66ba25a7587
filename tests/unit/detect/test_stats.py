"""The hand-rolled rank statistics, cross-checked against scipy."""

from __future__ import annotations

import random
import statistics
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu

from acceptmon.detect.stats import (
    mann_whitney_less,
    median_ci,
    order_stats,
    rank_sum,
    stratified_less,
)


def _scipy_less(x: list[float], y: list[float], continuity: bool = True) -> float:
    return float(
        mannwhitneyu(x, y, alternative="less", method="asymptotic", use_continuity=continuity).pvalue
    )


def _two_decimals(rng: random.Random, mean: float, n: int) -> list[float]:
    """Values as SGLang prints them: two decimals, so many ties."""
    return [round(rng.gauss(mean, 0.25), 2) for _ in range(n)]


CASES = [
    ("clear drop, ties", 1.57, 2.41, 25, 400),
    ("small drop", 2.30, 2.41, 40, 60),
    ("no drop", 2.41, 2.41, 30, 30),
    ("rise", 2.60, 2.41, 50, 20),
    ("tiny samples", 2.0, 2.2, 3, 4),
]


@pytest.mark.parametrize(("name", "after", "before", "m", "n"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("continuity", [True, False])
def test_mann_whitney_matches_scipy(name, after, before, m, n, continuity):
    rng = random.Random(name)
    x, y = _two_decimals(rng, after, m), _two_decimals(rng, before, n)
    assert mann_whitney_less(x, y, continuity) == pytest.approx(_scipy_less(x, y, continuity), rel=1e-9)


def test_u_statistic_matches_scipy():
    rng = random.Random(3)
    x, y = _two_decimals(rng, 2.0, 37), _two_decimals(rng, 2.1, 52)
    assert rank_sum(Counter(x), Counter(y)).u == pytest.approx(mannwhitneyu(x, y).statistic)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(100, 130), min_size=1, max_size=40),
    st.lists(st.integers(100, 130), min_size=1, max_size=40),
)
def test_mann_whitney_matches_scipy_on_heavy_ties(x, y):
    if len(set(x + y)) == 1:  # scipy returns nan when every value is tied; we say "no evidence"
        assert mann_whitney_less(x, y) == 1.0
        return
    assert mann_whitney_less(x, y) == pytest.approx(_scipy_less(x, y), rel=1e-9, abs=1e-12)


def test_single_stratum_equals_plain_test():
    rng = random.Random(5)
    x, y = _two_decimals(rng, 2.2, 30), _two_decimals(rng, 2.4, 300)
    assert stratified_less([rank_sum(Counter(x), Counter(y))]) == pytest.approx(_scipy_less(x, y), rel=1e-12)


def test_stratified_test_ignores_a_pure_mix_shift():
    """Per stratum nothing changed, only the mix: pooled MWU screams, van Elteren does not."""
    rng = random.Random(7)
    low_b, high_b = _two_decimals(rng, 2.5, 270), _two_decimals(rng, 2.2, 30)
    low_a, high_a = _two_decimals(rng, 2.5, 10), _two_decimals(rng, 2.2, 90)
    assert mann_whitney_less(low_a + high_a, low_b + high_b) < 1e-6
    strata = [rank_sum(Counter(low_a), Counter(low_b)), rank_sum(Counter(high_a), Counter(high_b))]
    assert stratified_less(strata) > 0.01


def test_stratified_test_sees_a_shift_in_every_stratum():
    rng = random.Random(8)
    strata = [
        rank_sum(Counter(_two_decimals(rng, lvl * 0.85, 15)), Counter(_two_decimals(rng, lvl, 200)))
        for lvl in (2.5, 2.3, 2.1)
    ]
    assert stratified_less(strata) < 1e-6


def test_all_tied_is_no_evidence():
    assert stratified_less([rank_sum({241: 5}, {241: 9})]) == 1.0
    assert stratified_less([]) == 1.0


@pytest.mark.parametrize("n", [1, 2, 5, 20, 99, 100, 1000])
def test_median_matches_statistics(n):
    rng = random.Random(n)
    values = _two_decimals(rng, 2.4, n)
    m = median_ci(Counter(values))
    assert m.median == pytest.approx(statistics.median(values))
    assert m.low <= m.median <= m.high
    assert m.n == n


def test_median_ci_uses_binomial_ranks():
    """n = 100: the textbook 95% interval is (x(40), x(61))."""
    m = median_ci(Counter(range(1, 101)))
    assert (m.low, m.high) == (40, 61)


def test_median_ci_covers_the_true_median_about_95_percent():
    rng = random.Random(11)
    hits = 0
    for _ in range(400):
        m = median_ci(Counter(round(rng.gauss(0, 1), 3) for _ in range(60)))
        hits += m.low <= 0.0 <= m.high
    assert 0.92 <= hits / 400 <= 0.995


def test_order_stats_clamps_and_rejects_empty():
    assert order_stats({1: 2, 5: 1}, [0, 1, 3, 9]) == [1, 1, 5, 5]
    with pytest.raises(ValueError, match="empty"):
        order_stats({}, [1])
