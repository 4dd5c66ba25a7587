"""A finding that fires again after the channel was told it resolved is news (issue 25 item 4):
it is sent, and only a flap is held, counted and logged."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.ingest.families import notify_metrics
from acceptmon.notify.dedupe import Ledger
from acceptmon.notify.queue import OUTCOMES, DeliveryQueue, Policy
from acceptmon.notify.transport import Response

RENOTIFY = 14400.0  # the default: 4 h


class Transport:
    def __init__(self) -> None:
        self.bodies: list[str] = []

    def post(self, body: bytes, delivery_id: str) -> Response:
        self.bodies.append(json.loads(body)["k"])
        return Response(200, "ok")


def _drain(queue: DeliveryQueue, clock: ManualClock) -> None:
    for _ in range(100):
        wait = queue.step()
        if wait is None:
            return
        clock.advance(wait)


def test_a_refire_35_minutes_after_the_resolve_is_sent() -> None:
    ledger = Ledger(RENOTIFY)
    assert ledger.offer("floor", "firing", {}, 0.0) == "send"
    assert ledger.offer("floor", "resolved", {}, 600.0) == "send"
    assert ledger.offer("floor", "firing", {}, 600.0 + 35 * 60) == "send"
    assert ledger.offer("floor", "firing", {}, 600.0 + 36 * 60) == "dedupe"  # the same open finding
    assert ledger.offer("floor", "resolved", {}, 600.0 + 40 * 60) == "send"


def test_a_flap_is_held_counted_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock(1_000_000.0)
    transport = Transport()
    queue = DeliveryQueue("slack", transport, tmp_path / "q", clock, policy=Policy(renotify_s=RENOTIFY))
    queue.offer("stall", "firing", {"k": "on"})
    queue.offer("stall", "resolved", {"k": "off"})
    with caplog.at_level(logging.INFO, "acceptmon.notify"):
        assert queue.offer("stall", "firing", {"k": "on again"}) == "hold"
    _drain(queue, clock)
    assert transport.bodies == ["on", "off"]
    assert queue.stats().held == 1
    assert any("held (flapping)" in r.getMessage() for r in caplog.records)
    families: dict[str, Any] = {f.name: f for f in notify_metrics([queue.stats()], OUTCOMES)}
    (sample,) = families["acceptmon_notifications_held"].samples
    assert sample.labels == {"notifier": "slack"} and sample.value == 1.0
    clock.advance(300)
    _drain(queue, clock)
    assert transport.bodies == ["on", "off", "on again"]  # the flap window ended: the truth is sent
