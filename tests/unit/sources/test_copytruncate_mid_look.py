"""A copytruncate that lands between the two reads a look makes without inodes.

Without inodes a look tells "our file changed in place" from "another file at
the path" by reading our handle's first bytes and the path's. A copytruncate
between those two reads made the old order (our handle first) see our bytes,
then the path's new ones, and call the path "another file": the file we read
was taken for rotated away while still at the path, and its new lines were then
read by two streams (the SSH no-loss test saw 46-260 duplicates once in ~20 runs).
"""

from __future__ import annotations

import logging

from acceptmon.clock import ManualClock
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.lines import MAX_LINE_BYTES
from acceptmon.sources.tail.follower import FollowSettings, PathFollower
from tests.support.fakefs import FakeFS, FakeHandle

LOG = "/var/log/app.log"


class RotatingOnOpen(FakeFS):
    """Runs ``before_open`` (once) when the path is next opened: a writer between two reads."""

    def __init__(self) -> None:
        super().__init__()
        self.before_open: list[str] = []

    def open(self, path: str) -> FakeHandle:
        if path == LOG and self.before_open:
            self.before_open.clear()
            self.copytruncate(LOG, f"{LOG}.1")
            self.append(LOG, "line 4", "line 5")
        return super().open(path)


def test_a_copytruncate_between_the_two_reads_of_a_look_reads_each_line_once() -> None:
    fs, clock = RotatingOnOpen(), ManualClock()
    fs.mkdir("/var/log")
    cfg = FollowSettings("t", fs, clock, 32 * 1024, 0.5, MAX_LINE_BYTES)
    f = PathFollower(LOG, cfg, SourceEvents("t", logging.getLogger("test")))
    lines: list[str] = []

    def step() -> None:
        f.look()
        for chunk, s, lineno in f.read(1 << 30)[0]:
            assert chunk.end is not None
            lines.extend(chunk.lines)
            s.committed, s.committed_lineno = chunk.end.offset, lineno
        f.prune()

    fs.append(LOG, "line 1", "line 2")
    step()
    fs.append(LOG, "line 3")
    fs.now_ns += 2_000_000_000  # a new whole second: the look reads the heads
    fs.before_open.append("copytruncate")
    for _ in range(12):
        step()
        clock.advance(0.3)
    fs.append(LOG, "line 6")
    for _ in range(12):
        step()
        clock.advance(0.3)
    assert lines == [f"line {i}" for i in range(1, 7)]
