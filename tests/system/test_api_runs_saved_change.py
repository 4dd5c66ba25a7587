"""/api/runs rows known only from run snapshots (numbers not in the checkpoint) say the config
change that opened them as the live rows did before the restart (issue 24/25 loose end)."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

T0 = datetime(2026, 11, 30, 9, 0, 0)
KEYS = ("run_id", "change", "changed_keys", "config_hash")


def _run(start: datetime, seed: int, steps: int) -> list[str]:
    body = synth.traffic(random.Random(seed), start + timedelta(seconds=50), 60, 2.2)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps), *body]


def _rows(agent: AgentProcess) -> list[dict[str, Any]]:
    return [{k: r.get(k) for k in KEYS} for r in agent.api("/api/runs") or []]


def test_saved_only_runs_keep_their_change(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    lines = [line for i, steps in enumerate((3, 5, 4, 2)) for line in _run(T0 + timedelta(hours=i), i, steps)]
    log.write_text("\n".join(lines) + "\n")
    state = tmp_path / "state"
    agent = AgentProcess(state, [str(log)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: len(_rows(agent)) == 4, 30, f"four runs never listed: {_rows(agent)}")
        want = _rows(agent)
    finally:
        assert agent.stop() == 0
    assert "speculative_num_steps" in want[1]["change"] and want[1]["changed_keys"]
    # A checkpoint without per-run numbers (older agent, or runs beyond what it keeps): the
    # tracker has its last two runs, r1 and r2 come from their snapshots alone.
    checkpoint = state / "checkpoint.json"
    doc = json.loads(checkpoint.read_text())
    doc.pop("run_stats", None)
    checkpoint.write_text(json.dumps(doc))
    again = AgentProcess(state, [str(log)], env={"TZ": "UTC"})
    try:
        wait_for(lambda: len(_rows(again)) == 4, 30, f"four runs never listed: {_rows(again)}")
        rows = again.api("/api/runs")
        assert rows[1]["intervals"] is None  # known from its snapshot only
        assert _rows(again) == want
    finally:
        assert again.stop() == 0
