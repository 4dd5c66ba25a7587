"""The agent as an Alertmanager client: v2 alerts as Prometheus sends them, through the one queue."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.model import ConfigDiff, Finding
from acceptmon.notify import build_notifier, parse_checked, parse_notify_settings, send_test_message
from acceptmon.notify.secret import Secret
from acceptmon.notify.transport import HttpTransport, Response
from tests.support.slack_server import FakeSlack

ENV = "ACCEPTMON_TEST_AM"
T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
DIFF = ConfigDiff(changed=(("speculative_draft_model_path", "/models/v1", "/models/v2"),))


class FakeTransport:
    def __init__(self, url: Secret, timeout_s: float) -> None:
        self.url = url.reveal()
        self.posts: list[Any] = []
        self.answers: list[Response] = []  # scripted replies, then 200
        TRANSPORTS.append(self)

    def post(self, body: bytes, delivery_id: str) -> Response:
        self.posts.append(json.loads(body))
        return self.answers.pop(0) if self.answers else Response(200, "")


TRANSPORTS: list[FakeTransport] = []


def finding(active: bool = True) -> Finding:
    return Finding(
        "acceptance_drop_after_change", "critical", "gpu-1:server.log", "r2", "r1",
        "accept len fell 2.40 → 1.57 after a config change", T0, "drop/gpu-1/r2",
        before_accept_len=2.4, after_accept_len=1.57, diff=DIFF, active=active,
        resolved_at=None if active else T0 + timedelta(minutes=5), labels=(("cluster", "eu"),),
        host="gpu-1", config_hash="9c1d0e7a55aa0b11",
    )  # fmt: skip


def notifier(tmp_path: Path, clock: ManualClock, **extra: Any) -> Any:
    TRANSPORTS.clear()
    section = {"alertmanager": {"url_env": ENV, **extra}}
    return build_notifier(
        parse_notify_settings(section), tmp_path, clock, {ENV: "http://am.example:9093/"}, FakeTransport
    )


def drain(n: Any, clock: ManualClock) -> None:
    while (wait := n.step()) is not None:
        clock.advance(wait)


def test_alerts_are_posted_to_the_v2_api_with_the_rules_labels(tmp_path: Path) -> None:
    clock = ManualClock(T0.timestamp() + 60)
    n = notifier(tmp_path, clock, links={"grafana": "https://grafana.example.com/d/a?var-source={source}"})
    n.notify(finding())
    drain(n, clock)
    (transport,) = TRANSPORTS
    assert transport.url == "http://am.example:9093/api/v2/alerts"
    ((alert,),) = transport.posts  # the bare list the API takes
    assert alert["labels"] == {
        "alertname": "AcceptanceDropAfterChange",
        "rule": "acceptance_drop_after_change",
        "severity": "critical",
        "source": "gpu-1:server.log",
        "host": "gpu-1",
        "change": "speculative_draft_model_path",
        "config_hash": "9c1d0e7a55aa0b11",
        "cluster": "eu",
    }
    assert alert["annotations"]["change_detail"] == "speculative_draft_model_path: /models/v1 → /models/v2"
    assert alert["annotations"]["accept_len"] == "2.40 → 1.57"
    assert alert["startsAt"] == T0.isoformat()
    assert datetime.fromisoformat(alert["endsAt"]) == T0 + timedelta(seconds=60 + 4 * 60)  # 4 resends
    assert alert["generatorURL"].startswith("https://grafana.example.com/d/a?var-source=gpu-1")


def test_firing_is_resent_every_window_and_resolve_once_with_its_end(tmp_path: Path) -> None:
    clock = ManualClock(T0.timestamp())
    n = notifier(tmp_path, clock, renotify_s=60)
    for _ in range(3):  # the agent offers its findings at every evaluation
        n.notify(finding())
        drain(n, clock)
        clock.advance(30)
    (transport,) = TRANSPORTS
    ends = [datetime.fromisoformat(p[0]["endsAt"]) for p in transport.posts]
    assert len(ends) == 2  # at 0 s and at 60 s, not at 30 s
    assert ends[1] - ends[0] == timedelta(seconds=60) and ends[0] == T0 + timedelta(seconds=240)
    for _ in range(3):
        n.notify(finding(active=False))
        drain(n, clock)
    resolved = transport.posts[2:]
    assert len(resolved) == 1 and resolved[0][0]["endsAt"] == (T0 + timedelta(minutes=5)).isoformat()
    assert resolved[0][0]["labels"] == transport.posts[0][0]["labels"]  # the same alert, ended


def test_the_url_is_a_secret_checked_like_a_webhooks(tmp_path: Path) -> None:
    url = tmp_path / "am-url"
    url.write_text("http://admin:hunter2hunter2@am.example:9093\n")
    _, problems = parse_checked({"alertmanager": {"url_file": str(url)}})
    assert problems and "hunter2" not in " ".join(problems) and "http:// without credentials" in problems[0]
    url.write_text("https://admin:hunter2hunter2@am.example:9093\n")
    assert parse_checked({"alertmanager": {"url_file": str(url)}})[1] == []
    config = parse_notify_settings({"alertmanager": {"url_file": str(url)}})
    assert config.alertmanager is not None and config.alertmanager.renotify_s == 60.0


def test_notify_test_sends_a_resolved_sample_that_pages_nobody() -> None:
    TRANSPORTS.clear()
    config = parse_notify_settings({"alertmanager": {"url_env": ENV}})
    ok, text = send_test_message(
        config, {ENV: "http://am.example:9093"}, ManualClock(T0.timestamp()), FakeTransport
    )
    assert ok, text
    ((alert,),) = TRANSPORTS[0].posts
    assert datetime.fromisoformat(alert["endsAt"]) <= T0 and TRANSPORTS[0].url.endswith("/api/v2/alerts")


def test_a_resolved_finding_never_announced_is_not_sent(tmp_path: Path) -> None:
    clock = ManualClock(T0.timestamp())
    n = notifier(tmp_path, clock)
    n.notify(replace(finding(active=False)))
    assert n.step() is None and not TRANSPORTS[0].posts


def test_a_firing_alert_delayed_by_an_outage_arrives_with_its_end_ahead(tmp_path: Path) -> None:
    clock = ManualClock(T0.timestamp())
    n = notifier(tmp_path, clock, renotify_s=60, retry_base_s=100, retry_max_s=100)
    (transport,) = TRANSPORTS
    transport.answers.append(Response(503, "down"))
    n.notify(finding())
    drain(n, clock)
    sent_at = clock.now()
    assert sent_at - T0.timestamp() >= 50 and len(transport.posts) == 2
    assert datetime.fromisoformat(transport.posts[1][0]["endsAt"]).timestamp() == pytest.approx(sent_at + 240)


def test_basic_auth_in_the_url_is_sent_as_a_header_and_never_shown() -> None:
    with FakeSlack() as fake:
        url = fake.url.replace("http://", "http://alert%40ops:s3cr%3At@")
        response = HttpTransport(Secret(url), 5.0).post(b'{"text": "x"}', "id")
        assert response.status == 200, response
        (received,) = fake.requests
        assert received.headers["Authorization"] == "Basic " + base64.b64encode(b"alert@ops:s3cr:t").decode()
