"""Every kept run keeps its numbers across an agent restart, not only the tracker's last two, so
"against the last good run" stays in /api/verdict; /api/runs and /api/verdict take
``?source=NAME`` (issue 25 items 6 and §10)."""

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


def _rows(agent: AgentProcess, query: str = "") -> list[dict[str, Any]]:
    return [{k: r[k] for k in KEYS} for r in agent.api(f"/api/runs{query}") or []]


def test_three_runs_keep_their_numbers_and_last_good_across_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    runs = [*_run(T0, 2.41, 1, 3), *_run(T0 + timedelta(hours=5), 1.57, 2, 5)]
    log.write_text("\n".join([*runs, *_run(T0 + timedelta(hours=10), 1.55, 3, 4)]) + "\n")
    other = tmp_path / "other.log"
    other.write_text("\n".join(_run(T0, 2.0, 4, 3)) + "\n")
    agent = AgentProcess(tmp_path / "state", [str(log), str(other)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: len(_rows(agent, f"?source={log}")) == 3, 30, "three runs never listed")
        wait_for(lambda: all(r["intervals"] for r in _rows(agent)), 30, "numbers never complete")
        before = _rows(agent, f"?source={log}")
        verdict = agent.api(f"/api/verdict?source={log}")
        assert [v["source"] for v in verdict] == [str(log)]
        assert verdict[0]["verdict"]["against_last_good"]["against_run_id"] == "r1"
        assert {r["source"] for r in agent.api(f"/api/runs?source={other}")} == {str(other)}
        assert agent.api("/api/runs?source=nothing-by-that-name") == []
        assert {r["source"] for r in agent.api("/api/runs")} == {str(log), str(other)}
    finally:
        assert agent.stop() == 0
    again = AgentProcess(tmp_path / "state", [str(log), str(other)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: _rows(again, f"?source={log}") == before, 30, f"numbers lost: {_rows(again)}")
        assert before[0]["intervals"] and before[0]["accept_len_median"] is not None
        assert again.api(f"/api/verdict?source={log}") == verdict
    finally:
        again.stop()
    cli = subprocess.run(
        [sys.executable, "-m", "acceptmon", "runs", "--format", "json", "--timezone", "UTC", str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert [{k: r[k] for k in KEYS} for r in json.loads(cli.stdout)["runs"]] == before
