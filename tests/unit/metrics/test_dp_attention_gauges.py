"""DP attention logs one Decode line per DP rank: gauges describe the whole server, not the last rank."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from acceptmon.ingest import Pipeline
from acceptmon.metrics.collect import render
from acceptmon.model import Chunk
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 12, 0, 0)


def _lines() -> list[str]:
    out = list(synth.startup(T0, 1))
    for i in range(20):
        ts = T0 + timedelta(minutes=1, seconds=i)
        out.append(synth.decode_line(ts, 3.0, running=10, rank=" DP0 TP0"))
        out.append(synth.decode_line(ts, 2.0, running=30, rank=" DP1 TP4"))
    return out


def _gauge(text: str, name: str) -> float:
    line = next(line for line in text.splitlines() if line.startswith(name + "{"))
    return float(line.rsplit(" ", 1)[1])


@pytest.mark.parametrize("bulk", [True, False], ids=["fast-path", "records"])
def test_gauges_aggregate_dp_ranks_weighted_by_running_requests(bulk: bool) -> None:
    pipeline = Pipeline(bulk=bulk)
    lines = _lines()
    pipeline.feed(Chunk("dp", tuple(lines), 1, None, ""))
    text = render(pipeline.store)
    assert _gauge(text, "acceptmon_running_requests") == 40
    assert _gauge(text, "acceptmon_spec_accept_length") == pytest.approx((3.0 * 10 + 2.0 * 30) / 40)
    # (3-1)/3 and (2-1)/3, weighted by 10 and 30 requests
    assert _gauge(text, "acceptmon_spec_accept_rate") == pytest.approx(
        (2 / 3 * 10 + 1 / 3 * 30) / 40, abs=1e-3
    )
    assert _gauge(text, "acceptmon_decode_batches_total") == 40  # counters sum over ranks


def test_one_rank_keeps_its_own_values() -> None:
    pipeline = Pipeline()
    lines = [
        *synth.startup(T0, 1),
        synth.decode_line(T0 + timedelta(minutes=1), 2.5, running=7, rank=" DP0 TP0"),
    ]
    pipeline.feed(Chunk("dp", tuple(lines), 1, None, ""))
    text = render(pipeline.store)
    assert (
        _gauge(text, "acceptmon_running_requests") == 7
        and _gauge(text, "acceptmon_spec_accept_length") == 2.5
    )


def test_an_idle_rank_drops_out_of_the_aggregate() -> None:
    pipeline = Pipeline()
    lines = list(synth.startup(T0, 1))
    lines.append(synth.decode_line(T0 + timedelta(minutes=1), 2.0, running=30, rank=" DP1 TP4"))
    for i in range(5):  # DP1 went idle; DP0 keeps logging for five more minutes
        lines.append(synth.decode_line(T0 + timedelta(minutes=2 + i), 3.0, running=10, rank=" DP0 TP0"))
    pipeline.feed(Chunk("dp", tuple(lines), 1, None, ""))
    text = render(pipeline.store)
    assert (
        _gauge(text, "acceptmon_running_requests") == 10
        and _gauge(text, "acceptmon_spec_accept_length") == 3.0
    )
