"""The real agent (``acceptmon run``) on a vLLM config change and on an SGLang weight sync.

vLLM: two starts whose ``speculative_config`` names another draft model; the drop after
the second is found live, with the positions that fell, and the API key of the start line
appears nowhere. SGLang: acceptance goes 2.71 → 1.0 after an online weight update (no
restart); the agent is killed in the middle of that segment and started again, and the
segment is still there once, with the drop tied to it.
"""

from __future__ import annotations

import json
import random
import signal
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.testing import changes, synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

DROP = "acceptance_drop_after_change"
SECRET = "sk-live-0123456789abcdef"


def _append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("\n".join(lines) + "\n")


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def _read_all(agent: AgentProcess, log: Path) -> None:
    want = float(_lines(log))
    wait_for(
        lambda: agent.metric("acceptmon_lines_total", source=str(log)) == want, 30, "agent never read the log"
    )


def _saved_current(state: Path, source: str) -> str | None:
    """The kind of the current run in the checkpoint on disk (the agent is killed after it)."""
    try:
        saved = json.loads((state / "checkpoint.json").read_text())
        return str(saved["runs"][source]["current"]["kind"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _drop(agent: AgentProcess) -> dict[str, Any] | None:
    found = [f for f in agent.api("/api/findings") or [] if f["rule"] == DROP]
    return found[0] if found else None


def test_vllm_drop_after_a_config_change_live(tmp_path: Path) -> None:
    rng = random.Random(3)
    t0 = datetime.now().replace(microsecond=0) - timedelta(minutes=20)
    log = tmp_path / "vllm.log"
    first = [changes.non_default_args_line(t0, api_key=[SECRET])]
    first += changes.vllm_traffic(rng, t0 + timedelta(seconds=20), 32, [0.82, 0.64, 0.47])
    _append(log, first)
    agent = AgentProcess(tmp_path / "state", [str(log)], env={"TZ": "UTC"})
    try:
        _read_all(agent, log)
        assert _drop(agent) is None
        t1 = t0 + timedelta(minutes=8)
        spec = {**changes.VLLM_ARGS["speculative_config"], "model": "yuhuili/EAGLE3-v2"}
        second = [changes.non_default_args_line(t1, api_key=[SECRET], speculative_config=spec)]
        second += changes.vllm_traffic(rng, t1 + timedelta(seconds=20), 32, [0.80, 0.33, 0.12])
        _append(log, second)
        wait_for(lambda: _drop(agent) is not None, 30, "no drop finding after the config change")
        drop = _drop(agent)
        assert drop is not None and (drop["run_id"], drop["baseline_run_id"]) == ("r2", "r1")
        assert drop["changed_keys"] == ["args.speculative_config.model"] and drop["run_kind"] == "start"
        assert "fell at positions 1, 2" in drop["summary"]
        runs = agent.api("/api/runs")
        assert [(r["run_id"], r["kind"], r["settings"]["num_steps"]) for r in runs] == [
            ("r1", "start", 3),
            ("r2", "start", 3),
        ]
        assert agent.metric("acceptmon_spec_position_accept_ratio", source=str(log), position="2") is not None
        everything = json.dumps(
            [agent.api("/api/runs/r1"), agent.api("/api/runs/r2"), agent.api("/api/findings")]
        )
        assert SECRET not in everything and "<redacted:" in everything
    finally:
        assert agent.stop() == 0
    assert not any(SECRET.encode() in p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file())


def test_sglang_weight_sync_segment_survives_an_agent_kill_mid_segment(tmp_path: Path) -> None:
    rng = random.Random(5)
    t0 = datetime.now().replace(microsecond=0) - timedelta(minutes=10)
    log = tmp_path / "sglang.log"
    lines = synth.startup(t0, seed=4411)
    lines += synth.traffic(rng, t0 + timedelta(seconds=50), 60, 2.71, 0.06)
    t1 = t0 + timedelta(minutes=3)
    lines += changes.weight_update(t1)
    lines += synth.traffic(rng, t1 + timedelta(seconds=5), 8, 1.02, 0.02)
    _append(log, lines)
    state = tmp_path / "state"
    agent = AgentProcess(state, [str(log)], env={"TZ": "UTC"})

    def kinds(a: AgentProcess) -> list[tuple[str, str]]:
        return [(r["run_id"], r["kind"]) for r in a.api("/api/runs") or []]

    try:
        _read_all(agent, log)
        assert kinds(agent) == [("r1", "start"), ("r2", "weight_update")]
        wait_for(lambda: _saved_current(state, str(log)) == "weight_update", 10, "segment never checkpointed")
    finally:
        agent.stop(signal.SIGKILL)
    _append(log, list(synth.traffic(rng, t1 + timedelta(seconds=30), 45, 1.02, 0.02)))
    again = AgentProcess(state, [str(log)], env={"TZ": "UTC"})
    try:
        _read_all(again, log)
        wait_for(lambda: _drop(again) is not None, 30, "no drop finding after the weight sync")
        drop = _drop(again)
        assert drop is not None and (drop["run_id"], drop["baseline_run_id"]) == ("r2", "r1")
        assert (drop["run_kind"], drop["run_reason"]) == ("weight_update", "Update weights end.")
        assert "after an online weight update (no restart; segment r2" in drop["summary"]
        assert drop["changed_keys"] == ["runtime.weight_updates"]
        assert kinds(again) == [("r1", "start"), ("r2", "weight_update")]
        assert again.metric("acceptmon_server_starts_total", source=str(log)) == 1.0
    finally:
        assert again.stop() == 0
