"""An aged window taking many long parts in time order reads only each part's own times.

Backfill extends the tail window (thousands of intervals, evicted by age) in the sampler's
parts, thousands per batch: reading all held times per part made the detector's cost grow
with the window. The held times are known to be in order instead, until a part says otherwise.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import count

import pytest

from acceptmon.detect import series
from acceptmon.detect.series import Sliding


def _parts(
    rng: random.Random, clock: Iterator[int], disorder: float
) -> Iterator[tuple[list[int], list[int], list[float | None]]]:
    for _ in range(40):
        n = rng.choice([1, 5, 64, 65, 300])
        ats: list[float | None] = []
        for _ in range(n):
            at = float(next(clock))
            if rng.random() < disorder:
                ats.append(None if rng.random() < 0.5 else at - 40.0)
            else:
                ats.append(at)
        yield [rng.randrange(4) for _ in range(n)], [rng.randrange(100, 110) for _ in range(n)], ats


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("disorder", [0.0, 0.002])
def test_parts_in_order_leave_the_window_as_one_add_each(seed: int, disorder: float) -> None:
    """Mostly in order (the known-ordered way), now and then a late or missing time (read
    again), and a window restored from a checkpoint half-way (order not known)."""
    rng = random.Random(seed)
    size, max_age, keep = [(50, 30.0, 20), (600, 200.0, 50), (80, 5.0, 1)][seed % 3]
    one, bulk = Sliding(size, max_age, keep), Sliding(size, max_age, keep)
    clock = count(0, rng.choice([1, 2]))
    for k, (buckets, values, ats) in enumerate(_parts(rng, clock, disorder)):
        if k == 20:
            bulk = Sliding.restored(size, max_age, bulk.entries(), keep)
        for b, v, at in zip(buckets, values, ats, strict=True):
            one.add(b, v, at)
        bulk.extend(buckets, values, ats)
        assert one.entries() == bulk.entries()
        assert one.strata == bulk.strata and one.n == bulk.n


def test_a_long_window_is_not_read_again_per_part(monkeypatch: pytest.MonkeyPatch) -> None:
    read = 0
    time_of = series._TIME

    def counted(item: tuple[float | None, int, int]) -> float | None:
        nonlocal read
        read += 1
        return time_of(item)

    window = Sliding(5000, 3600.0, 100)
    window.extend([0] * 5000, [200] * 5000, [float(t) for t in range(5000)])
    monkeypatch.setattr(series, "_TIME", counted)
    for part in range(100):
        at = 5000 + 64 * part
        window.extend([1] * 64, [210] * 64, [float(at + t) for t in range(64)])
    assert window.n == 3601  # the last hour: times 7799 to 11399
    assert read < 1000  # not 100 parts × 5000 held times
