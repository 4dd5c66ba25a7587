"""SIGHUP on a running agent: invalid settings keep the running ones and say so in the log and
in acceptmon_config_last_reload_successful; valid ones swap every stage, listen address included."""

from __future__ import annotations

import signal
import socket
from datetime import datetime
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.tools import free_port
from tests.support.wait import wait_for

NOW = datetime.now().replace(microsecond=0)


@pytest.fixture
def agents():
    started: list[AgentProcess] = []
    yield started
    for a in started:
        a.stop(signal.SIGKILL)


def settings_text(log: Path, listen: str, top: str = "", source: str = "") -> str:
    return f"listen: {listen!r}\nread_draft_config: false\n{top}sources:\n  - path: {log}\n    name: gpu\n{source}"


def start(tmp_path: Path, log: Path, settings: Path) -> AgentProcess:
    port = free_port()
    settings.write_text(settings_text(log, f"127.0.0.1:{port}"))
    return AgentProcess(tmp_path / "state", ["--config", str(settings)], port=port, listen_flag=False)


def get(port: int, path: str) -> str | None:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return str(r.read().decode())
    except OSError:
        return None


def test_sighup_refuses_bad_settings_then_applies_good_ones(
    tmp_path: Path, agents: list[AgentProcess]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(synth.startup(NOW, 1)) + "\n")
    settings = tmp_path / "acceptmon.yaml"
    agent = start(tmp_path, log, settings)
    agents.append(agent)
    assert agent.metric("acceptmon_config_last_reload_successful") == 1
    first = agent.metric("acceptmon_config_last_reload_success_timestamp_seconds")
    assert first is not None and first > 0

    top, source = "read_from_beginning: 'no'\npol_interval: 1\n", "    poll_interval: 2\n"
    settings.write_text(settings_text(log, f"127.0.0.1:{agent.port}", top, source))
    agent.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: agent.metric("acceptmon_config_last_reload_successful") == 0, 20, "not marked failed")
    err = agent.stderr()
    assert "reload refused, keeping the running settings" in err
    for problem in (
        "read_from_beginning: expected true or false (a YAML bool), got 'no'",
        "top level: unknown key 'pol_interval'; did you mean 'poll_interval'?",
        "sources[0].poll_interval: only ssh:// sources use it",
    ):
        assert problem in err
    assert "Traceback" not in err
    assert agent.get("/healthz") == "ok\n" and agent.proc.poll() is None
    assert agent.metric("acceptmon_config_last_reload_success_timestamp_seconds") == first

    new_port = free_port()
    settings.write_text(settings_text(log, f"127.0.0.1:{new_port}"))
    agent.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: get(new_port, "/healthz") == "ok\n", 20, "the new listen address does not serve")
    wait_for(lambda: get(agent.port, "/healthz") is None, 20, "the old address still serves")
    agent.port = new_port
    wait_for(lambda: agent.metric("acceptmon_config_last_reload_successful") == 1, 20, "not marked done")
    later = agent.metric("acceptmon_config_last_reload_success_timestamp_seconds")
    assert later is not None and later >= first
    assert agent.metric("acceptmon_server_starts_total", source="gpu") == 1, "a kept source was re-read"


def test_sighup_to_an_address_that_cannot_be_bound_keeps_the_old_server(
    tmp_path: Path, agents: list[AgentProcess]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(synth.startup(NOW, 1)) + "\n")
    settings = tmp_path / "acceptmon.yaml"
    agent = start(tmp_path, log, settings)
    agents.append(agent)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        settings.write_text(settings_text(log, f"127.0.0.1:{busy}"))
        agent.proc.send_signal(signal.SIGHUP)
        wait_for(
            lambda: agent.metric("acceptmon_config_last_reload_successful") == 0, 20, "not marked failed"
        )
    assert f"cannot listen on 127.0.0.1:{busy}: address already in use" in agent.stderr()
    assert agent.get("/healthz") == "ok\n"
