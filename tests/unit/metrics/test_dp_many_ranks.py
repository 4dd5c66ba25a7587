"""A log naming thousands of distinct DP ranks costs the store O(1) per line, not O(ranks).

Reading 100,000 distinct DP-rank prefixes was 26x slower than a log of the same size with
few: every rank of every batch recomputed the whole-server gauges over all remembered ranks
(up to ``MAX_DP_RANKS``) and scanned them all for idle ones. The work is counted here as
passes over the remembered ranks (a functional bound, not a timing).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from acceptmon.ingest import Pipeline
from acceptmon.metrics.collect import render
from acceptmon.metrics.store import MAX_DP_RANKS
from acceptmon.model import Chunk
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 12, 0, 0)
RANKS = 3000


class CountingDict(dict[Any, Any]):
    """A dict that counts the passes made over it (``values``/``items``/``keys``)."""

    passes = 0

    def values(self) -> Any:
        CountingDict.passes += 1
        return super().values()

    def items(self) -> Any:
        CountingDict.passes += 1
        return super().items()

    def keys(self) -> Any:
        CountingDict.passes += 1
        return super().keys()


def _lines() -> list[str]:
    out = list(synth.startup(T0, 1))
    for i in range(RANKS):  # every line a new DP rank, all within a minute (none idle)
        ts = T0 + timedelta(minutes=1, seconds=i // 100)
        out.append(synth.decode_line(ts, 2.0, running=1, rank=f" DP{i} TP{i % 8} EP{i % 8}"))
    return out


def _gauge(text: str, name: str) -> float:
    line = next(line for line in text.splitlines() if line.startswith(name + "{"))
    return float(line.rsplit(" ", 1)[1])


def test_many_distinct_ranks_cost_a_bounded_number_of_passes() -> None:
    pipeline = Pipeline(bulk=True)
    stats = pipeline.store.stats("dp")
    stats.dp, stats.dp_ts = CountingDict(), CountingDict()
    CountingDict.passes = 0
    pipeline.feed(Chunk("dp", tuple(_lines()), 1, None, ""))
    assert len(stats.dp) == MAX_DP_RANKS
    assert CountingDict.passes <= 10, f"{CountingDict.passes} passes over the DP ranks for {RANKS} lines"


@pytest.mark.parametrize("bulk", [True, False], ids=["fast-path", "records"])
def test_many_distinct_ranks_aggregate_the_last_seen(bulk: bool) -> None:
    pipeline = Pipeline(bulk=bulk)
    pipeline.feed(Chunk("dp", tuple(_lines()), 1, None, ""))
    text = render(pipeline.store)
    assert _gauge(text, "acceptmon_running_requests") == MAX_DP_RANKS  # one request per kept rank
    assert _gauge(text, "acceptmon_decode_batches_total") == RANKS
    assert list(pipeline.store.stats("dp").dp)[-1] == RANKS - 1
