"""Which log times backfill samples at: never after now, never one far from both neighbours."""

from __future__ import annotations

from acceptmon.apps.backfill.window import TimeWindow

NOW = 2_000_000_000.0
T = NOW - 3 * 86400


def _run(times: list[float]) -> tuple[list[float], TimeWindow]:
    w = TimeWindow(NOW)
    out = [t for x in times for t in w.admit("s", x)]
    out += [t for ts in w.finish().values() for t in ts]
    return out, w


def test_a_plain_log_is_trusted_whole() -> None:
    times = [T + i for i in range(10)]
    assert _run(times)[0] == times


def test_future_and_isolated_times_are_refused_and_counted() -> None:
    times = [T, T + 1, 253402300799.0, T + 2, 978307200.0, T + 3, T + 4]
    out, w = _run(times)
    assert out == [T, T + 1, T + 2, T + 3, T + 4]
    assert (w.future, w.outliers) == (1, 1)
    assert w.refused() is not None and "2 line time(s)" in (w.refused() or "")


def test_real_jumps_and_sparse_logs_are_kept() -> None:
    restart = [T, T + 1, T + 2 * 86400, T + 2 * 86400 + 1]  # down for two days, then back
    assert _run(restart)[0] == restart
    sparse = [T + 7200 * i for i in range(6)]  # one line every two hours
    assert _run(sparse)[0] == sparse


def test_a_bad_first_or_last_time_is_refused() -> None:
    assert _run([978307200.0, T, T + 1, T + 2])[0] == [T, T + 1, T + 2]
    assert _run([T, T + 1, T + 2, 978307200.0])[0] == [T, T + 1, T + 2]
    assert _run([T, T + 1, T + 8 * 86400])[0] == [T, T + 1]  # a lone last line a week on
