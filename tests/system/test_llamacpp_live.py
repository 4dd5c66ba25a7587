"""The live agent on a llama.cpp log: a restart with another draft model, then a drop, is found."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "llamacpp" / "restart-drop.log"


def test_the_agent_finds_a_drop_after_a_llamacpp_restart(tmp_path: Path) -> None:
    lines = SAMPLE.read_text().splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if " I build: " in line][1]
    log = tmp_path / "llama-server.log"
    log.write_text("".join(lines[:second]))
    agent = AgentProcess(tmp_path / "state", [str(log)])
    try:
        wait_for(
            lambda: agent.metric("acceptmon_spec_lines_total", engine="llamacpp") == 60, 20, "run 1 not read"
        )
        with log.open("a") as f:  # the server restarts with a low-bit draft, live
            f.write("".join(lines[second:]))

        def drops() -> list[dict[str, object]]:
            found = agent.api("/api/findings") or []
            return [f for f in found if f["rule"] == "acceptance_drop_after_change" and f["active"]]

        wait_for(lambda: len(drops()) == 1, 30, f"no drop found\n{agent.stderr()}")
        drop = drops()[0]
        assert drop["engine"] == "llamacpp" and drop["changed_keys"] == ["args.model_draft"]
        assert agent.metric("acceptmon_server_starts_total", engine="llamacpp") == 2
        assert (
            agent.metric("acceptmon_finding_active", rule="acceptance_drop_after_change", engine="llamacpp")
            == 1
        )
    finally:
        agent.stop(signal.SIGKILL)
