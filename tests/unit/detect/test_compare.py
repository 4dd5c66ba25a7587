"""The load-stratified comparison of two windows."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from acceptmon.detect.compare import compare, overlap
from acceptmon.detect.series import Strata


def _hist(rng: random.Random, level: float, n: int) -> dict[int, int]:
    return dict(Counter(round(rng.gauss(level, 0.2) * 100) for _ in range(n)))


def _merge(strata: Strata) -> Strata:
    total: Counter[int] = Counter()
    for h in strata.values():
        total.update(h)
    return {0: dict(total)}


def test_overlap_needs_enough_intervals_on_both_sides():
    before = {0: {240: 5}, 1: {230: 2}, 2: {220: 9}}
    after = {0: {200: 3}, 1: {200: 9}, 3: {200: 9}}
    assert overlap(before, after, 3) == [0]
    assert compare(before, {3: {200: 50}}, 3) is None


def test_same_drop_in_every_stratum():
    rng = random.Random(1)
    before = {0: _hist(rng, 2.5, 500), 2: _hist(rng, 2.2, 500)}
    after = {0: _hist(rng, 2.0, 10), 2: _hist(rng, 1.76, 30)}
    c = compare(before, after, 3)
    assert c is not None
    assert c.drop == pytest.approx(0.2, abs=0.04)
    assert c.p_value < 1e-6
    assert (c.before_n, c.after_n, c.strata) == (1000, 40, 2)
    assert c.after.low < c.after.value < c.after.high
    # the baseline is standardised to the current load mix: 1/4 low-load, 3/4 high-load
    assert c.before.value == pytest.approx(0.25 * 2.5 + 0.75 * 2.2, abs=0.03)


def test_a_load_mix_shift_alone_is_no_drop_when_stratified():
    rng = random.Random(2)
    before = {0: _hist(rng, 2.5, 900), 3: _hist(rng, 2.1, 100)}
    after = {0: _hist(rng, 2.5, 30), 3: _hist(rng, 2.1, 270)}
    pooled = compare(_merge(before), _merge(after), 3)
    assert pooled is not None and pooled.drop > 0.1 and pooled.p_value < 1e-6  # what pooling would say
    c = compare(before, after, 3)
    assert c is not None and abs(c.drop) < 0.03 and c.p_value > 0.01
