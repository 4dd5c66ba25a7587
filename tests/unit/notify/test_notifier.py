"""Notifier wiring (config → queues → stats) and notify-test, with a fake transport."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.notify import build_notifier, parse_notify_settings, send_test_message, validate_blocks
from acceptmon.notify.notifier import RENDERERS
from acceptmon.notify.secret import Secret
from acceptmon.notify.settings import NotifySettingsError
from acceptmon.notify.transport import Response
from tests.unit.notify.test_slack import finding

SLACK = "https://hooks.slack.com/services/T0/B0/tOkEnSeCrEt123"
HOOK = "https://hooks.example.org/acceptmon?token=aNoThErSeCrEt"
ENV = {"SLACK_URL": SLACK, "HOOK_URL": HOOK}
SECTION = {
    "slack": {"webhook_url_env": "SLACK_URL", "links": {"runbook": "https://wiki/{rule}"}},
    "webhook": {"url_env": "HOOK_URL"},
}


class FakeTransports:
    """Transport factory whose transports share one log of (url, body) and one answer."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.answer = Response(200, "ok")

    def __call__(self, url: Secret, timeout_s: float) -> FakeTransports.One:
        return FakeTransports.One(self, url)

    class One:
        def __init__(self, owner: FakeTransports, url: Secret) -> None:
            self.owner, self.url = owner, url

        def post(self, body: bytes, delivery_id: str) -> Response:
            self.owner.sent.append((self.url.reveal(), json.loads(body)))
            return self.owner.answer


def test_findings_fan_out_to_every_channel(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock, fake = ManualClock(1_700_000_000.0), FakeTransports()
    notifier = build_notifier(parse_notify_settings(SECTION), tmp_path, clock, ENV, fake)
    with caplog.at_level(logging.DEBUG):
        notifier.notify(finding())
        notifier.notify(finding())  # the detector re-emits: deduped
        while (wait := notifier.step()) is not None:
            clock.advance(wait)
    urls = sorted(url for url, _ in fake.sent)
    assert urls == sorted([SLACK, HOOK])
    slack_body = next(body for url, body in fake.sent if url == SLACK)
    hook_body = next(body for url, body in fake.sent if url == HOOK)
    assert validate_blocks(slack_body) == []
    assert hook_body["key"] == finding().key and len(hook_body["delivery_id"]) == 32
    stats = {s.notifier: s for s in notifier.stats()}
    assert stats["slack"].count("sent") == 1 and stats["slack"].count("deduped") == 1
    assert stats["webhook"].count("sent") == 1 and stats["webhook"].depth == 0
    text = caplog.text + repr(notifier.stats()) + repr(notifier.channels)
    assert "tOkEnSeCrEt" not in text and "aNoThErSeCrEt" not in text


def test_rendering_bug_is_counted_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*_: object) -> dict[str, Any]:
        raise ValueError(f"cannot post to {SLACK}")

    monkeypatch.setitem(RENDERERS, "slack", boom)
    clock, fake = ManualClock(), FakeTransports()
    notifier = build_notifier(parse_notify_settings(SECTION), tmp_path, clock, ENV, fake)
    notifier.notify(finding())
    notifier.notify(replace(finding(), key="other"))
    assert {s.notifier: s.count("dropped") for s in notifier.stats()} == {"slack": 2, "webhook": 0}
    assert caplog.text.count("cannot render: ValueError: cannot post to <redacted>") == 1
    assert "tOkEnSeCrEt" not in caplog.text


def test_build_reports_every_problem_without_urls(tmp_path: Path) -> None:
    bad_env = {"SLACK_URL": "http://example.com/services/x/y/tOkEnSeCrEt123"}
    with pytest.raises(NotifySettingsError) as err:
        build_notifier(parse_notify_settings(SECTION), tmp_path, ManualClock(), bad_env)
    assert len(err.value.problems) == 2
    assert "tOkEnSeCrEt" not in str(err.value)
    with pytest.raises(NotifySettingsError, match="state directory is needed"):
        build_notifier(parse_notify_settings(SECTION), None, ManualClock(), ENV)


@pytest.mark.parametrize(
    ("answer", "ok", "phrase"),
    [
        (Response(200, "ok"), True, "slack: delivered a sample message (HTTP 200 ok)"),
        (Response(404, "channel_not_found"), False, "the channel was deleted or renamed"),
        (Response(410, "channel_is_archived"), False, "the channel is archived"),
        (Response(403, "invalid_token"), False, "the webhook was revoked"),
        (Response(500, "oops"), False, "temporary failure (HTTP 500 oops)"),
        (Response(None, "ConnectionRefusedError: refused"), False, "no response"),
    ],
)
def test_notify_test_verdicts(answer: Response, ok: bool, phrase: str) -> None:
    fake = FakeTransports()
    fake.answer = answer
    config = parse_notify_settings({"slack": SECTION["slack"]})
    result = send_test_message(config, ENV, ManualClock(), fake)
    assert result[0] is ok and phrase in result[1], result
    assert "tOkEnSeCrEt" not in result[1]
    assert len(fake.sent) == 1


def test_notify_test_without_configuration() -> None:
    assert send_test_message(parse_notify_settings(None), {}) == (
        False,
        "no notifiers configured under notify: (slack or webhook)",
    )
    ok, message = send_test_message(parse_notify_settings(SECTION), {})
    assert not ok and "SLACK_URL" in message and "HOOK_URL" in message
