"""A floor removed by a reload takes its finding with it, at the reload and across an agent
restart (issue 25 item 5): nothing is left to be below."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from acceptmon.apps.agent.agent import Agent
from acceptmon.detect.findings import FLOOR
from acceptmon.testing import synth
from tests.unit.apps.agent.test_agent_reconfigure import settings

NOW = datetime(2026, 3, 1, 12, 0, 0)


def floor_findings(agent: Agent) -> list[Any]:
    return [f for f in agent.evaluate(wall_clock=False) if f.rule == FLOOR and f.active]


def _floored(tmp_path: Path) -> Agent:
    lines = synth.startup(NOW, 1)
    lines += [synth.decode_line(NOW + timedelta(seconds=10 * i), 2.4, 8) for i in range(30)]
    (tmp_path / "server.log").write_text("\n".join(lines) + "\n")
    agent = Agent(settings(tmp_path, detect={"floor": {"accept_len": 3.0}}))
    agent.open()
    agent.step()
    assert [f.source for f in floor_findings(agent)] == ["gpu"]
    return agent


def test_removing_the_floor_by_reload_resolves_its_finding(tmp_path: Path) -> None:
    agent = _floored(tmp_path)
    try:
        agent.reconfigure(settings(tmp_path))
        assert floor_findings(agent) == []
        resolved = [f for f in agent.announce.findings if f.rule == FLOOR]
        assert resolved and not resolved[0].active
    finally:
        agent.close()


def test_a_floor_removed_while_the_agent_was_down_resolves_at_its_start(tmp_path: Path) -> None:
    agent = _floored(tmp_path)
    agent.close()  # checkpoints the open floor finding
    restarted = Agent(settings(tmp_path))
    try:
        restarted.open()
        restarted.step()
        assert floor_findings(restarted) == []
    finally:
        restarted.close()
