"""A real ``acceptmon run`` told to poll once an hour: scrapes alone keep /metrics and /api/* current."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

NOW = datetime.now().replace(microsecond=0)


def append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[tuple[AgentProcess, Path]]:
    log = tmp_path / "server.log"
    append(log, synth.startup(NOW, 1))
    config = tmp_path / "acceptmon.yaml"
    config.write_text(
        f"poll_interval: 3600\nread_draft_config: false\nsources:\n  - path: {log}\n    name: gpu\n"
    )
    proc = AgentProcess(tmp_path / "state", ["--config", str(config)])
    try:
        yield proc, log
    finally:
        proc.stop(signal.SIGKILL)


def test_each_scrape_shows_the_lines_appended_before_it(agent: tuple[AgentProcess, Path]) -> None:
    proc, log = agent

    def shows(running: int) -> bool:
        return proc.metric("acceptmon_running_requests", source="gpu") == running

    for i in range(5):
        append(log, [synth.decode_line(NOW + timedelta(seconds=i), 2.4, 100 + i)])
        # Far sooner than the hour between polls, and appends wake nothing: the scrapes read.
        wait_for(lambda i=i: shows(100 + i), 10, f"running={100 + i} on /metrics")
    assert proc.metric("acceptmon_decode_batches_total", source="gpu") == 5
    [verdict] = proc.api("/api/verdict")
    assert verdict["source"] == "gpu"
    assert [r["run_id"] for r in proc.api("/api/runs")] == ["r1"]
