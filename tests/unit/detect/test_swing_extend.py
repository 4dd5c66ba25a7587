"""``Swing.extend`` (bucket by bucket, a block at a time) leaves what ``add`` pair by pair does."""

from __future__ import annotations

import random

import pytest

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
