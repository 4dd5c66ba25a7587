"""Dedupe ledger: one message per (key, state) per window; held changes are not lost."""

from __future__ import annotations

import pytest

from acceptmon.notify.dedupe import Ledger, State

W = 100.0  # re-notify window


def run(events: list[tuple[float, State]], key: str = "k") -> list[str]:
    ledger = Ledger(W)
    return [ledger.offer(key, state, {"at": t}, t) for t, state in events]


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([(0, "firing")], ["send"]),
        ([(0, "resolved")], ["dedupe"]),  # nobody was told it fired
        ([(0, "firing"), (10, "firing"), (99, "firing")], ["send", "dedupe", "dedupe"]),
        ([(0, "firing"), (100, "firing")], ["send", "send"]),  # reminder after the window
        (
            [(0, "firing"), (10, "resolved"), (20, "resolved"), (500, "resolved")],
            ["send", "send", "dedupe", "dedupe"],
        ),
        (
            [(0, "firing"), (5, "resolved"), (10, "firing"), (15, "resolved"), (20, "firing")],
            ["send", "send", "hold", "dedupe", "hold"],
        ),
        ([(0, "firing"), (5, "resolved"), (150, "firing")], ["send", "send", "send"]),
    ],
)
def test_offer(events: list[tuple[float, State]], expected: list[str]) -> None:
    assert run(events) == expected


def test_flapping_source_sends_two_messages_per_window() -> None:
    ledger = Ledger(W)
    sent = 0
    for t in range(0, 1000, 5):  # flips every 5 s for 1000 s
        state: State = "firing" if t % 10 == 0 else "resolved"
        sent += ledger.offer("k", state, {}, float(t)) == "send"
        sent += len(ledger.release(float(t)))
    assert sent <= 2 * (1000 / W) + 2


def test_held_change_is_released_when_the_window_ends() -> None:
    ledger = Ledger(W)
    ledger.offer("k", "firing", {"v": 1}, 0.0)
    ledger.offer("k", "resolved", {"v": 2}, 5.0)
    assert ledger.offer("k", "firing", {"v": 3}, 10.0) == "hold"
    assert ledger.offer("k", "firing", {"v": 4}, 20.0) == "hold"
    assert ledger.release(99.0) == []
    assert ledger.release(100.0) == [("k", "firing", {"v": 4})]  # the latest body
    assert ledger.release(200.0) == []
    assert ledger.offer("k", "firing", {}, 150.0) == "dedupe"  # channel already shows firing


def test_held_change_is_cancelled_when_state_returns() -> None:
    ledger = Ledger(W)
    ledger.offer("k", "firing", {}, 0.0)
    ledger.offer("k", "resolved", {}, 5.0)
    ledger.offer("k", "firing", {}, 10.0)  # held
    ledger.offer("k", "resolved", {}, 15.0)  # back to what the channel shows
    assert ledger.release(1000.0) == []


def test_round_trip_and_garbage_tolerance() -> None:
    ledger = Ledger(W)
    ledger.offer("a", "firing", {}, 0.0)
    ledger.offer("a", "resolved", {}, 1.0)
    ledger.offer("a", "firing", {"held": True}, 2.0)
    restored = Ledger(W)
    restored.load_json({**ledger.to_json(), "bad": {"shown": "maybe"}, "worse": 3})
    assert set(restored.entries) == {"a"}
    assert restored.release(200.0) == [("a", "firing", {"held": True})]


def test_observe_counts_a_queued_message_as_announced() -> None:
    ledger = Ledger(W)
    ledger.observe("k", "firing", 50.0)
    assert ledger.offer("k", "firing", {}, 60.0) == "dedupe"
    assert ledger.offer("k", "resolved", {}, 61.0) == "send"


def test_prune_forgets_settled_keys_first() -> None:
    ledger = Ledger(W, max_entries=3)
    ledger.offer("old", "firing", {}, 0.0)
    ledger.offer("old", "resolved", {}, 1.0)
    ledger.offer("live1", "firing", {}, 2.0)
    ledger.offer("live2", "firing", {}, 3.0)
    ledger.offer("live3", "firing", {}, 500.0)
    assert set(ledger.entries) == {"live1", "live2", "live3"}
    ledger.offer("live4", "firing", {}, 501.0)
    assert set(ledger.entries) == {"live2", "live3", "live4"}  # least recently seen goes
