"""SIGHUP swaps a whole core: a reload that cannot build a changed source or a notifier changes
nothing (the running sources, notifiers and settings stay), and builds nothing that lingers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.agent import agent as agent_module
from acceptmon.apps.agent.agent import Agent
from acceptmon.notify import NotifySettingsError
from acceptmon.settings import Settings, from_mapping
from acceptmon.testing import synth

NOW = datetime(2026, 3, 1, 12, 0, 0)
HOOK = "https://hooks.slack.com/services/T000/B000/whole"


def settings(tmp_path: Path, *names: str, **extra: Any) -> Settings:
    raw = {
        "state_dir": str(tmp_path / "state"),
        "read_draft_config": False,
        "sources": [{"path": str(tmp_path / f"{n}.log"), "name": n} for n in names],
    }
    return from_mapping({**raw, **extra})


def write(path: Path, start: datetime, n: int) -> None:
    lines = [synth.decode_line(start + timedelta(seconds=10 * i), 2.4, 8) for i in range(n)]
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def track_closes(monkeypatch: pytest.MonkeyPatch, fail: str = "") -> list[str]:
    """Names of the sources built from now on that were closed; building ``fail`` raises."""
    closed: list[str] = []
    real = agent_module.open_source

    def build(cfg: Any, *args: Any, **kwargs: Any) -> Any:
        if cfg.name == fail:
            raise OSError("the ssh config vanished")
        source = real(cfg, *args, **kwargs)
        close = source.close

        def closing() -> None:
            closed.append(cfg.name)
            close()

        monkeypatch.setattr(source, "close", closing)
        return source

    monkeypatch.setattr(agent_module, "open_source", build)  # the one the agent calls
    return closed


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    (tmp_path / "a.log").write_text("".join(line + "\n" for line in synth.startup(NOW, 1)))
    write(tmp_path / "a.log", NOW, 5)
    a = Agent(settings(tmp_path, "a"))
    a.open()
    a.step()
    yield a
    a.close()


def test_a_source_that_cannot_be_built_changes_nothing(
    agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, running, thresholds = agent.settings, agent.sources["a"][1], agent.detector.config
    closed = track_closes(monkeypatch, fail="c")
    with pytest.raises(OSError):
        agent.reconfigure(settings(tmp_path, "a", "b", "c", detect={"floor": {"accept_len": 3.0}}))
    assert list(agent.sources) == ["a"] and agent.sources["a"][1] is running
    assert agent.settings is before and agent.detector.config is thresholds
    assert closed == ["b"]  # built for the reload, closed when it failed
    write(tmp_path / "a.log", NOW + timedelta(minutes=5), 3)
    assert agent.step() == 3  # the running source goes on where it was


def test_a_notifier_that_cannot_be_built_closes_the_sources_built_for_it(
    agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEPTMON_HOOK_W", HOOK)
    with_slack = settings(tmp_path, "a", "b", notify={"slack": {"webhook_url_env": "ACCEPTMON_HOOK_W"}})
    monkeypatch.delenv("ACCEPTMON_HOOK_W")  # gone between the load and the build
    closed = track_closes(monkeypatch)
    with pytest.raises(NotifySettingsError):
        agent.reconfigure(with_slack)
    assert list(agent.sources) == ["a"] and closed == ["b"] and agent.announce.worker is None
