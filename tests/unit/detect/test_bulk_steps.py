"""The rules' bulk steps (``Swing.extend``, ``Persistence.steps``) move as their one-by-one steps do."""

from __future__ import annotations

import random

import pytest

from acceptmon.detect.rules import Persistence
from acceptmon.detect.swing import Swing


@pytest.mark.parametrize("seed", range(30))
def test_extend_in_pieces_is_add_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    size = rng.choice([1, 3, 10, 100])
    pairs = [(rng.randrange(-1, 4), rng.randrange(100, 300)) for _ in range(rng.randrange(0, 2000))]
    one, bulk = Swing(size), Swing(size)
    for bucket, value in pairs:
        one.add(bucket, value)
    at = 0
    while at < len(pairs):
        piece = pairs[at : at + rng.randrange(1, 400)]
        bulk.extend([b for b, _ in piece], [v for _, v in piece])
        at += len(piece)
    assert (bulk.blocks, bulk.counts, bulk.lows, bulk.highs) == (one.blocks, one.counts, one.lows, one.highs)
    assert bulk.ratio() == one.ratio()


@pytest.mark.parametrize("seed", range(30))
def test_persistence_steps_are_step_in_turn(seed: int) -> None:
    """``Persistence.steps`` skips over good stretches; it must move as ``step`` does."""
    rng = random.Random(seed)
    n, fraction = rng.choice([(5, 1.0), (10, 0.8), (3, 0.5)])
    odds = rng.choice([0.02, 0.3, 0.9])
    one, bulk = Persistence(n, fraction, seed % 2 == 0), Persistence(n, fraction, seed % 2 == 0)
    flags = [rng.random() < odds for _ in range(rng.randrange(0, 1500))]
    want = [(k, t) for k, flag in enumerate(flags) if (t := one.step(flag)) is not None]
    got: list[tuple[int, object]] = []
    at = 0
    while at < len(flags):
        piece = flags[at : at + rng.randrange(1, 300)]
        got += [(at + k, t) for k, t in bulk.steps(piece)]
        at += len(piece)
    assert got == want
    assert (bulk.flags, bulk.bad, bulk.active) == (one.flags, one.bad, one.active)
