"""A log of many short server runs, each opened by a config change (report/runs scaling)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from acceptmon.testing import synth


def many_runs(
    path: str, runs: int, intervals: int = 20, seed: int = 7, levels: tuple[float, ...] = (2.4, 2.7, 3.0)
) -> None:
    """``runs`` starts of a few minutes each; every start changes ``cuda_graph_max_bs``, and the
    accept length cycles through ``levels`` (far apart levels make a finding per drop)."""
    rng = random.Random(seed)
    ts = datetime(2026, 10, 1, 0, 0, 0)
    with open(path, "w") as out:
        for i in range(runs):
            lines = synth.startup(ts, seed=1, cuda_graph_max_bs=16 + i % 33)
            lines += synth.traffic(rng, ts + timedelta(seconds=50), intervals, levels[i % len(levels)])
            lines += synth.shutdown(ts + timedelta(seconds=50 + 2 * intervals + 10))
            out.write("\n".join(lines) + "\n")
            ts += timedelta(minutes=5)
