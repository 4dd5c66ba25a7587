"""The recovery check's cheap drop is ``compare``'s own, to the last bit, in both measures."""

from __future__ import annotations

import random

import pytest

from acceptmon.detect.compare import compare
from acceptmon.detect.measure import ALPHA_SCALE, PER_TOKEN, Measure, per_token, to_per_token
from acceptmon.detect.recovery import Ordered, Reference
from acceptmon.detect.series import Sliding, Strata
from acceptmon.detect.stats import hist_median, median_ci


def _strata(rng: random.Random, n: int, level: float, buckets: int) -> Strata:
    out: Strata = {}
    for _ in range(n):
        h = out.setdefault(rng.randrange(buckets), {})
        value = max(100, min(400, round(rng.gauss(level, 0.3) * 100)))
        h[value] = h.get(value, 0) + 1
    return out


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("measure", [Measure(), Measure(PER_TOKEN, (3, 5))])
def test_the_drop_is_compares(seed: int, measure: Measure) -> None:
    rng = random.Random(seed)
    before = _strata(rng, rng.randrange(0, 400), rng.uniform(1.5, 3.0), rng.randrange(1, 5))
    after = _strata(rng, rng.randrange(0, 120), rng.uniform(1.5, 3.0), rng.randrange(1, 5))
    if measure.per_token:
        want = compare(to_per_token(before, 3), to_per_token(after, 5), 3, ALPHA_SCALE)
    else:
        want = compare(before, after, 3)
    got = Reference(before, measure).drop(Ordered(after), 3)
    assert got == (None if want is None else (want.after_n, want.drop))


@pytest.mark.parametrize("seed", range(10))
def test_the_sorted_window_of_columns_is_of_its_histograms(seed: int) -> None:
    rng = random.Random(seed)
    window = Sliding(rng.choice([7, 100]))
    for _ in range(50):
        k = rng.randrange(1, 6)
        window.extend([rng.randrange(-1, 4) for _ in range(k)], [rng.randrange(100, 300) for _ in range(k)])
        held = window.columns()
        assert held is not None
        assert Ordered.of(*held).lists == Ordered(window.strata).lists


@pytest.mark.parametrize("k", range(1, 13))
def test_per_token_rises_with_accept_len(k: int) -> None:
    """What lets a per-token median be read off accept len's order statistics."""
    alphas = [per_token(centi, k) for centi in range(0, 100 * (k + 2))]
    assert alphas == sorted(alphas)


@pytest.mark.parametrize("seed", range(20))
def test_hist_median_is_median_cis(seed: int) -> None:
    rng = random.Random(seed)
    h = {v: rng.randrange(1, 5) for v in rng.sample(range(100, 400), rng.randrange(1, 60))}
    assert hist_median(h) == median_ci(h).median
