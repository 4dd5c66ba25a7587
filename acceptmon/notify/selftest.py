"""``acceptmon notify-test``: one sample message, sent now, with a verdict a human can act on.

It bypasses the queue and dedupe on purpose: the operator wants to know
whether *this* webhook works *now*, not whether a message was queued.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

from acceptmon.clock import Clock, SystemClock
from acceptmon.model import ConfigDiff, Finding
from acceptmon.notify.alertmanager import build_alert
from acceptmon.notify.blockkit import validate_blocks
from acceptmon.notify.notifier import RENDERERS, TransportFactory, channel_transport
from acceptmon.notify.settings import ChannelSettings, NotifySettings, NotifySettingsError
from acceptmon.notify.transport import HttpTransport, Response, Transport, classify
from acceptmon.notify.urls import resolve_urls

_HINTS = {
    "invalid_payload": "Slack rejected the message format; please report this as an acceptmon bug",
    "invalid_token": "the webhook was revoked; create a new incoming webhook",
    "action_prohibited": "a workspace admin blocks this webhook",
    "no_service": "the webhook was revoked or the app removed; create a new incoming webhook",
    "channel_not_found": "the channel was deleted or renamed; point a new webhook at an existing channel",
    "channel_is_archived": "the channel is archived; unarchive it or create a webhook for another channel",
}


def sample_finding(now: float, index: int = 0, active: bool = True) -> Finding:
    """A realistic but obviously fake finding (also used by the system tests)."""
    ts = datetime.fromtimestamp(now, UTC)
    return Finding(
        rule="accept_len_drop",
        severity="warning",
        source="notify-test:/var/log/sglang/server.log",
        run_id=f"test-run-{index}",
        baseline_run_id="test-run-baseline",
        summary="Test message from `acceptmon notify-test`: no action needed.",
        first_seen=ts,
        key=f"acceptmon-notify-test-{index}",
        before_accept_len=3.2,
        after_accept_len=2.4,
        before_accept_rate=0.73,
        after_accept_rate=0.47,
        before_ci=(3.1, 3.3),
        after_ci=(2.3, 2.5),
        before_n=120,
        after_n=60,
        p_value=0.0004,
        diff=ConfigDiff(changed=(("speculative_num_steps", 3, 5),)),
        active=active,
        resolved_at=None if active else ts,
        labels=(("host", "notify-test"), ("model", "example/model"), ("draft_model", "example/draft")),
    )


def send_test_message(
    config: NotifySettings,
    env: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    transport_factory: TransportFactory | None = None,
) -> tuple[bool, str]:
    """Send one sample to every configured notifier; (all ok, one line per notifier)."""
    if not config.channels():
        return False, "no notifiers configured under notify: (slack or webhook)"
    try:
        urls = resolve_urls(config, env)
    except NotifySettingsError as exc:
        return False, "\n".join(exc.problems)
    clock = clock or SystemClock()
    factory = transport_factory or HttpTransport
    channels = config.channels()
    results = [_send_one(c, channel_transport(c, urls[c.name], factory, clock), clock) for c in channels]
    return all(ok for ok, _ in results), "\n".join(text for _, text in results)


def _send_one(channel: ChannelSettings, transport: Transport, clock: Clock) -> tuple[bool, str]:
    sample = sample_finding(clock.now())
    if channel.kind == "alertmanager":
        # Sent already resolved: Alertmanager accepts and stores it, and pages nobody.
        done = replace(sample, active=False, resolved_at=sample.first_seen)
        body = build_alert(done, channel.links, clock.now(), channel.renotify_s)
    else:
        body = RENDERERS[channel.kind](sample, channel.links, clock.now())
    if channel.kind == "slack" and (problems := validate_blocks(body)):
        return False, f"{channel.name}: sample message breaks Slack limits: {'; '.join(problems)}"
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    response = transport.post(data, uuid.uuid4().hex)
    return _verdict(channel.name, response)


def _verdict(name: str, response: Response) -> tuple[bool, str]:
    verdict = classify(response)
    if response.status is None:
        return False, f"{name}: no response ({response.detail}); check DNS, proxy and firewall"
    what = f"HTTP {response.status} {response.detail}".strip()
    if verdict == "sent":
        return True, f"{name}: delivered a sample message ({what})"
    if verdict == "retry":
        return False, f"{name}: temporary failure ({what}); try again in a minute"
    hint = _HINTS.get(response.detail, "check the webhook URL and channel")
    return False, f"{name}: rejected ({what}): {hint}"
