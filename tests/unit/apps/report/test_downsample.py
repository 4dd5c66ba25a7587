"""The report's plots show what a screen can: bounded points, and a lone spike or drop still seen."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from acceptmon.apps.report.downsample import envelope
from acceptmon.apps.report.plots import OVER_TIME, over_time
from acceptmon.apps.report.series import SourceSeries

COLUMNS = 1000


def _series(n: int, runs: int = 2, spike: float = 4.0, drop: float = 1.0) -> SourceSeries:
    """``n`` intervals a second apart in ``runs`` runs around 2.4, one spike and one drop."""
    rng, start = random.Random(n), datetime(2026, 11, 1, tzinfo=UTC)
    s = SourceSeries()
    for i in range(n):
        s.secs.append((start + timedelta(seconds=i)).timestamp())
        s.accept_len.append(round(rng.uniform(2.2, 2.6), 3))
        s.running.append(rng.randrange(1, 64))
        s.by_run.setdefault(f"r{1 + i * runs // n}", []).append(i)
    s.accept_len[n // 3] = spike
    s.accept_len[2 * n // 3 + 1] = drop
    return s


@pytest.mark.parametrize("n", [3_000, 30_000, 300_000])
def test_buckets_are_bounded_by_columns_and_runs_and_keep_a_lone_spike_and_drop(n: int) -> None:
    s = _series(n, runs=3)
    env = envelope([float(i) for i in range(n)], s.accept_len, list(s.by_run.values()), COLUMNS, 25)
    assert len(env.at) <= COLUMNS + 3 and len(env.ends) == 3
    assert max(env.hi) == 4.0 and min(env.lo) == 1.0
    spike = env.hi.index(4.0)
    assert env.at[spike] <= n // 3 < (env.at[spike + 1] if spike + 1 < len(env.at) else n)


def test_with_fewer_intervals_than_columns_the_median_is_the_rolling_median() -> None:
    s = _series(400, runs=2)
    groups, window = list(s.by_run.values()), 25
    env = envelope([float(i) for i in range(400)], s.accept_len, groups, COLUMNS, window)
    rolling = [
        statistics.median(vals[max(0, j - window) : j + 1])
        for vals in ([s.accept_len[i] for i in g] for g in groups)
        for j in range(len(vals))
    ]
    assert env.at == list(range(400)) and env.mid == rolling and env.lo == env.hi == list(s.accept_len)


def _plotted(s: SourceSeries) -> tuple[int, list[float]]:
    """Points drawn by the over-time plot (line vertices and stroke ends), and their y values."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(figsize=OVER_TIME)
    ax: Any = axes  # its lines and collections, as drawn
    try:
        over_time(s, [], [])(ax, "light")
        ys: list[Any] = []
        count = 0
        for line in ax.get_lines():
            count += len(line.get_xdata())
            ys += list(line.get_ydata())
        for coll in ax.collections:  # strokes: each path's vertices (a stroke's two ends)
            for path in coll.get_paths():
                count += len(path.vertices)
                ys += [p[1] for p in path.vertices]
        return count, [float(y) for y in ys]
    finally:
        plt.close(fig)


def test_the_over_time_plot_draws_a_bounded_number_of_points_with_the_spike_and_drop() -> None:
    short, short_ys = _plotted(_series(2_000))
    long, long_ys = _plotted(_series(200_000))
    bound = 6 * (int(OVER_TIME[0] * 100) + 2)  # per bucket: two dots, a stroke's two ends, a median
    assert short < bound and long < bound, (short, long)
    for ys in (short_ys, long_ys):
        assert 4.0 in ys and 1.0 in ys
