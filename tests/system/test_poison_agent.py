"""A live ``acceptmon run`` survives every poison line of issue 14, and so does its restart."""

from __future__ import annotations

import signal
from datetime import datetime
from pathlib import Path

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for
from tests.unit.parse.test_hostile import INJECTIONS, POISON

T0 = datetime(2026, 1, 1)


def _append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def _errors(agent: AgentProcess) -> float:
    text = agent.get("/metrics") or ""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("acceptmon_parse_errors_total{")
    )


def test_poison_lines_neither_crash_the_agent_nor_its_restart(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    poison = [POISON[name] for name in sorted(POISON)]
    big = synth.server_args_line(T0, blob=[0] * 700_000)  # 2 MB start line
    _append(log, [synth.server_args_line(T0), *poison, big, *INJECTIONS, synth.decode_line(T0, 2.0)])
    agent = AgentProcess(tmp_path / "state", [str(log)])
    try:
        wait_for(
            lambda: agent.metric("acceptmon_decode_batches_total") == 1, 20, "good line after poison not read"
        )
        assert _errors(agent) >= 6
        assert agent.metric("acceptmon_parse_errors_total", kind="too_large") == 1
        assert agent.api("/api/runs") is not None and isinstance(agent.api("/api/findings"), list)
        _append(log, [synth.decode_line(T0, 2.5)] * 3)
        wait_for(lambda: agent.metric("acceptmon_decode_batches_total") == 4, 20, "later good lines not read")
        assert agent.proc.poll() is None
        assert "Traceback" not in agent.stderr() and "sk-" not in agent.stderr()
    finally:
        agent.stop(signal.SIGKILL)
    # kill -9, then the same poison again after the restart point: no crash loop.
    _append(log, [*poison, synth.decode_line(T0, 2.0)])
    again = AgentProcess(tmp_path / "state", [str(log)])
    try:
        wait_for(
            lambda: again.metric("acceptmon_decode_batches_total") == 5,
            20,
            "restart lost or re-counted lines",
        )
        assert again.get("/healthz") == "ok\n" and again.proc.poll() is None
        assert "Traceback" not in again.stderr()
    finally:
        again.stop(signal.SIGKILL)
