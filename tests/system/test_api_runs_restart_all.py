"""Every kept run keeps its numbers across an agent restart, not only the tracker's last two, so
"against the last good run" stays in /api/verdict (issue 25 item 6); /api/runs and /api/verdict
take ``?source=NAME`` (§10)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

T0 = datetime(2026, 11, 30, 9, 0, 0)
KEYS = ("run_id", "intervals", "accept_len_median", "accept_len_ci", "accept_rate", "changed_keys")


def _run(start: datetime, level: float, seed: int, steps: int) -> list[str]:
    rng = random.Random(seed)
    body = synth.traffic(rng, start + timedelta(seconds=50), 120, level)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps), *body]


def _logs(tmp_path: Path) -> tuple[Path, Path]:
    """A good run, a worse one, a third no better: the last good run is r1, not the baseline."""
    log = tmp_path / "server.log"
    runs = [*_run(T0, 2.41, 1, 3), *_run(T0 + timedelta(hours=5), 1.57, 2, 5)]
    log.write_text("\n".join([*runs, *_run(T0 + timedelta(hours=10), 1.55, 3, 4)]) + "\n")
    other = tmp_path / "other.log"
    other.write_text("\n".join(_run(T0, 2.0, 4, 3)) + "\n")
    return log, other


def _rows(agent: AgentProcess, source: Path) -> list[dict[str, Any]]:
    rows = agent.api("/api/runs") or []
    return [{k: r[k] for k in KEYS} for r in rows if r["source"] == str(source)]


def _verdict(agent: AgentProcess, source: Path) -> Any:
    return next(v["verdict"] for v in agent.api("/api/verdict") or [] if v["source"] == str(source))


def test_three_runs_keep_their_numbers_and_last_good_across_a_restart(tmp_path: Path) -> None:
    log, other = _logs(tmp_path)
    cli = subprocess.run(
        [sys.executable, "-m", "acceptmon", "runs", "--format", "json", "--timezone", "UTC", str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    want = [{k: r[k] for k in KEYS} for r in json.loads(cli.stdout)["runs"]]
    assert len(want) == 3 and all(r["intervals"] for r in want)
    agent = AgentProcess(tmp_path / "state", [str(log), str(other)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: _rows(agent, log) == want, 30, f"/api/runs never matched: {_rows(agent, log)}")
        verdict = _verdict(agent, log)
        assert verdict["against_last_good"]["against_run_id"] == "r1"
    finally:
        assert agent.stop() == 0
    again = AgentProcess(tmp_path / "state", [str(log), str(other)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: _rows(again, log) == want, 30, f"numbers lost: {_rows(again, log)}")
        assert _verdict(again, log) == verdict
    finally:
        again.stop()


def test_source_filter(tmp_path: Path) -> None:
    log, other = _logs(tmp_path)
    agent = AgentProcess(tmp_path / "state", [str(log), str(other)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: len(_rows(agent, log)) == 3, 30, "three runs never listed")
        assert {r["source"] for r in agent.api("/api/runs")} == {str(log), str(other)}
        assert {r["source"] for r in agent.api(f"/api/runs?source={log}")} == {str(log)}
        both = agent.api(f"/api/runs?source={log}&source={other}")
        assert {r["source"] for r in both} == {str(log), str(other)}
        assert agent.api("/api/runs?source=nothing-by-that-name") == []
        assert [v["source"] for v in agent.api(f"/api/verdict?source={other}")] == [str(other)]
    finally:
        assert agent.stop() == 0
