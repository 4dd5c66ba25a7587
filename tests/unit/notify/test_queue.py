"""Delivery queue: retries, Retry-After, permanent errors, rate limit, restart, overflow.

A scripted transport and a ManualClock: no sockets, no threads, no sleeps.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.notify.queue import DeliveryQueue, Policy
from acceptmon.notify.transport import Response

OK = Response(200, "ok")


class ScriptedTransport:
    """Answers from a script (then ``default``); records the clock time of each call."""

    def __init__(
        self, clock: ManualClock, script: list[Response] | None = None, default: Response = OK
    ) -> None:
        self.clock = clock
        self.script = list(script or [])
        self.default = default
        self.calls: list[tuple[float, dict[str, Any], str]] = []

    def post(self, body: bytes, delivery_id: str) -> Response:
        self.calls.append((self.clock.now(), json.loads(body), delivery_id))
        return self.script.pop(0) if self.script else self.default

    def delivered(self) -> list[str]:
        return [body["k"] for _, body, _ in self.calls]


def make(tmp_path: Path, transport: ScriptedTransport, **policy: float) -> DeliveryQueue:
    return DeliveryQueue(
        "slack",
        transport,
        tmp_path / "q",
        transport.clock,
        policy=Policy(**policy),  # type: ignore[arg-type]
        rng=random.Random(7),
    )


def drain(queue: DeliveryQueue, clock: ManualClock, max_steps: int = 1000) -> None:
    """Step, jumping the clock to whenever the queue says the next step is due."""
    for _ in range(max_steps):
        wait = queue.step()
        if wait is None:
            return
        clock.advance(wait)
    raise AssertionError("queue did not drain")


def pending_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "q").glob("m-*.json"))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000_000.0)


def test_delivered_once_and_removed_from_disk(tmp_path: Path, clock: ManualClock) -> None:
    transport = ScriptedTransport(clock)
    queue = make(tmp_path, transport)
    assert queue.offer("a", "firing", {"k": "a"}) == "send"
    assert len(pending_files(tmp_path)) == 1
    drain(queue, clock)
    assert transport.delivered() == ["a"]
    assert pending_files(tmp_path) == []
    assert queue.stats().count("sent") == 1 and queue.stats().depth == 0


def test_transient_failures_back_off_exponentially_with_jitter(tmp_path: Path, clock: ManualClock) -> None:
    failures = [Response(500, "boom"), Response(None, "TimeoutError: timed out"), Response(503, "")] * 2
    transport = ScriptedTransport(clock, failures)
    queue = make(tmp_path, transport, retry_base_s=2.0, retry_max_s=10.0)
    queue.offer("a", "firing", {"k": "a"})
    drain(queue, clock)
    times = [t for t, _, _ in transport.calls]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    caps = [2, 4, 8, 10, 10, 10]
    assert len(gaps) == 6
    for gap, cap in zip(gaps, caps, strict=True):
        assert cap / 2 <= gap <= cap
    assert len({round(g, 6) for g in gaps[3:]}) == 3  # jitter spreads equal caps apart
    assert transport.delivered() == ["a"] * 7
    assert queue.stats().count("retried") == 6 and queue.stats().count("sent") == 1


def test_retry_after_is_honoured_exactly(tmp_path: Path, clock: ManualClock) -> None:
    transport = ScriptedTransport(clock, [Response(429, "rate_limited", retry_after="30")])
    queue = make(tmp_path, transport)
    queue.offer("a", "firing", {"k": "a"})
    start = clock.now()
    assert queue.step() == pytest.approx(30.0)
    for _ in range(62):
        clock.advance(0.5)
        queue.step()
        if clock.now() < start + 30:
            assert len(transport.calls) == 1, f"request at +{clock.now() - start}s before Retry-After"
    assert [round(t - start, 6) for t, _, _ in transport.calls] == [0.0, 30.0]


def test_permanent_errors_are_not_retried_and_logged_once(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    transport = ScriptedTransport(clock, default=Response(404, "channel_not_found"))
    queue = make(tmp_path, transport)
    for key in "abc":
        queue.offer(key, "firing", {"k": key})
    with caplog.at_level(logging.INFO, logger="acceptmon.notify"):
        drain(queue, clock)
        clock.advance(86400)
        assert queue.step() is None
    assert transport.delivered() == ["a", "b", "c"]
    assert queue.stats().count("failed_permanent") == 3 and queue.stats().count("retried") == 0
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1 and "channel_not_found" in errors[0].getMessage()


def test_at_most_one_request_per_interval(tmp_path: Path, clock: ManualClock) -> None:
    transport = ScriptedTransport(clock)
    queue = make(tmp_path, transport, min_interval_s=1.0)
    for i in range(10):
        queue.offer(f"k{i}", "firing", {"k": f"k{i}"})
    for _ in range(200):  # poll every 0.1 s, far faster than allowed
        queue.step()
        clock.advance(0.1)
    times = [t for t, _, _ in transport.calls]
    assert len(times) == 10
    assert min(b - a for a, b in itertools.pairwise(times)) >= 1.0 - 1e-9
    assert transport.delivered() == [f"k{i}" for i in range(10)]  # FIFO


def test_restart_delivers_pending_exactly_once(tmp_path: Path, clock: ManualClock) -> None:
    down = ScriptedTransport(clock, default=Response(None, "ConnectionRefusedError: refused"))
    first = make(tmp_path, down)
    for key in "abc":
        first.offer(key, "firing", {"k": key})
    first.step()
    del first  # a crash: nothing flushed beyond what offer/step persisted
    up = ScriptedTransport(clock)
    second = make(tmp_path, up)
    assert second.stats().depth == 3
    for key in "abc":  # the detector re-emits the same findings after restart
        assert second.offer(key, "firing", {"k": key}) == "dedupe"
    clock.advance(3600)
    drain(second, clock)
    assert up.delivered() == ["a", "b", "c"]
    third = make(tmp_path, ScriptedTransport(clock))
    assert third.stats().depth == 0 and third.offer("a", "firing", {"k": "a"}) == "dedupe"


def test_crash_between_message_write_and_ledger_write_does_not_duplicate(
    tmp_path: Path, clock: ManualClock
) -> None:
    transport = ScriptedTransport(clock)
    make(tmp_path, transport).offer("a", "firing", {"k": "a"})
    (tmp_path / "q" / "dedupe.json").unlink()
    restarted = make(tmp_path, transport)
    assert restarted.offer("a", "firing", {"k": "a"}) == "dedupe"
    drain(restarted, clock)
    assert transport.delivered() == ["a"]


def test_full_queue_drops_oldest_resolved_first(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    transport = ScriptedTransport(clock)
    queue = make(tmp_path, transport, max_queue=3)
    queue.offer("a", "firing", {"k": "a+"})
    queue.offer("b", "firing", {"k": "b+"})
    queue.offer("a", "resolved", {"k": "a-"})
    queue.offer("c", "firing", {"k": "c+"})  # full: a- goes
    queue.offer("d", "firing", {"k": "d+"})  # no resolved left: oldest (a+) goes
    assert queue.stats().count("dropped") == 2
    assert caplog.text.count("queue full (3)") == 1
    drain(queue, clock)
    assert transport.delivered() == ["b+", "c+", "d+"]
    assert len(pending_files(tmp_path)) == 0


def test_stats_report_depth_and_oldest_age(tmp_path: Path, clock: ManualClock) -> None:
    queue = make(tmp_path, ScriptedTransport(clock, default=Response(500, "")))
    queue.offer("a", "firing", {"k": "a"})
    clock.advance(40)
    queue.offer("b", "firing", {"k": "b"})
    queue.offer("b", "firing", {"k": "b"})
    stats = queue.stats()
    assert (stats.depth, stats.oldest_pending_s, stats.count("deduped")) == (2, 40.0, 1)
    assert {name for name, _ in stats.counts} == {"sent", "retried", "failed_permanent", "dropped", "deduped"}


def test_corrupt_queue_file_is_quarantined(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    transport = ScriptedTransport(clock)
    make(tmp_path, ScriptedTransport(clock)).offer("a", "firing", {"k": "a"})
    (tmp_path / "q" / "m-000000000099.json").write_text("{not json")
    (tmp_path / "q" / ".m-000000000100.json-x1y2z3.tmp").write_text("half")
    queue = make(tmp_path, transport)
    drain(queue, clock)
    assert transport.delivered() == ["a"]
    assert (tmp_path / "q" / "m-000000000099.corrupt").exists()
    assert not (tmp_path / "q" / ".m-000000000100.json-x1y2z3.tmp").exists()
    assert "1 unreadable queue files" in caplog.text


def test_disk_failure_degrades_to_memory(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    transport = ScriptedTransport(clock)
    queue = make(tmp_path, transport)

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(queue._store, "put", full)
    queue.offer("a", "firing", {"k": "a"})
    queue.offer("b", "firing", {"k": "b"})
    drain(queue, clock)
    assert transport.delivered() == ["a", "b"]
    assert caplog.text.count("No space left on device") == 1


def test_resolved_never_overtakes_firing(tmp_path: Path, clock: ManualClock) -> None:
    transport = ScriptedTransport(clock, [Response(500, "")] * 3)
    queue = make(tmp_path, transport, renotify_s=0.0)
    queue.offer("a", "firing", {"k": "a+"})
    queue.offer("a", "resolved", {"k": "a-"})
    drain(queue, clock)
    assert transport.delivered() == ["a+"] * 4 + ["a-"]


def test_held_flap_is_delivered_when_window_ends(tmp_path: Path, clock: ManualClock) -> None:
    transport = ScriptedTransport(clock)
    queue = make(tmp_path, transport, renotify_s=100.0)
    queue.offer("a", "firing", {"k": "a+1"})
    queue.offer("a", "resolved", {"k": "a-"})
    queue.offer("a", "firing", {"k": "a+2"})  # held: flapping
    drain(queue, clock)
    assert transport.delivered() == ["a+1", "a-"]
    clock.advance(100)
    drain(queue, clock)
    assert transport.delivered() == ["a+1", "a-", "a+2"]


def test_id_field_and_idempotency_key_match(tmp_path: Path, clock: ManualClock) -> None:
    transport = ScriptedTransport(clock, [Response(None, "dropped")])
    queue = DeliveryQueue("webhook", transport, tmp_path / "q", clock, id_field="delivery_id")
    queue.offer("a", "firing", {"k": "a"})
    drain(queue, clock)
    (_, first, key1), (_, second, key2) = transport.calls
    assert first["delivery_id"] == key1 == key2 == second["delivery_id"]  # a retry keeps its id
