"""One alert per rollout: a real agent, Prometheus and Alertmanager, and a Slack imitation.

Five sources labelled as five hosts (gpu-1 … gpu-5) behind one agent; Prometheus scrapes it
and evaluates the shipped rules, Alertmanager runs deploy/alertmanager/ (timings shortened)
and posts to ``FakeSlack``. A draft change that drops on four hosts is one message naming the
change and the four hosts; the fifth host's own drop is a second; a silence holds; the
rollout's resolve arrives once.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptmon.testing import synth
from tests.conftest import ROOT
from tests.support.procs import Proc, run_prometheus, start_process
from tests.support.slack_server import FakeSlack
from tests.support.tools import free_port, require_tool
from tests.support.wait import poll_until, wait_for
from tests.system.test_deploy import RULES

pytestmark = pytest.mark.system

AM_DIR = ROOT / "deploy" / "alertmanager"
HOSTS = [f"gpu-{i}" for i in range(1, 6)]
DRAFT_V2 = "/models/Qwen3-32B-EAGLE3-v2"
#: Alertmanager's timings in the test: short, so the whole story runs in well under a minute.
GROUP_WAIT_S, GROUP_INTERVAL_S = 3, 3


def alertmanager_binary() -> str:
    """Debian's package installs ``prometheus-alertmanager``; upstream's binary is ``alertmanager``."""
    return shutil.which("prometheus-alertmanager") or require_tool("alertmanager")


def test_the_shipped_configuration_checks() -> None:
    done = subprocess.run(
        [require_tool("amtool"), "check-config", str(AM_DIR / "alertmanager.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
    assert "1 inhibit rules" in done.stdout and "1 templates" in done.stdout


@dataclass
class Fleet:
    """Five logs, one per host, each written from its own log-time cursor."""

    root: Path
    clock: datetime = field(
        default_factory=lambda: datetime.now().replace(microsecond=0) - timedelta(minutes=12)
    )
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def log(self, host: str) -> Path:
        return self.root / f"{host}.log"

    def start(self, hosts: list[str], level: float, **args: Any) -> None:
        """``hosts`` (re)start with ``args`` and decode 30 intervals around ``level``."""
        for host in hosts:
            lines = [] if not self.log(host).exists() else synth.shutdown(self.clock)
            lines += synth.startup(self.clock + timedelta(seconds=1), seed=1, **args)
            at = self.clock + timedelta(seconds=50)
            for i in range(30):
                lines.append(synth.decode_line(at + timedelta(seconds=i), self.rng.gauss(level, 0.04)))
            with self.log(host).open("a") as out:
                out.write("\n".join(lines) + "\n")
        self.clock += timedelta(seconds=90)


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    fleet = Fleet(tmp_path / "logs")
    fleet.root.mkdir()
    fleet.start(HOSTS, 2.5)
    return fleet


@pytest.fixture
def agent(tmp_path: Path, fleet: Fleet) -> Iterator[Proc]:
    config = {
        "sources": [{"path": str(fleet.log(h)), "name": h, "host": h} for h in HOSTS],
        "detect": {
            "warmup_intervals": 2,
            "min_before": 10,
            "min_after": 10,
            "recent": 10,
            "min_stratum": 3,
            "stall_s": 86400,
        },
    }
    (tmp_path / "acceptmon.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}"]
    args += ["--config", str(tmp_path / "acceptmon.yaml"), "--state-dir", str(tmp_path / "state")]
    yield from start_process(args, tmp_path / "agent.out", f"http://127.0.0.1:{port}", "/healthz")


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


@pytest.fixture
def alertmanager(tmp_path: Path, slack: FakeSlack) -> Iterator[Proc]:
    """deploy/alertmanager/ as shipped, but posting to ``slack`` and with second-long timings."""
    config = yaml.safe_load((AM_DIR / "alertmanager.yml").read_text())
    config["global"].pop("slack_api_url_file")
    config["global"]["slack_api_url"] = slack.url
    config["route"].update(group_wait=f"{GROUP_WAIT_S}s", group_interval=f"{GROUP_INTERVAL_S}s")
    config["templates"] = [str(AM_DIR / t) for t in config["templates"]]
    (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [alertmanager_binary(), f"--config.file={tmp_path / 'alertmanager.yml'}"]
    args += [f"--storage.path={tmp_path / 'am'}", f"--web.listen-address=127.0.0.1:{port}"]
    args += ["--cluster.listen-address=", "--log.level=warn"]
    yield from start_process(args, tmp_path / "alertmanager.out", f"http://127.0.0.1:{port}", "/-/ready")


@pytest.fixture
def prometheus(tmp_path: Path, agent: Proc, alertmanager: Proc) -> Iterator[Proc]:
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [alertmanager.url.removeprefix("http://")]}]}]
        },
        "scrape_configs": [
            {
                "job_name": "acceptmon",
                "scrape_timeout": "1s",
                "static_configs": [{"targets": [agent.url.removeprefix("http://")]}],
            }
        ],
    }
    yield from run_prometheus(tmp_path, config)


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.load(resp)


def drop_alerts(prom: Proc) -> dict[str, str]:
    """``{host: state}`` of AcceptanceDropAfterChange in Prometheus."""
    alerts = get(f"{prom.url}/api/v1/alerts")["data"]["alerts"]
    return {
        a["labels"]["host"]: a["state"]
        for a in alerts
        if a["labels"]["alertname"] == "AcceptanceDropAfterChange"
    }


def messages(slack: FakeSlack) -> list[str]:
    """Each delivered Slack message as its title and text."""
    out = []
    for r in slack.requests:
        if r.delivered and r.body:
            (attachment,) = r.body["attachments"]
            out.append(f"{attachment['title']}\n{attachment['text']}")
    return out


def test_one_rollout_one_message_its_own_drop_another_a_silence_holds_resolve_once(
    fleet: Fleet, slack: FakeSlack, alertmanager: Proc, prometheus: Proc
) -> None:
    rollout, fifth = HOSTS[:4], HOSTS[4]
    fleet.start(rollout, 1.6, speculative_draft_model_path=DRAFT_V2)
    wait_for(lambda: set(drop_alerts(prometheus)) == set(rollout), 60, "the four hosts' drops in Prometheus")
    wait_for(lambda: len(messages(slack)) >= 1, 30, "the rollout's Slack message")
    (first,) = messages(slack)
    assert first.startswith(
        "[FIRING:4] AcceptanceDropAfterChange after a change of args.speculative_draft_model_path on 4 hosts"
    )
    assert f"/models/Qwen3-32B-EAGLE3 → {DRAFT_V2}" in first
    assert all(re.search(rf"• {h} \({h}\): accept len 2\.\d+ → 1\.\d+", first) for h in rollout)
    assert fifth not in first

    fleet.start([fifth], 1.6, attention_backend="flashinfer")
    wait_for(lambda: len(messages(slack)) >= 2, 60, "the fifth host's own message")
    second = messages(slack)[1]
    assert second.startswith(
        "[FIRING:1] AcceptanceDropAfterChange after a change of args.attention_backend on 1 host"
    )
    assert "fa3 → flashinfer" in second and f"• {fifth} ({fifth})" in second
    assert not any(f"• {h} " in second for h in rollout)

    amtool = [require_tool("amtool"), f"--alertmanager.url={alertmanager.url}"]
    add = [
        "silence",
        "add",
        f"host={fifth}",
        "--comment=rolling back by hand",
        "--author=test",
        "--duration=1h",
    ]
    silence = subprocess.run([*amtool, *add], capture_output=True, text=True, check=True).stdout.strip()
    fleet.start([fifth], 2.5)  # back: its resolve is silenced
    wait_for(lambda: fifth not in drop_alerts(prometheus), 60, "the fifth host's drop to resolve")
    fleet.start([fifth], 1.6, attention_backend="flashinfer")  # and again: silenced too

    def silenced_again() -> bool:
        alerts = get(f"{alertmanager.url}/api/v2/alerts?silenced=true&active=true")
        return any(
            a["labels"].get("host") == fifth and a["status"]["silencedBy"] == [silence] for a in alerts
        )

    wait_for(silenced_again, 60, "the fifth host's new drop, silenced, in Alertmanager")

    fleet.start(rollout, 2.5)  # the rollout rolled back
    wait_for(lambda: len(messages(slack)) >= 3, 60, "the rollout's resolve")
    third = messages(slack)[2]
    assert third.startswith(
        "[RESOLVED] AcceptanceDropAfterChange after a change of args.speculative_draft_model_path"
    )
    assert all(f"• {h} ({h})" in third for h in rollout)
    # Nothing more: no second resolve, nothing from the silenced host, no repeat.
    assert not poll_until(lambda: len(messages(slack)) > 3, 3 * GROUP_INTERVAL_S + 2, interval=0.2)
    assert len(slack.requests) == 3, [r.mode for r in slack.requests]
    print("\n\n".join(messages(slack)))


@pytest.fixture
def direct_agent(
    tmp_path: Path, fleet: Fleet, alertmanager: Proc, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Proc]:
    """The agent sending its findings to Alertmanager itself (no Prometheus rules), resending every 2 s."""
    monkeypatch.setenv("ACCEPTMON_TEST_AM_URL", alertmanager.url)
    config = {
        "sources": [{"path": str(fleet.log(h)), "name": h, "host": h} for h in HOSTS[:2]],
        "detect": {"warmup_intervals": 2, "min_before": 10, "min_after": 10, "recent": 10, "stall_s": 86400},
        "notify": {"alertmanager": {"url_env": "ACCEPTMON_TEST_AM_URL", "renotify_s": 2}},
    }
    (tmp_path / "acceptmon.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}"]
    args += ["--config", str(tmp_path / "acceptmon.yaml"), "--state-dir", str(tmp_path / "state")]
    yield from start_process(args, tmp_path / "agent.out", f"http://127.0.0.1:{port}", "/healthz")


def am_alerts(am: Proc, **labels: str) -> list[dict[str, Any]]:
    alerts: list[dict[str, Any]] = get(f"{am.url}/api/v2/alerts")
    return [a for a in alerts if all(a["labels"].get(k) == v for k, v in labels.items())]


def test_the_agent_sends_to_alertmanager_itself_and_a_drop_inhibits_floor_and_drift(
    fleet: Fleet, slack: FakeSlack, alertmanager: Proc, direct_agent: Proc
) -> None:
    host = HOSTS[0]
    fleet.start([host], 1.6, speculative_draft_model_path=DRAFT_V2)
    wait_for(lambda: am_alerts(alertmanager, alertname="AcceptanceDropAfterChange"), 60, "the agent's alert")
    (alert,) = am_alerts(alertmanager, alertname="AcceptanceDropAfterChange")
    assert (
        alert["labels"]["change"] == "args.speculative_draft_model_path" and alert["labels"]["host"] == host
    )
    assert alert["labels"]["config_hash"] and alert["labels"]["source"] == host
    first_end = alert["endsAt"]
    wait_for(
        lambda: [a["endsAt"] for a in am_alerts(alertmanager, host=host)] not in ([], [first_end]),
        30,
        "the agent to resend the firing alert (a later endsAt)",
    )

    # Prometheus's floor alert for the same host and source is inhibited; another host's is not.
    def post(alertname: str, on: str) -> None:
        body = json.dumps(
            [{"labels": {"alertname": alertname, "host": on, "source": on, "severity": "warning"}}]
        )
        request = urllib.request.Request(
            f"{alertmanager.url}/api/v2/alerts", body.encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=5) as resp:
            assert resp.status == 200

    post("AcceptanceBelowFloor", host)
    post("AcceptanceDrift", HOSTS[1])
    # So is its peer alert (the hosts not yet rolled out are its peers); another host's is not.
    post("AcceptanceBelowPeers", host)
    post("AcceptanceBelowPeers", HOSTS[2])

    def inhibited() -> dict[tuple[str, str], bool]:
        return {
            (a["labels"]["alertname"], a["labels"]["host"]): bool(a["status"]["inhibitedBy"])
            for a in am_alerts(alertmanager)
            if a["labels"]["alertname"] in ("AcceptanceBelowFloor", "AcceptanceDrift", "AcceptanceBelowPeers")
        }

    expected = {
        ("AcceptanceBelowFloor", host): True,
        ("AcceptanceDrift", HOSTS[1]): False,
        ("AcceptanceBelowPeers", host): True,
        ("AcceptanceBelowPeers", HOSTS[2]): False,
    }
    wait_for(lambda: inhibited() == expected, 30, "the floor and peer alerts inhibited")

    wait_for(lambda: any("AcceptanceDropAfterChange" in m for m in messages(slack)), 30, "the drop's message")
    fleet.start([host], 2.5)
    wait_for(
        lambda: any(m.startswith("[RESOLVED] AcceptanceDropAfterChange") for m in messages(slack)),
        60,
        "resolve",
    )
    resolved = next(m for m in messages(slack) if m.startswith("[RESOLVED] AcceptanceDropAfterChange"))
    assert "args.speculative_draft_model_path" in resolved and f"• {host} ({host})" in resolved
    assert not am_alerts(alertmanager, alertname="AcceptanceDropAfterChange")  # ended at its resolution
