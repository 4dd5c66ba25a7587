"""One stalled receiver must not starve the other channels, and stopping stays bounded."""

from __future__ import annotations

import time
from pathlib import Path

from acceptmon.notify import NotifyWorker, build_notifier, parse_notify_settings
from tests.support.slack_server import FakeSlack
from tests.unit.notify.test_slack import finding

DEADLINE_S = 3.0


def test_a_trickling_receiver_delays_only_its_own_channel(tmp_path: Path) -> None:
    with FakeSlack() as good, FakeSlack() as stalled:
        stalled.trickle_s = 1.0  # a byte a second: under any socket timeout, forever
        stalled.plan(default="trickle")
        channel = {
            "timeout_s": DEADLINE_S,
            "retry_base_s": 0.1,
            "min_interval_s": 0.0,
            "allow_insecure_localhost": True,
        }
        section = {
            "slack": {"webhook_url_env": "GOOD", **channel},
            "webhook": {"url_env": "STALLED", **channel},
        }
        env = {"GOOD": good.url, "STALLED": stalled.url}
        worker = NotifyWorker(build_notifier(parse_notify_settings(section), tmp_path, env=env), idle_s=0.2)
        worker.start()
        try:
            worker.notify(finding(key="a/first"))
            assert stalled.wait_until(lambda: stalled.count() >= 1, 10), (
                "the stalled receiver was never called"
            )
            worker.notify(finding(key="b/second"))
            assert good.wait_until(lambda: "b/second" in good.delivered_keys(), 2), good.requests
            # The stalled request ends at its whole-request deadline and is retried.
            assert stalled.wait_until(lambda: stalled.count() >= 2, DEADLINE_S + 5), (
                "no whole-request deadline"
            )
        finally:
            started = time.monotonic()
            worker.stop(timeout=2.0)
            assert time.monotonic() - started < 3.0
