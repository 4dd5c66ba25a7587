"""The agent as an SRE runs it: signals, reloads, health, secrets, Slack end to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.slack_server import FakeSlack
from tests.support.wait import wait_for

NOW = datetime.now().replace(microsecond=0)


def decode_lines(n: int, start: datetime, level: float = 2.4) -> list[str]:
    return [
        synth.decode_line(start + timedelta(seconds=i), level + (i % 5) * 0.02, 8 + i % 4) for i in range(n)
    ]


def append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture
def agents():
    started: list[AgentProcess] = []
    yield started
    for a in started:
        a.stop(signal.SIGKILL)


def test_sigterm_checkpoints_and_exits_within_5s(tmp_path: Path, agents: list[AgentProcess]) -> None:
    log = tmp_path / "server.log"
    append(log, synth.startup(NOW, 1) + decode_lines(50, NOW))
    agent = AgentProcess(tmp_path / "state", [str(log)])
    agents.append(agent)
    wait_for(lambda: agent.metric("acceptmon_decode_batches_total") == 50, 20, "lines not read")
    start = time.monotonic()
    assert agent.stop(signal.SIGTERM) == 0, agent.stderr()
    assert time.monotonic() - start < 5
    assert (tmp_path / "state" / "checkpoint.json").exists()
    again = AgentProcess(tmp_path / "state", [str(log)])
    agents.append(again)
    append(log, decode_lines(7, NOW + timedelta(minutes=1)))
    wait_for(
        lambda: again.metric("acceptmon_decode_batches_total") == 57, 20, "restart lost or re-counted lines"
    )


def test_sighup_reload_adds_a_source_and_keeps_positions(tmp_path: Path, agents: list[AgentProcess]) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    append(a, synth.startup(NOW, 1) + decode_lines(30, NOW))
    append(b, synth.startup(NOW, 2) + decode_lines(11, NOW))
    config = tmp_path / "acceptmon.yaml"
    config.write_text(f"sources:\n  - path: {a}\n    name: gpu-a\n")
    agent = AgentProcess(tmp_path / "state", ["--config", str(config)])
    agents.append(agent)
    wait_for(lambda: agent.metric("acceptmon_decode_batches_total", source="gpu-a") == 30, 20, "a not read")
    config.write_text(f"sources:\n  - path: {a}\n    name: gpu-a\n  - path: {b}\n    name: gpu-b\n")
    agent.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: agent.metric("acceptmon_decode_batches_total", source="gpu-b") == 11, 20, "b not added")
    append(a, decode_lines(5, NOW + timedelta(minutes=1)))
    wait_for(
        lambda: agent.metric("acceptmon_decode_batches_total", source="gpu-a") == 35,
        20,
        "a re-read or stalled",
    )
    config.write_text("sources: [{path: 3}]\n")
    agent.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload refused" in agent.stderr(), 20, "a broken config was not refused")
    assert agent.proc.poll() is None
    assert agent.metric("acceptmon_decode_batches_total", source="gpu-b") == 11


def test_health_endpoints_and_unreadable_source(tmp_path: Path, agents: list[AgentProcess]) -> None:
    missing = tmp_path / "not-yet.log"
    agent = AgentProcess(tmp_path / "state", [str(missing)])
    agents.append(agent)
    assert agent.get("/healthz") == "ok\n"
    assert agent.get("/nope") is None
    wait_for(
        lambda: agent.metric("acceptmon_source_up", source=str(missing)) == 0, 10, "missing file shown up"
    )
    append(missing, synth.startup(NOW, 1) + decode_lines(3, NOW))
    wait_for(
        lambda: agent.metric("acceptmon_decode_batches_total", source=str(missing)) == 3,
        20,
        "late file not read",
    )
    assert agent.metric("acceptmon_source_up", source=str(missing)) == 1
    assert agent.api("/api/runs")[0]["run_id"] == "r1"


def test_check_config_reports_a_bad_webhook_without_showing_it(tmp_path: Path) -> None:
    secret = "T0SECRET/B0SECRET/abcdefSECRETtoken"
    config = tmp_path / "c.yaml"
    config.write_text(
        f"sources: [{tmp_path}/x.log]\nnotify:\n  slack:\n    webhook_url_env: ACCEPTMON_TEST_HOOK\n"
    )
    env = {**os.environ, "ACCEPTMON_TEST_HOOK": f"http://hooks.example.com/services/{secret}"}
    out = subprocess.run(
        [sys.executable, "-m", "acceptmon", "check-config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 2
    assert "ACCEPTMON_TEST_HOOK" in out.stderr
    assert "SECRET" not in out.stderr + out.stdout


def test_drop_reaches_slack_once_with_the_changed_key(tmp_path: Path, agents: list[AgentProcess]) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    cfg_json = draft / "config.json"
    cfg_json.write_text('{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}')
    log = tmp_path / "server.log"
    t0 = datetime.now().replace(microsecond=0) - timedelta(seconds=180)  # last line well within stall_s
    append(
        log,
        synth.startup(t0, 1, speculative_draft_model_path=str(draft))
        + decode_lines(60, t0 + timedelta(seconds=50)),
    )
    with FakeSlack() as slack:
        config = tmp_path / "c.yaml"
        config.write_text(
            f"sources: ['{log}']\nnotify:\n  slack:\n    webhook_url_env: ACCEPTMON_TEST_HOOK\n"
            "    allow_insecure_localhost: true\n"
        )
        agent = AgentProcess(
            tmp_path / "state", ["--config", str(config)], env={"ACCEPTMON_TEST_HOOK": slack.url}
        )
        agents.append(agent)
        wait_for(lambda: agent.metric("acceptmon_decode_batches_total") == 60, 20, "run 1 not read")
        cfg_json.write_text('{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 2, 30]}}')
        t1 = t0 + timedelta(seconds=115)
        append(log, synth.shutdown(t1) + synth.startup(t1, 2, speculative_draft_model_path=str(draft)))
        append(log, decode_lines(60, t1 + timedelta(seconds=5), level=1.57))

        def drops() -> list[str]:
            return [k for k in slack.delivered_keys() if k.startswith("acceptance_drop")]

        assert slack.wait_until(lambda: len(drops()) >= 1, 30), agent.stderr()
        body = str(
            next(r.body for r in slack.requests if r.delivered and "acceptance_drop" in str(r.finding_key))
        )
        assert "eagle_aux_hidden_state_layer_ids" in body
        assert "[-1, 2, 30]" in body
        assert slack.token not in agent.stderr()
        wait_for(
            lambda: (
                (agent.metric("acceptmon_notifications_total", notifier="slack", outcome="sent") or 0) >= 1
            ),
            10,
            "not counted",
        )
        assert len(drops()) == 1
