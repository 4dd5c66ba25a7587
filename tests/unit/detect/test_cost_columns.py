"""The drop meter's sums at C speed: the same tokens, to the last bit, as line by line.

``CostMeter`` takes a Decode batch's times and throughputs as columns (``cost.generated``) and
adds one drop's tokens with ``accumulate`` rather than a call per line; the prom output prints
the counter's float, so it must be exactly what adding line by line gives.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest

from acceptmon.detect.cost import CostMeter, generated, generated_steps
from acceptmon.detect.series import seconds
from tests.unit.detect.test_cost import T0, drop


def _reference(
    last: float | None, times: list[float | None], rates: list[float]
) -> tuple[list[tuple[float, float]], float | None]:
    """The rule, one line at a time."""
    steps = []
    for at, rate in zip(times, rates, strict=True):
        if at is None:
            continue
        if last is not None and at > last:
            steps.append((at, rate * (at - last)))
        last = at
    return steps, last


def _times(rng: random.Random, n: int) -> list[float | None]:
    start, out = 1.8e9 + rng.random(), []
    for _ in range(n):
        start += rng.choice([0.0, 0.0, 1.0, 2.5, -1.0])  # same second, on, back
        out.append(None if rng.random() < 0.02 else start)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_generated_columns_are_the_rule_line_by_line(seed: int) -> None:
    rng = random.Random(seed)
    times = _times(rng, rng.randrange(0, 300))
    if seed % 2:
        times = [t for t in times if t is not None]  # the columns' own way
    rates = [rng.uniform(0, 5000) for _ in times]
    last = rng.choice([None, 1.8e9])
    want = _reference(last, times, rates)
    assert generated_steps(last, times, rates) == want
    at, tokens, end = generated(last, times, rates)
    assert (list(zip(at, tokens, strict=True)), end) == want


@pytest.mark.parametrize("seed", range(30))
def test_a_drop_counts_the_same_tokens_in_batches_as_line_by_line(seed: int) -> None:
    rng = random.Random(seed)
    start = seconds(T0)
    assert start is not None
    times = [start - 50.0]
    for _ in range(rng.randrange(0, 400)):  # in order (a line in the same second adds none)
        times.append(times[-1] + rng.choice([0.0, 1.0, 2.0]))
    rates = [rng.uniform(0, 5000) for _ in times]
    resolved = None if seed % 3 else T0 + timedelta(seconds=rng.randrange(0, 300))
    meters = []
    for size in (1, rng.randrange(2, 200)):
        meter = CostMeter()
        meter._lines("s", [times[0]], [rates[0]])
        meter.note([drop()])
        if resolved is not None:
            meter.note([replace(drop(), active=False, resolved_at=resolved)])
        for at in range(1, len(times), size):
            meter._lines("s", list(times[at : at + size]), rates[at : at + size])
        meters.append(meter)
    one, batched = meters
    assert batched.lost == one.lost
    assert batched.fill(drop()).tokens_lost == one.fill(drop()).tokens_lost
