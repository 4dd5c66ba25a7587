"""The rules' bulk steps (``Swing.extend``, ``Persistence.steps``, ``Drift.steps``) move as their
one-by-one steps do."""

from __future__ import annotations

import random

import pytest

from acceptmon.detect.rules import Drift, Persistence, Transition
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
    assert (bulk.blocks, bulk.lows, bulk.highs) == (one.blocks, one.lows, one.highs)
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


def _drift_pairs(rng: random.Random) -> list[tuple[int, float]]:
    """Stretches at one level each: drops, recoveries and rises among them, some beyond the clips."""
    pairs: list[tuple[int, float]] = []
    for _ in range(rng.randrange(0, 30)):
        level = rng.choice([2.6, 2.5, 2.0, 1.5, 3.5, 0.5, 9.0])  # the last two clipped
        pairs += [(rng.randrange(-1, 4), rng.gauss(level, 0.3)) for _ in range(rng.randrange(1, 200))]
    return pairs


def _moves(
    drift: Drift, pairs: list[tuple[int, float]], rng: random.Random | None
) -> list[tuple[int, str, float, float]]:
    """(index, transition, level, sum) at each transition: one by one, or in random pieces."""
    out: list[tuple[int, str, float, float]] = []
    at = 0

    def moved(k: int, t: Transition) -> None:
        out.append((at + k, str(t), drift.level, drift.sum))

    while at < len(pairs):
        piece = pairs[at : at + (rng.randrange(1, 500) if rng else 1)]
        if rng is None:
            t = drift.step(*piece[0])
            if t is not None:
                moved(0, t)
        else:
            drift.steps([b for b, _ in piece], [v for _, v in piece], moved)
        at += len(piece)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_drift_steps_are_step_in_turn(seed: int) -> None:
    """``Drift.steps`` takes its shortfalls as a column and skips stretches at 0: it must fire
    and resolve where ``step`` does, with the same ``level`` and ``sum`` to the last bit."""
    rng = random.Random(seed)
    ref_n, threshold, min_drop = rng.choice([1, 5, 20]), rng.choice([0.5, 2.0]), rng.choice([0.1, 0.45, 0.6])
    pairs = _drift_pairs(rng)
    one, bulk = Drift(min_drop, threshold, ref_n), Drift(min_drop, threshold, ref_n)
    assert _moves(bulk, pairs, rng) == _moves(one, pairs, None)
    assert (bulk.level, bulk.sum, bulk.active, bulk.refs, bulk.learning) == (
        one.level,
        one.sum,
        one.active,
        one.refs,
        one.learning,
    )


def test_drift_cases_fire_and_resolve() -> None:
    """Guard against cases that test nothing."""
    moves = [
        t
        for seed in range(40)
        for _, t, _, _ in _moves(Drift(0.1, 0.5, 5), _drift_pairs(random.Random(seed)), None)
    ]
    assert moves.count("fire") > 20
    assert moves.count("resolve") > 20
