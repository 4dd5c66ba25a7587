"""A long backlog: /healthz answers at once, SIGTERM mid-catch-up exits cleanly, the restart resumes."""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

T0 = datetime(2026, 11, 28, 9, 0, 0)
SIZE = 30 << 20


def write_backlog(path: Path) -> int:
    lines = synth.startup(T0, seed=1)
    size = sum(len(x) + 1 for x in lines)
    i = 0
    with path.open("w") as f:
        f.write("".join(x + "\n" for x in lines))
        while size < SIZE:
            block = [
                synth.decode_line(T0 + timedelta(seconds=i + j), 2.3 + (j % 7) * 0.05) for j in range(1000)
            ]
            text = "".join(x + "\n" for x in block)
            f.write(text)
            size += len(text)
            i += 1000
    return len(lines) + i


def positions(state: Path) -> list[int]:
    doc = json.loads((state / "checkpoint.json").read_text())
    files = doc["sources"]["server"]["files"].values()
    return [s["offset"] for f in files for s in f["streams"]]


@pytest.fixture
def agents():
    started: list[AgentProcess] = []
    yield started
    for a in started:
        a.stop(signal.SIGKILL)


def test_backlog_serves_at_once_stops_on_sigterm_and_resumes(
    tmp_path: Path, agents: list[AgentProcess]
) -> None:
    log = tmp_path / "server.log"
    total = write_backlog(log)
    state = tmp_path / "state"
    args = ["--config", str(_config(tmp_path, log))]
    started = time.monotonic()
    first = AgentProcess(state, args)  # returns once /healthz answers
    agents.append(first)
    assert time.monotonic() - started < 5, "the HTTP server must not wait for the backlog"
    wait_for(lambda: (first.metric("acceptmon_lines_total", source="server") or 0) > 0, 20, "no lines read")
    seen = first.metric("acceptmon_lines_total", source="server") or 0
    assert seen < total, "the backlog was read before /metrics answered: the test proves nothing"
    stopping = time.monotonic()
    assert first.stop(signal.SIGTERM, timeout=30) == 0, first.stderr()
    assert time.monotonic() - stopping < 5, "SIGTERM during catch-up must stop within the unit's timeout"
    assert sum(positions(state)) > 0, "the restart must resume from a checkpoint taken during catch-up"
    again = AgentProcess(state, args)
    agents.append(again)
    wait_for(lambda: again.metric("acceptmon_lines_total", source="server") == total, 120, "count not exact")
    assert again.metric("acceptmon_lines_total", source="server") == total


def _config(tmp_path: Path, log: Path) -> Path:
    cfg = tmp_path / "acceptmon.yaml"
    cfg.write_text(f"checkpoint_interval: 1\nsources:\n  - name: server\n    path: {log}\n")
    return cfg
