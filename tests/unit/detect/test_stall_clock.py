"""The stall clock starts when a source is first watched, not at an old log's last line (issue 25 §10)."""

from __future__ import annotations

from datetime import timedelta

from acceptmon.detect import STALLED, Detector
from tests.support.detect import Feed, make_run


def _old_log() -> tuple[Detector, Feed]:
    """A busy run whose last Decode line was written hours before anyone watched it."""
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    for _ in range(50):
        det.observe(feed.sample(2.4, running=16, queue=2))
    det.evaluate()  # the backlog, judged by its own time
    return det, feed


def test_an_old_log_does_not_stall_the_moment_it_is_watched() -> None:
    """Main fired log_stalled on the agent's first evaluation: silent for 5 h."""
    det, feed = _old_log()
    start = feed.t + timedelta(hours=5)
    assert [f for f in det.evaluate(start) if f.rule == STALLED] == []
    later = start + timedelta(seconds=det.config.stall_s / 2)
    assert [f for f in det.evaluate(later) if f.rule == STALLED] == []


def test_it_stalls_once_watched_silent_for_stall_s_and_says_how_long_it_really_was() -> None:
    det, feed = _old_log()
    start = feed.t + timedelta(hours=5)
    det.evaluate(start)
    found = det.evaluate(start + timedelta(seconds=det.config.stall_s + 1))
    stalls = [f for f in found if f.rule == STALLED and f.active]
    assert len(stalls) == 1 and "silent for 5 h 2 min" in stalls[0].summary


def test_a_live_source_stalls_as_before() -> None:
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    for _ in range(50):
        det.observe(feed.sample(2.4, running=16, queue=2))
        det.evaluate(feed.t)
    found = det.evaluate(feed.t + timedelta(seconds=det.config.stall_s + 1))
    assert [f.rule for f in found if f.active] == [STALLED]
