"""A host not on UTC: log times written in local wall-clock time are read in the host's zone.

SGLang prints naive local time. The agent runs with ``TZ`` set to a zone with
a whole-hour (Los Angeles) and a half-hour (Kolkata) offset; the log says
"now" in that zone. The timestamp metric must be the real wall clock, and the
stall rule must not mistake a fresh log for one silent for hours. Both logs go
quiet, so both stall once the agent has watched them silent for ``stall_s`` (2 s
here: the stall clock starts with the agent, issue 25); the silence each finding
reports is measured against the wall clock: seconds for the fresh log, an hour for
the old one.
"""

from __future__ import annotations

import re
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for


def _log(path: Path, end: datetime, n: int = 40) -> None:
    """``n`` busy Decode lines, one a second, the last at wall time ``end`` (naive)."""
    start = end - timedelta(seconds=n - 1)
    lines = synth.startup(start - timedelta(seconds=30), 1)
    lines += [synth.decode_line(start + timedelta(seconds=i), 2.4 + (i % 5) * 0.02, 10) for i in range(n)]
    path.write_text("".join(line + "\n" for line in lines))


def _stalled(agent: AgentProcess, source: str) -> bool:
    findings = agent.api("/api/findings") or []
    return any(f.get("rule") == "log_stalled" and f.get("source") == source for f in findings)


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Kolkata"])
def test_local_wall_clock_log_gives_real_timestamps_and_no_stall(tmp_path: Path, zone: str) -> None:
    tz = ZoneInfo(zone)
    wall_now = datetime.now(tz).replace(microsecond=0, tzinfo=None)
    fresh, old = tmp_path / "fresh.log", tmp_path / "old.log"
    _log(fresh, wall_now)
    _log(old, wall_now - timedelta(hours=1))
    written = time.time()
    config = tmp_path / "c.yaml"
    config.write_text(
        f"sources:\n  - path: '{fresh}'\n    name: '{fresh}'\n  - path: '{old}'\n    name: '{old}'\n"
        "detect:\n  stall_s: 2\n"
    )
    agent = AgentProcess(tmp_path / "state", ["--config", str(config)], env={"TZ": zone})
    try:
        name = "acceptmon_last_decode_timestamp_seconds"
        wait_for(
            lambda: None not in (agent.metric(name, source=str(fresh)), agent.metric(name, source=str(old))),
            20,
            "no timestamp metric",
        )
        got = agent.metric(name, source=str(fresh))
        assert got is not None
        assert abs(got - written) < 5, f"{zone}: timestamp off by {got - written:+.0f} s"
        old_ts = agent.metric(name, source=str(old))
        assert old_ts is not None and abs(old_ts - (written - 3600)) < 5
        # Both stall once watched silent; the silence each reports is the wall clock's.
        wait_for(lambda: _stalled(agent, str(old)), 20, f"old log never stalled:\n{agent.stderr()}")
        wait_for(lambda: _stalled(agent, str(fresh)), 20, f"fresh log never stalled:\n{agent.stderr()}")
        said = {f["source"]: f["summary"] for f in agent.api("/api/findings") or []}
        assert "silent for 1 h" in said[str(old)], said
        assert re.search(r"silent for \d+ s\b", said[str(fresh)]), said
        for f in agent.api("/api/findings") or []:
            seen = datetime.fromisoformat(f["first_seen"])
            assert seen.tzinfo is not None, f  # ISO 8601 with an offset
            assert abs(seen.timestamp() - time.time()) < 30
        assert f"log times are in {zone}" in agent.stderr()
    finally:
        agent.stop(signal.SIGKILL)
    assert datetime.fromtimestamp(got, UTC).astimezone(tz).replace(tzinfo=None) == wall_now
