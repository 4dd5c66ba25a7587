"""Samples → points, load buckets, and the bounded windows."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime

import pytest

from acceptmon.detect.series import (
    UNKNOWN_LOAD,
    Head,
    Sliding,
    decode_point,
    load_bucket,
    rate_from_len,
    seconds,
    spec_point,
)
from acceptmon.model import DecodeSample, Meta, SpecSample

META = Meta("vllm-a", 1, None)


def test_decode_point_derives_the_rate_from_the_draft_slots():
    s = DecodeSample(META, running_req=8, queue_req=2, gen_throughput=1.0, accept_len=2.41)
    p = decode_point(s, slots=3)
    assert p.accept_rate == pytest.approx(0.47)
    assert (p.weight, p.running, p.queued, p.busy) == (8.0, 8, 2, True)
    given = DecodeSample(META, 8, 0, 1.0, accept_len=2.41, accept_rate=0.5)
    assert decode_point(given, slots=3).accept_rate == 0.5
    idle = decode_point(DecodeSample(META, 0, 0, 0.0, accept_len=1.0), slots=None)
    assert (idle.busy, idle.accept_rate) == (False, None)


def _spec(acc, drafted, *, k=3, length=None, rate=None, cumulative=False):
    return SpecSample(META, rate, length, acc, drafted, num_spec_tokens=k, cumulative=cumulative)


@pytest.mark.parametrize(
    ("sample", "prev", "slots", "want_len", "want_weight"),
    [
        pytest.param(_spec(300, 600), None, None, 2.5, 200.0, id="v1 counts: 1 + k*acc/drafted"),
        pytest.param(_spec(300, 600, length=2.48), None, None, 2.48, 200.0, id="v1 printed mean length wins"),
        pytest.param(_spec(300, 600, k=None), None, 4, 3.0, 150.0, id="k from the run's settings"),
        pytest.param(_spec(None, None, k=None, length=2.2, rate=0.4), None, None, 2.2, 1.0, id="length only"),
        pytest.param(
            _spec(1300, 2600, cumulative=True),
            _spec(1000, 2000, cumulative=True),
            None,
            2.5,
            200.0,
            id="v0 cumulative: difference of counts",
        ),
    ],
)
def test_spec_point(sample, prev, slots, want_len, want_weight):
    p = spec_point(sample, prev, slots)
    assert p is not None
    assert p.accept_len == pytest.approx(want_len)
    assert p.weight == pytest.approx(want_weight)
    assert (p.running, p.busy) == (None, True)


@pytest.mark.parametrize(
    ("sample", "prev"),
    [
        pytest.param(_spec(1300, 2600, cumulative=True), None, id="first cumulative line"),
        pytest.param(_spec(10, 20, cumulative=True), _spec(1000, 2000, cumulative=True), id="counter reset"),
        pytest.param(_spec(None, None, length=None), None, id="nothing to use"),
    ],
)
def test_spec_point_without_an_interval(sample, prev):
    assert spec_point(sample, prev, 3) is None


def test_spec_interval_without_drafts_is_idle():
    p = spec_point(_spec(0, 0), None, 3)
    assert p is not None and p.accept_len is None and not p.busy


@pytest.mark.parametrize(
    ("running", "bucket"), [(None, UNKNOWN_LOAD), (1, 0), (3, 0), (4, 1), (15, 1), (16, 2), (64, 3), (500, 3)]
)
def test_load_bucket(running, bucket):
    assert load_bucket(running, (4, 16, 64)) == bucket


def test_rate_from_len_needs_slots():
    assert rate_from_len(1.57, 3) == pytest.approx(0.19)
    assert rate_from_len(1.57, None) is None
    assert rate_from_len(None, 3) is None


def test_sliding_window_matches_a_recount_of_its_last_items():
    rng = random.Random(1)
    items = [(rng.randrange(3), rng.randrange(230, 250)) for _ in range(500)]
    w = Sliding(50)
    for b, v in items:
        w.add(b, v)
    want: dict[int, Counter[int]] = {}
    for b, v in items[-50:]:
        want.setdefault(b, Counter())[v] += 1
    assert w.n == 50
    assert w.strata == {b: dict(c) for b, c in want.items()}
    assert w.copy() == w.strata and w.copy() is not w.strata


def test_head_keeps_the_first_items_only():
    h = Head(3)
    for v in (1, 2, 3, 4, 5):
        h.add(0, v)
    assert h.full and h.strata == {0: {1: 1, 2: 1, 3: 1}}


def test_sliding_window_forgets_intervals_older_than_max_age():
    w = Sliding(100, max_age=60.0)
    for t in range(0, 200, 10):
        w.add(0, t, at=float(t))
    assert sorted(w.strata[0]) == [130, 140, 150, 160, 170, 180, 190]
    w.add(0, 999, at=None)  # no timestamp: only the count bound applies
    assert w.n == 8


def test_seconds_drops_the_zone():
    naive = datetime(2025, 6, 1, 12)
    assert (
        seconds(naive) == seconds(naive.replace(tzinfo=UTC)) == (naive - datetime(1970, 1, 1)).total_seconds()
    )
    assert seconds(None) is None


def test_age_is_only_a_preference_below_keep_intervals():
    """A quiet server: one line every 3 minutes; 30 minutes hold 10, the window keeps 25."""
    w = Sliding(100, max_age=1800.0, keep=25)
    for i in range(60):
        w.add(0, i, at=180.0 * i)
    assert w.n == 25 and sorted(w.strata[0]) == list(range(35, 60))
    busy = Sliding(100, max_age=60.0, keep=5)
    for t in range(0, 200, 2):
        busy.add(0, t, at=float(t))
    assert busy.n == 31  # enough recent ones: age decides, as before


def test_extend_keeps_the_same_floor_as_add():
    one, bulk = Sliding(50, 100.0, keep=20), Sliding(50, 100.0, keep=20)
    ats = [37.0 * i for i in range(120)]
    for i, at in enumerate(ats):
        one.add(i % 3, i, at)
    bulk.extend([i % 3 for i in range(120)], list(range(120)), ats)
    assert one.entries() == bulk.entries() and one.strata == bulk.strata and one.n == bulk.n == 20


@pytest.mark.parametrize("seed", range(6))
def test_long_batches_leave_the_window_as_one_add_each(seed: int) -> None:
    """The bulk way for long batches (evictions found on the times, histograms changed per
    pair) against ``add`` line by line: out-of-order and missing times, restarts of the clock."""
    rng = random.Random(seed)
    size, max_age, keep = [(50, 30.0, 20), (2000, 1800.0, 50), (80, 5.0, 1)][seed % 3]
    one, bulk = Sliding(size, max_age, keep), Sliding(size, max_age, keep)
    clock = 0.0
    for _ in range(12):
        n = rng.choice([1, 63, 64, 200, 3000])
        ats: list[float | None] = []
        for _ in range(n):
            # Whole seconds, so that times meet the age limit exactly; now and then a jump.
            clock += rng.choice([0.0, 1.0, 1.0, 2.0, -3.0]) if rng.random() < 0.99 else 400.0
            ats.append(None if rng.random() < 0.05 else clock)
        buckets = [rng.randrange(4) for _ in range(n)]
        values = [rng.randrange(100, 110) for _ in range(n)]
        for b, v, at in zip(buckets, values, ats, strict=True):
            one.add(b, v, at)
        bulk.extend(buckets, values, ats)
        assert one.entries() == bulk.entries()
        assert one.strata == bulk.strata and one.n == bulk.n
        assert all(h and all(h.values()) for h in bulk.strata.values())
