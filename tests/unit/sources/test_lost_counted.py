"""A file that goes away before we read its end is counted (``lost_unread``), not only logged:
an SRE sees ``acceptmon_source_errors_total{kind="lost_unread"}`` rise, and the log says where."""

from __future__ import annotations

import logging

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.lines import MAX_LINE_BYTES
from acceptmon.sources.ssh.reattach import ReattachingFS
from acceptmon.sources.tail.follower import FollowSettings, PathFollower
from tests.support.fakefs import FakeFS

LOG = "/var/log/app.log"


def test_a_file_deleted_while_the_connection_was_down_is_counted_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fs, clock = FakeFS(), ManualClock()
    fs.mkdir("/var/log")
    rfs = ReattachingFS()
    rfs.bind(fs, lambda: not fs.down)
    events = SourceEvents("t", logging.getLogger("test.lost"))
    f = PathFollower(LOG, FollowSettings("t", rfs, clock, 16, 0.5, MAX_LINE_BYTES), events)
    fs.append(LOG, *(f"line {i}" for i in range(40)))
    f.look()
    f.read(16)  # a little of it: the rest is unread
    fs.cut_in = 1
    with pytest.raises(Exception, match="connection"):
        f.read(16)
    fs.down = False
    fs.delete(LOG)  # gone, and no other name holds it
    rfs.reconnected()
    f.distrust()
    with caplog.at_level(logging.WARNING, logger="test.lost"):
        for _ in range(3):
            f.look()
            f.read(1 << 20)
            clock.advance(1.0)
    health = events.snapshot(up=True, lag=0, files=0)
    assert dict(health.errors).get("lost_unread") == 1
    assert "not read" in health.last_error
    assert any("before its end" in r.getMessage() for r in caplog.records)
