"""``acceptmon_build_info``: the agent's /metrics says which release answers; ``oneshot`` prints
the family (the agent's families, issue 25 §10) without its sample (its output is the logs' alone,
so the golden files do not change with the Python that runs them)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from acceptmon import __version__
from acceptmon.apps import oneshot
from acceptmon.log_time import zone
from tests.unit.apps.agent.test_checkpoint_shapes import run_agent, write_log


def test_agent_metrics_carry_build_info(tmp_path: Path) -> None:
    write_log(tmp_path / "server.log")
    _agent, text = run_agent(tmp_path / "state", tmp_path / "server.log")
    line = f'acceptmon_build_info{{python="{platform.python_version()}",version="{__version__}"}} 1.0'
    assert line in text.splitlines()
    assert "# TYPE acceptmon_build_info gauge" in text


def test_oneshot_output_has_no_build_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_log(tmp_path / "server.log")
    assert oneshot.main([str(tmp_path / "server.log")], fmt="prom", tz=zone("UTC")) == 0
    out = capsys.readouterr().out.splitlines()
    assert not [line for line in out if line.startswith("acceptmon_build_info")]
