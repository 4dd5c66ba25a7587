"""The tail and recent windows count their histograms when they are read, not per part.

Backfill extends a run's tail window (2000 intervals, evicted by age) in thousands of sample
parts; its histograms are read once, when the run ends and leaves them as the next run's
baseline. A long part moves the intervals only; reading ``strata`` counts them again.
"""

from __future__ import annotations

import random

import pytest

from acceptmon.detect import series
from acceptmon.detect.series import Sliding


@pytest.mark.parametrize("seed", range(16))
def test_parts_read_now_and_then_are_one_add_each(seed: int) -> None:
    """Long and short parts, single adds between them, the histograms read only sometimes;
    windows with ages (the tail) and without (the recent window)."""
    rng = random.Random(seed)
    size, max_age, keep = [(50, 30.0, 20), (2000, 1800.0, 50), (80, 5.0, 1), (100, None, 0)][seed % 4]
    one, bulk = Sliding(size, max_age, keep), Sliding(size, max_age, keep)
    clock = 0.0
    for _ in range(40):
        n = rng.choice([1, 3, 64, 200, 700])
        ats: list[float | None] = []
        for _ in range(n):
            clock += rng.choice([0.0, 1.0, 1.0, 2.0]) if rng.random() < 0.995 else -3.0
            ats.append(None if rng.random() < 0.01 else clock)
        buckets = [rng.randrange(-1, 4) for _ in range(n)]
        values = [rng.randrange(100, 110) for _ in range(n)]
        for b, v, at in zip(buckets, values, ats, strict=True):
            one.add(b, v, at)
        if n == 1:
            bulk.add(buckets[0], values[0], ats[0])
        else:
            bulk.extend(buckets, values, ats)
        assert one.n == bulk.n
        if rng.random() < 0.2:
            assert one.strata == bulk.strata
    assert one.entries() == bulk.entries()
    assert one.strata == bulk.strata and one.copy() == bulk.copy()


def test_long_parts_count_nothing_until_read(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = 0
    pair = series._PAIR

    def counting(item: tuple[float | None, int, int]) -> tuple[int, int]:
        nonlocal counted
        counted += 1
        b, v = pair(item)
        return b, v

    window = Sliding(2000, 1800.0, 200)
    monkeypatch.setattr(series, "_PAIR", counting)
    for part in range(100):
        at = 200.0 * part
        window.extend([part % 4] * 200, [200 + part % 7] * 200, [at + t for t in range(200)])
    assert counted == 0 and window.n == 1801  # the last 30 minutes
    strata = window.strata
    assert counted == 1801 and sum(sum(h.values()) for h in strata.values()) == 1801
    assert window.strata is strata and counted == 1801  # counted once
