"""The range of levels a run sustained, per load bucket, as a low/high ratio."""

from __future__ import annotations

import random

import pytest

from acceptmon.detect.swing import Swing


def test_two_blocks_in_a_bucket_give_its_low_over_high() -> None:
    s = Swing(10)
    for value in [200] * 10 + [250] * 10:
        s.add(1, value)
    assert s.ratio() == pytest.approx(200 / 250)


def test_one_block_or_none_claims_no_swing() -> None:
    s = Swing(10)
    for value in [200] * 10 + [250] * 9:  # the second block is not closed
        s.add(1, value)
    assert s.ratio() == 1.0
    assert Swing(0).ratio() == 1.0


def test_buckets_are_blocked_apart_so_load_is_not_a_swing() -> None:
    s = Swing(10)
    for i in range(40):  # small batches accept more than big ones, steadily
        s.add(0, 260) if i % 2 else s.add(3, 220)
    assert s.ratio() == 1.0


def test_the_smallest_ratio_of_any_bucket_is_the_run_s() -> None:
    s = Swing(5)
    for value in (200, 240):
        for _ in range(5):
            s.add(0, value)
    for value in (200, 300):
        for _ in range(5):
            s.add(2, value)
    assert s.ratio() == pytest.approx(200 / 300)


def test_extend_is_add_in_turn() -> None:
    rng = random.Random(3)
    buckets = [rng.randrange(3) for _ in range(1000)]
    values = [rng.randrange(180, 260) for _ in range(1000)]
    one, bulk = Swing(37), Swing(37)
    for b, v in zip(buckets, values, strict=True):
        one.add(b, v)
    for at in range(0, 1000, 111):
        bulk.extend(buckets[at : at + 111], values[at : at + 111])
    assert (one.blocks, one.lows, one.highs) == (bulk.blocks, bulk.lows, bulk.highs)
    assert one.ratio() < 1.0
