"""What a backlog already settled is not paged; what is still wrong, or was announced, is."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from acceptmon.apps.agent.history import HistoryFilter
from acceptmon.model import Finding

START = datetime(2026, 12, 2, 12, tzinfo=UTC)


def _f(rule: str, key: str, active: bool, hours_ago: float = 48) -> Finding:
    seen = START - timedelta(hours=hours_ago)
    return Finding(rule, "warning", "s", "r1", None, "x", seen, key, active=active)


def test_backlog_history_is_held_then_dropped_and_open_findings_go_out() -> None:
    h = HistoryFilter(START.timestamp())
    resolved = _f("acceptance_drop_after_change", "drop:old", False)
    active = _f("acceptance_drop_after_change", "drop:now", True)
    assert not h.pageable(active)  # still reading the backlog: held
    h.caught_up([resolved, active], lambda _s: START - timedelta(minutes=1))
    assert not h.pageable(resolved)
    assert h.pageable(active)
    # A new episode of the same key after catch-up is news again.
    again = replace(resolved, active=True, first_seen=START + timedelta(minutes=5))
    assert h.pageable(again)


def test_stall_silent_since_long_before_start_is_history_and_so_is_its_end() -> None:
    h = HistoryFilter(START.timestamp())
    h.caught_up([], lambda _s: START - timedelta(days=3))
    stall = _f("log_stalled", "log_stalled:s", True, 0)
    assert not h.pageable(stall)
    assert not h.pageable(replace(stall, active=False))
    fresh = HistoryFilter(START.timestamp())
    fresh.caught_up([], lambda _s: START - timedelta(minutes=3))
    assert fresh.pageable(stall)  # silence began just before the restart: a real stall


def test_a_finding_open_before_the_restart_still_gets_its_resolution() -> None:
    h = HistoryFilter(START.timestamp())
    was_open = _f("acceptance_drop_after_change", "drop:x", True)
    h.open_at_start([was_open])
    closed = replace(was_open, active=False)
    h.caught_up([closed], lambda _s: START)
    assert h.pageable(closed)
