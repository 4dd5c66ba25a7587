"""Delivery against a fake Slack on real loopback sockets, and across a SIGKILL.

In-process tests drive the queue with a ManualClock (real HTTP, virtual
time); the crash test runs ``python -m acceptmon.notify`` as a real process.
Every test also checks that the webhook token never shows up in logs,
stats, stderr or exception text.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptmon.clock import ManualClock
from acceptmon.notify import Notifier, build_notifier, parse_notify_settings, send_test_message
from acceptmon.notify.secret import Secret
from acceptmon.notify.selftest import sample_finding
from acceptmon.notify.transport import HttpTransport
from tests.support.slack_server import PERMANENT, FakeSlack

pytestmark = pytest.mark.system
ROOT = Path(__file__).resolve().parents[2]
ENV_NAME = "ACCEPTMON_TEST_SLACK"


@pytest.fixture
def fake(caplog: pytest.LogCaptureFixture) -> Iterator[FakeSlack]:
    caplog.set_level(logging.DEBUG, logger="acceptmon")
    with FakeSlack(slow_s=5.0) as server:
        yield server
        assert server.token not in caplog.text, "webhook token leaked into logs"


def notifier_for(fake: FakeSlack, tmp_path: Path, clock: ManualClock, **slack: object) -> Notifier:
    section = {"slack": {"webhook_url_env": ENV_NAME, "allow_insecure_localhost": True, **slack}}
    return build_notifier(parse_notify_settings(section), tmp_path / "state", clock, {ENV_NAME: fake.url})


def drain(notifier: Notifier, clock: ManualClock, deadline_s: float = 30.0) -> None:
    """Step in virtual time until idle; real time bounded by a deadline."""
    deadline = time.monotonic() + deadline_s
    while (wait := notifier.step()) is not None:
        assert time.monotonic() < deadline, "queue did not drain"
        clock.advance(wait)


def offer(notifier: Notifier, clock: ManualClock, count: int) -> list[str]:
    findings = [sample_finding(clock.now(), i) for i in range(count)]
    for finding in findings:
        notifier.notify(finding)
    return [f.key for f in findings]


def test_every_finding_delivered_exactly_once_through_outages(fake: FakeSlack, tmp_path: Path) -> None:
    fake.plan("drop", "slow", "500", "429:3", "drop", "ok", "500", "slow", "ok", default="ok")
    clock = ManualClock(time.time())
    notifier = notifier_for(fake, tmp_path, clock, timeout_s=0.3, retry_base_s=1.0, retry_max_s=4.0)
    keys = offer(notifier, clock, 5)
    drain(notifier, clock)
    assert Counter(fake.delivered_keys()) == Counter(keys)
    assert fake.delivered_keys() == keys  # in order
    (stats,) = notifier.stats()
    assert (stats.count("sent"), stats.count("retried"), stats.depth) == (5, 7, 0)
    assert fake.token not in repr(stats)
    assert not list((tmp_path / "state" / "slack").glob("m-*.json"))


def test_retry_after_is_respected(fake: FakeSlack, tmp_path: Path) -> None:
    fake.plan("429:5", default="ok")
    clock = ManualClock(time.time())
    notifier = notifier_for(fake, tmp_path, clock)
    start = clock.now()
    offer(notifier, clock, 1)
    notifier.step()
    while fake.count() < 2:
        clock.advance(0.25)
        notifier.step()
        assert clock.now() - start < 10, "never retried"
        if fake.count() == 2:
            assert clock.now() - start >= 5.0, "retried before Retry-After"
    assert clock.now() - start == pytest.approx(5.0, abs=0.25)
    assert fake.delivered_keys() == ["acceptmon-notify-test-0"]


@pytest.mark.parametrize("status", sorted(PERMANENT))
def test_permanent_errors_are_not_retried(
    fake: FakeSlack, tmp_path: Path, status: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake.plan(default=status)
    clock = ManualClock(time.time())
    notifier = notifier_for(fake, tmp_path, clock)
    offer(notifier, clock, 3)
    drain(notifier, clock)
    clock.advance(3600)
    assert notifier.step() is None
    assert fake.count() == 3  # one attempt each, no retry
    (stats,) = notifier.stats()
    assert (stats.count("failed_permanent"), stats.count("retried"), stats.depth) == (3, 0, 0)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and PERMANENT[status] in errors[0]


def test_rate_limit_one_per_second_per_webhook(fake: FakeSlack, tmp_path: Path) -> None:
    clock = ManualClock(time.time())
    notifier = notifier_for(fake, tmp_path, clock, min_interval_s=1.0)
    offer(notifier, clock, 6)
    seen: list[float] = []
    while len(seen) < 6:
        before = fake.count()
        notifier.step()
        if fake.count() > before:
            seen.append(clock.now())
        clock.advance(0.1)
        assert len(seen) < 6 or fake.count() == 6
        assert clock.now() - seen[0] < 30
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert min(gaps) >= 1.0 - 1e-6, gaps


def test_notify_test_reports_success_and_failure(fake: FakeSlack) -> None:
    config = parse_notify_settings({"slack": {"webhook_url_env": ENV_NAME, "allow_insecure_localhost": True}})
    ok, message = send_test_message(config, {ENV_NAME: fake.url})
    assert ok and message == "slack: delivered a sample message (HTTP 200 ok)"
    fake.plan("404")
    ok, message = send_test_message(config, {ENV_NAME: fake.url})
    assert not ok and "channel_not_found" in message and fake.token not in message
    wrong = fake.url.replace(fake.token, "0" * 24)
    ok, message = send_test_message(config, {ENV_NAME: wrong})
    assert not ok and "no_service" in message and "0" * 24 not in message


def test_refused_connection_is_a_retryable_non_response() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = "refusedTokenValue0123"
    response = HttpTransport(Secret(f"http://127.0.0.1:{port}/services/T/B/{token}"), 1.0).post(b"{}", "x")
    assert response.status is None and "ConnectionRefused" in response.detail
    assert token not in response.detail


def _write_config(tmp_path: Path, insecure: bool = True) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "acceptmon.yaml"
    config.write_text(
        f"notify:\n  slack:\n    webhook_url_env: {ENV_NAME}\n    allow_insecure_localhost: {str(insecure).lower()}\n"
        "    min_interval_s: 0.05\n    retry_base_s: 0.05\n    retry_max_s: 0.2\n    timeout_s: 2\n"
    )
    return config


def test_entry_point_checks_config_and_sends_a_test_message(fake: FakeSlack, tmp_path: Path) -> None:
    env = {**os.environ, ENV_NAME: fake.url}
    module = [sys.executable, "-m", "acceptmon.notify"]
    strict = _write_config(tmp_path / "strict", insecure=False)
    bad = subprocess.run(
        [*module, "run", "--config", str(strict), "--state-dir", str(tmp_path / "s")],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert bad.returncode == 2
    assert "needs allow_insecure_localhost: true" in bad.stderr
    good = subprocess.run(
        [*module, "test", "--config", str(_write_config(tmp_path))],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert good.returncode == 0 and "slack: delivered a sample message (HTTP 200 ok)" in good.stdout
    assert fake.delivered_keys() == ["acceptmon-notify-test-0"]
    for output in (bad.stdout, bad.stderr, good.stdout, good.stderr):
        assert fake.token not in output and "B0FAKE" not in output


def _start(config: Path, state: Path, fake: FakeSlack, stderr: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, ENV_NAME: fake.url}
    cmd = [
        sys.executable,
        "-m",
        "acceptmon.notify",
        "run",
        "--config",
        str(config),
        "--state-dir",
        str(state),
    ]
    with stderr.open("ab") as err:
        return subprocess.Popen([*cmd, "--sample", "5"], cwd=ROOT, env=env, stderr=err, stdout=err)


def test_sigkill_and_restart_delivers_exactly_once(fake: FakeSlack, tmp_path: Path) -> None:
    config = _write_config(tmp_path)
    state, stderr = tmp_path / "state", tmp_path / "stderr.log"

    def queued() -> list[Path]:
        return sorted((state / "slack").glob("m-*.json"))

    fake.plan(default="500")  # Slack is down
    first = _start(config, state, fake, stderr)
    try:
        assert fake.wait_until(lambda: len(queued()) == 5 and fake.count() >= 3), stderr.read_text()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    assert first.returncode == -signal.SIGKILL and len(queued()) == 5 and fake.delivered_keys() == []

    fake.plan(default="ok")  # Slack is back; the restarted process re-offers the same findings
    second = _start(config, state, fake, stderr)
    try:
        assert fake.wait_until(lambda: len(fake.delivered_keys()) >= 5 and not queued()), stderr.read_text()
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(10)
    assert second.returncode == 0
    assert sorted(fake.delivered_keys()) == [f"acceptmon-notify-test-{i}" for i in range(5)]
    log = stderr.read_text()
    assert "5 pending messages restored" in log
    assert fake.token not in log and "/services/" not in log
