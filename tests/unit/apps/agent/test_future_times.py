"""A line stamped in the future (bad RTC, NTP step, one corrupted timestamp) is a counted anomaly:
never its source's latest time, never a finding's time, and ``log_stalled`` still fires.

On main the year-9999 line became the source's latest time, so the stall rule saw a negative
silence until that date, and findings were stamped 9999-12-31 (Slack, Grafana, links).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.clock import ManualClock
from acceptmon.detect.findings import STALLED
from acceptmon.runs.ahead import AHEAD_S
from acceptmon.settings import from_mapping
from acceptmon.testing import synth

NOW = datetime.now().replace(microsecond=0)
SOON = datetime.now(UTC) + timedelta(days=1)


def _write(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    cfg = from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "read_draft_config": False,
            "sources": [{"path": str(tmp_path / "server.log"), "name": "gpu", "read_from_beginning": True}],
        }
    )
    a = Agent(cfg, clock=ManualClock(time.time()))
    yield a
    a.close()


def _read(agent: Agent) -> None:
    agent.step()
    while agent.loop.backlog:
        agent.step()


def _time_ahead(agent: Agent) -> float:
    return agent.pipeline.store.sources["gpu"].error_kinds.get("time_ahead", 0.0)


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "per-line"])
def test_a_future_line_is_counted_and_never_the_latest_time(tmp_path: Path, agent: Agent, bulk: bool) -> None:
    agent.pipeline.bulk = bulk
    start = NOW - timedelta(hours=2)
    lines = synth.startup(start, 1)
    lines += [synth.decode_line(start + timedelta(seconds=30 + 10 * i), 2.4, 8) for i in range(40)]
    lines.append(synth.decode_line(datetime(9999, 12, 31, 23, 59, 59), 2.4, 8))
    _write(tmp_path / "server.log", lines)
    agent.open()
    _read(agent)

    latest = agent.detector.last_time("gpu")
    assert latest is not None and latest.timestamp() <= time.time()
    assert (agent.pipeline.store.sources["gpu"].gauges["last_decode_ts"] or 0) <= time.time()
    assert agent.pipeline.store.sources["gpu"].counters["decode_batches"] == 41  # its values count

    # The stall clock starts with the agent (issue 25): silent for two hours, stalled once the
    # agent itself has watched it silent for stall_s.
    assert not [f for f in agent.evaluate() if f.rule == STALLED]
    agent.detector.evaluate(datetime.now(UTC) + timedelta(seconds=agent.detector.config.stall_s + 1))
    findings = agent.evaluate()
    stalls = [f for f in findings if f.rule == STALLED]
    assert stalls and stalls[0].active, findings
    for f in findings:
        for at in (f.first_seen, f.resolved_at):
            assert at is None or at < SOON, f
    assert _time_ahead(agent) == 1


def test_a_line_a_little_ahead_is_trusted_one_far_ahead_is_not(tmp_path: Path, agent: Agent) -> None:
    """Within the tolerance (NTP-synced hosts, an SSH host slightly ahead) the time is the line's."""
    now = datetime.fromtimestamp(agent.clock.now())
    lines = synth.startup(now - timedelta(minutes=5), 1)
    lines.append(synth.decode_line(now + timedelta(seconds=AHEAD_S / 2), 2.4, 8))
    _write(tmp_path / "server.log", lines)
    agent.open()
    _read(agent)
    latest = agent.detector.last_time("gpu")
    assert _time_ahead(agent) == 0 and latest is not None
    assert latest.timestamp() == pytest.approx(agent.clock.now() + AHEAD_S / 2, abs=1)
    _write(tmp_path / "server.log", [synth.decode_line(now + timedelta(seconds=2 * AHEAD_S), 2.4, 8)])
    _read(agent)
    assert _time_ahead(agent) == 1
    assert agent.detector.last_time("gpu") == latest  # the last trusted time stays the latest
