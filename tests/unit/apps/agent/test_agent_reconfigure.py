"""A reload swaps every stage whole: thresholds reach sources already followed, notifiers and
watched files are rebuilt, and a notifier that cannot be built leaves the old one running."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.detect.findings import FLOOR
from acceptmon.notify import NotifySettingsError
from acceptmon.settings import Settings, from_mapping
from acceptmon.testing import synth

NOW = datetime(2026, 3, 1, 12, 0, 0)
HOOK = "https://hooks.slack.com/services/T000/B000/reconfigure"


def settings(tmp_path: Path, **extra: Any) -> Settings:
    raw = {
        "state_dir": str(tmp_path / "state"),
        "read_draft_config": False,
        "sources": [{"path": str(tmp_path / "server.log"), "name": "gpu"}],
    }
    return from_mapping({**raw, **extra})


def append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def decode(n: int, start: datetime) -> list[str]:
    return [synth.decode_line(start + timedelta(seconds=10 * i), 2.4, 8) for i in range(n)]


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    append(tmp_path / "server.log", synth.startup(NOW, 1) + decode(20, NOW))
    a = Agent(settings(tmp_path))
    a.open()
    a.step()  # open() reads nothing: the backlog is read by steps
    yield a
    a.close()


def floor_findings(agent: Agent) -> list[Any]:
    return [f for f in agent.evaluate(wall_clock=False) if f.rule == FLOOR and f.active]


def test_new_thresholds_apply_to_a_source_already_followed(agent: Agent, tmp_path: Path) -> None:
    assert agent.detector.status("gpu") is not None and not floor_findings(agent)
    agent.reconfigure(settings(tmp_path, detect={"floor": {"accept_len": 3.0}}))
    append(tmp_path / "server.log", decode(15, NOW + timedelta(minutes=10)))
    agent.step()
    assert [f.source for f in floor_findings(agent)] == ["gpu"]


def test_watch_files_and_draft_reading_are_swapped(agent: Agent, tmp_path: Path) -> None:
    watched = tmp_path / "launch.yaml"
    watched.write_text("tp: 8\n")
    agent.reconfigure(settings(tmp_path, watch_files=[str(watched)], read_draft_config=True))
    assert agent.watched.paths() == [str(watched)]
    append(tmp_path / "server.log", synth.startup(NOW + timedelta(hours=1), 2))
    agent.step()
    run = agent.tracker.current("gpu")
    assert run is not None and run.config is not None
    assert str(watched) in str(run.config)


def test_notifiers_are_rebuilt_and_a_failed_build_keeps_the_old_one(
    agent: Agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEPTMON_HOOK_A", HOOK)
    with_slack = settings(tmp_path, notify={"slack": {"webhook_url_env": "ACCEPTMON_HOOK_A"}})
    assert agent.announce.worker is None
    agent.reconfigure(with_slack)
    first = agent.announce.worker
    assert first is not None and [q.notifier for q in first.notifier.stats()] == ["slack"]
    agent.reconfigure(with_slack)
    second = agent.announce.worker
    assert second is not first and second.notifier is not first.notifier
    monkeypatch.delenv("ACCEPTMON_HOOK_A")  # gone between the load and the build
    with pytest.raises(NotifySettingsError):
        agent.reconfigure(with_slack)
    assert agent.announce.worker is not None and agent.announce.worker.notifier is second.notifier
    assert all(t.is_alive() for t in agent.announce.worker._threads)
    agent.reconfigure(settings(tmp_path))
    assert agent.announce.worker is None


def _serves(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
            return bool(r.read() == b"ok\n")
    except OSError:
        return False


def test_same_port_on_another_host_address_is_rebound(agent: Agent, tmp_path: Path) -> None:
    from acceptmon.apps.agent import daemon
    from tests.support.tools import free_port

    port = free_port()
    agent.settings = settings(tmp_path, listen=f"127.0.0.1:{port}")
    old = daemon.serve(agent)
    new, ok = daemon._rebind(agent, settings(tmp_path, listen=f"0.0.0.0:{port}"), old)
    assert ok and new is not old and new.port == port and _serves(port)
    http = [old]
    daemon._back_to(agent, http, new)  # the rest of the reload failed: the old address again
    try:
        assert http[0] is not old and http[0] is not new and _serves(port)
    finally:
        http[0].stop()


def test_an_address_that_cannot_be_bound_keeps_the_old_server(agent: Agent, tmp_path: Path) -> None:
    from acceptmon.apps.agent import daemon
    from tests.support.tools import free_port

    port = free_port()
    agent.settings = settings(tmp_path, listen=f"127.0.0.1:{port}")
    old = daemon.serve(agent)
    try:
        kept, ok = daemon._rebind(agent, settings(tmp_path, listen=f"192.0.2.1:{port}"), old)
        assert not ok and kept is old and _serves(port)
        http = [old]
        daemon._back_to(agent, http, old)
        assert http == [old] and not agent.reload_ok and _serves(port)
    finally:
        old.stop()
