"""The one object the pipeline holds: findings in, one queue per configured webhook.

``notify()`` renders and enqueues (disk write, no network) so ingestion never
waits on Slack; ``step()`` is driven by ``worker.NotifyWorker`` or by a test.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptmon.clock import Clock, SystemClock
from acceptmon.model import Finding, Run
from acceptmon.notify.alertmanager import AlertmanagerTransport, api_url, build_alert
from acceptmon.notify.dedupe import State
from acceptmon.notify.grafana import GrafanaTransport, finding_annotation, run_annotation
from acceptmon.notify.queue import DeliveryQueue, Policy, QueueStats
from acceptmon.notify.secret import Secret, scrub
from acceptmon.notify.settings import ChannelSettings, Links, NotifySettings, NotifySettingsError
from acceptmon.notify.slack import build_slack_message
from acceptmon.notify.transport import HttpTransport, Transport
from acceptmon.notify.urls import resolve_urls
from acceptmon.notify.webhook import build_webhook_payload

log = logging.getLogger("acceptmon.notify")

Renderer = Callable[[Finding, Links, float], dict[str, Any]]
TransportFactory = Callable[[Secret, float], Transport]

RENDERERS: dict[str, Renderer] = {
    "slack": build_slack_message,
    "webhook": build_webhook_payload,
    "grafana": finding_annotation,
}
_ID_FIELDS: dict[str, str | None] = {
    "slack": None,
    "webhook": "delivery_id",
    "grafana": None,
    "alertmanager": None,
}
#: Channels that also record run starts and config changes (not only findings).
_RUN_EVENTS = {"grafana"}


@dataclass(frozen=True, slots=True)
class Channel:
    config: ChannelSettings
    queue: DeliveryQueue

    def render(self, finding: Finding, now: float) -> dict[str, Any]:
        if self.config.kind == "alertmanager":  # endsAt depends on how often it is resent
            return build_alert(finding, self.config.links, now, self.config.renotify_s)
        return RENDERERS[self.config.kind](finding, self.config.links, now)


class Notifier:
    def __init__(self, channels: list[Channel], clock: Clock, secrets: tuple[Secret, ...] = ()) -> None:
        self.channels = channels
        self._clock = clock
        self._secrets = secrets

    def notify(self, finding: Finding) -> None:
        """Queue ``finding`` on every channel; never raises, never does network I/O."""
        state: State = "firing" if finding.active else "resolved"
        for channel in self.channels:
            try:
                body = channel.render(finding, self._clock.now())
            except Exception as exc:  # a rendering bug must not stop ingestion
                channel.queue.drop(f"cannot render: {type(exc).__name__}: {self.scrub(str(exc))[:200]}")
                continue
            channel.queue.offer(finding.key, state, body)

    def note_run(self, run: Run) -> None:
        """A run started (maybe after a config change): an annotation where channels record them."""
        for channel in self.channels:
            if channel.config.kind not in _RUN_EVENTS:
                continue
            try:
                body = run_annotation(run)
            except Exception as exc:  # a rendering bug must not stop ingestion
                channel.queue.drop(f"cannot render: {type(exc).__name__}")
                continue
            channel.queue.offer(f"run/{run.source}/{run.run_id}", "firing", body)

    def step(self) -> float | None:
        """One step of every queue; seconds until the next is useful (None: all idle)."""
        waits = [w for w in (c.queue.step() for c in self.channels) if w is not None]
        return min(waits, default=None)

    def stats(self) -> list[QueueStats]:
        return [c.queue.stats() for c in self.channels]

    def scrub(self, text: str) -> str:
        """``text`` with every configured URL removed (for logging unexpected errors)."""
        return scrub(text, *self._secrets)


def channel_transport(
    cfg: ChannelSettings, url: Secret, factory: TransportFactory, clock: Clock
) -> Transport:
    """How a channel posts, shared by the agent and ``notify-test`` so the test exercises the
    agent's path (for Grafana ``url`` is the API token: the address is ``cfg.base_url``)."""
    if cfg.kind == "grafana":
        return GrafanaTransport(str(cfg.base_url), url, cfg.timeout_s)
    if cfg.kind == "alertmanager":
        return AlertmanagerTransport(factory(api_url(url), cfg.timeout_s), clock.now)
    return factory(url, cfg.timeout_s)


def build_notifier(
    config: NotifySettings,
    state_dir: Path | None = None,
    clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
    transport_factory: TransportFactory | None = None,
) -> Notifier:
    """Resolve URLs and open queues; ``NotifySettingsError`` (fatal at start-up) lists all problems."""
    root = state_dir or (Path(config.state_dir) if config.state_dir else None)
    urls = resolve_urls(config, env)
    if config.channels() and root is None:
        raise NotifySettingsError(["notify: a state directory is needed (notify.state_dir or --state-dir)"])
    clock = clock or SystemClock()
    factory = transport_factory or HttpTransport
    channels = []
    for cfg in config.channels():
        policy = Policy(cfg.min_interval_s, cfg.renotify_s, cfg.max_queue, cfg.retry_base_s, cfg.retry_max_s)
        transport = channel_transport(cfg, urls[cfg.name], factory, clock)
        directory = Path(str(root)) / cfg.name
        try:
            queue = DeliveryQueue(
                cfg.name, transport, directory, clock, policy=policy, id_field=_ID_FIELDS[cfg.kind]
            )
        except OSError as exc:
            raise NotifySettingsError(
                [f"notify: cannot use state directory {directory} ({exc.strerror})"]
            ) from None
        if isinstance(transport, GrafanaTransport):  # restored: a killed process may have posted them
            transport.unsure_of(queue.pending_ids())
        channels.append(Channel(cfg, queue))
    return Notifier(channels, clock, tuple(urls.values()))
