"""A source's series is kept as machine numbers: it goes to the drawing child as a few
buffers (8 bytes a value), not as an object per value, and numpy reads it as it is."""

from __future__ import annotations

import pickle

import numpy as np

from acceptmon.apps.report.series import SourceSeries


def test_a_series_pickles_as_buffers_and_comes_back_equal() -> None:
    s = SourceSeries()
    n = 100_000
    for run in ("r1", "r2"):
        s.add(
            run, [1.8e9 + i / 3 for i in range(n)], [2.0 + (i % 97) / 100 for i in range(n)], list(range(n))
        )
    data = pickle.dumps(s, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(data) < 1.05 * 8 * 4 * 2 * n  # times, lengths, loads and run indices: 8 bytes each
    back = pickle.loads(data)
    assert (back.secs, back.accept_len, back.running, back.by_run) == (
        s.secs,
        s.accept_len,
        s.running,
        s.by_run,
    )
    assert list(back.by_run["r2"]) == list(range(n, 2 * n))
    assert np.asarray(back.accept_len, dtype=np.float64).tolist() == list(s.accept_len)
