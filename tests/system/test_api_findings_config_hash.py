"""/api/findings rows carry the finding's run's config hash, the one ``acceptmon_finding_active``
labels it with, and no secret from the start line (issue 24: fleet alerts group by rollout)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

T0 = datetime(2026, 11, 30, 9, 0, 0)
SECRET = "sk-live-PLANTEDpolishKey0042"


def _run(start: datetime, level: float, seed: int, steps: int) -> list[str]:
    body = synth.traffic(random.Random(seed), start + timedelta(seconds=50), 120, level)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps, api_key=SECRET), *body]


def test_findings_carry_the_metric_config_hash_and_no_secret(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    lines = [*_run(T0, 2.41, 1, 3), *_run(T0 + timedelta(hours=5), 1.57, 2, 5)]
    log.write_text("\n".join(lines) + "\n")
    agent = AgentProcess(tmp_path / "state", [str(log)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: agent.api("/api/findings"), 30, "no finding")
        text = agent.get("/api/findings") or ""
        found = agent.api("/api/findings")[0]
        assert found["run_id"] == "r2" and found["config_hash"]
        labels = {"rule": found["rule"], "config_hash": found["config_hash"]}
        assert agent.metric("acceptmon_finding_active", **labels) == 1
        assert SECRET not in text and "PLANTED" not in text
    finally:
        assert agent.stop() == 0
