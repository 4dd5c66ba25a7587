"""The agent answers "is it better now?" too: /api/runs as `acceptmon runs --format json`, /api/verdict, /api/runs/<id>."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

T0 = datetime(2026, 11, 30, 9, 0, 0)


def _run(start: datetime, level: float, seed: int, steps: int) -> list[str]:
    rng = random.Random(seed)
    body = synth.traffic(rng, start + timedelta(seconds=50), 120, level)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps), *body]


def test_api_runs_matches_the_runs_command_and_survives_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([*_run(T0, 2.41, 1, 3), *_run(T0 + timedelta(hours=5), 1.57, 2, 5)]) + "\n")
    cli = subprocess.run(
        [sys.executable, "-m", "acceptmon", "runs", "--format", "json", "--timezone", "UTC", str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert cli.returncode == 3, cli.stderr
    (expected,) = json.loads(cli.stdout)["sources"]
    keys = ("run_id", "intervals", "accept_len_median", "accept_len_ci", "accept_rate", "changed_keys")

    def rows(agent: AgentProcess) -> list[dict]:
        return [{k: r[k] for k in keys} for r in agent.api("/api/runs") or []]

    want = [{k: r[k] for k in keys} for r in expected["runs"]]
    agent = AgentProcess(tmp_path / "state", [str(log)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: rows(agent) == want, 30, f"/api/runs never matched: {rows(agent)} vs {want}")
        verdict = agent.api("/api/verdict")
        assert verdict == [{"source": str(log), "verdict": expected["verdict"]}]
        full = agent.api("/api/runs/r2")
        assert full[0]["config"]["server_args"]["speculative_num_steps"] == 5
        assert all("config" not in r for r in agent.api("/api/runs"))
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{agent.port}/api/runs/r9", timeout=5)
            raise AssertionError("an unknown run answered")
        except urllib.error.HTTPError as err:
            assert err.code == 404
    finally:
        assert agent.stop() == 0
    again = AgentProcess(tmp_path / "state", [str(log)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: rows(again) == want, 30, "per-run numbers lost across a restart")
    finally:
        again.stop()
