"""Reconnect backoff: doubling, jitter bounds, cap, reset."""

from __future__ import annotations

from acceptmon.sources.ssh.backoff import Backoff


def test_doubles_with_jitter_and_caps() -> None:
    lo = Backoff(base=0.5, cap=30.0, rand=lambda: 0.0)
    hi = Backoff(base=0.5, cap=30.0, rand=lambda: 1.0)
    lows = [lo.next_delay() for _ in range(9)]
    highs = [hi.next_delay() for _ in range(9)]
    assert highs == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert lows == [h / 2 for h in highs]


def test_reset_after_success() -> None:
    b = Backoff(base=1.0, cap=30.0, rand=lambda: 1.0)
    b.next_delay()
    b.next_delay()
    b.reset()
    assert b.next_delay() == 1.0


def test_many_failures_do_not_overflow() -> None:
    b = Backoff(base=1.0, cap=30.0, rand=lambda: 1.0)
    assert max(b.next_delay() for _ in range(5000)) == 30.0
