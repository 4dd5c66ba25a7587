"""``PrefixCache.epochs`` in a fixed-offset zone maps the minute rule over a batch's distinct
prefixes (no Python step per prefix): each epoch is exactly what ``epoch`` gives it alone,
whether its minute was seen before, is new in the same batch, or the prefix is not plain."""

from __future__ import annotations

import random
from datetime import timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from acceptmon.log_time import LocalTime
from acceptmon.parse.prefix import PrefixCache
from acceptmon.runs.batch import floats

PLAIN = [
    f"[2026-03-29 0{h}:{m:02d}:{s:02d}{rank}] "
    for h in (0, 1, 2)
    for m in (0, 7, 59)
    for s in (0, 1, 30, 59)
    for rank in ("", " TP0", " DP1 TP3")
]
ODD = [
    "[2026-03-29 01:00:00.250 TP0] ",
    "2026-03-29 01:00:07,125 INFO ",
    "no time at all ",
    "",
    "[x] ",
    "[2026-03-29 01:07:6x] ",
]


@pytest.mark.parametrize("zone", [ZoneInfo("UTC"), timezone(timedelta(hours=5, minutes=30))])
@pytest.mark.parametrize("seed", range(5))
def test_mapped_epochs_equal_one_epoch_each(zone: timezone | ZoneInfo, seed: int) -> None:
    rng = random.Random(seed)
    cache = PrefixCache(LocalTime(zone))
    for _ in range(4):  # batches after batches: minutes known from earlier ones, and new ones
        batch = [rng.choice(PLAIN + ODD) for _ in range(300)]
        got = cache.epochs(batch)
        one = PrefixCache(LocalTime(zone))
        assert got == [one.epoch(p) for p in batch]


def test_floats_of_repeated_and_of_distinct_columns_are_float_of_each() -> None:
    repeated = [f"{2 + i % 9 / 10:.2f}" for i in range(1000)]
    distinct = [f"{1000 + i * 0.37:.2f}" for i in range(1000)]
    mixed = distinct[:40] + repeated
    for col in (repeated, distinct, mixed, [], ["1.5"]):
        assert floats(col) == list(map(float, col))
