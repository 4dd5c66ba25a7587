"""With file events, quiet files are not stat-ed every poll; events and the backstop still find changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.events import FileEvents
from acceptmon.sources.local import LocalSource


def lines(src: LocalSource) -> list[str]:
    out = []
    for c in src.poll():
        out += c.lines
        src.commit(c)
    return out


@pytest.fixture
def stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = os.stat

    def counting(path, *a, **kw):  # type: ignore[no-untyped-def]
        seen.append(os.fsdecode(path))
        return real(path, *a, **kw)

    monkeypatch.setattr("acceptmon.sources.tail.localfs.os.stat", counting)
    return seen


def setup(tmp_path: Path, n: int, events: FileEvents | None) -> tuple[LocalSource, ManualClock]:
    for i in range(n):
        (tmp_path / f"s{i:03d}.log").write_text("x\n")
    clock = ManualClock()
    src = LocalSource("app", str(tmp_path / "*.log"), clock=clock, events=events, quiet_after=10, backstop=5)
    assert len(lines(src)) == n
    clock.advance(11)  # every file is quiet now
    lines(src)
    return src, clock


def test_quiet_files_are_not_stat_ed_when_events_cover_them(tmp_path: Path, stats: list[str]) -> None:
    events = FileEvents()
    events.watching(str(tmp_path))
    src, clock = setup(tmp_path, 50, events)
    stats.clear()
    clock.advance(0.25)
    assert lines(src) == []
    assert [p for p in stats if p.endswith(".log")] == []
    log = tmp_path / "s007.log"
    with log.open("a") as f:
        f.write("written\n")
    events.record(str(log))
    clock.advance(0.25)
    assert lines(src) == ["written"]
    assert [p for p in stats if p.endswith(".log")] == [str(log)]


def test_the_backstop_finds_a_change_no_event_named(tmp_path: Path) -> None:
    events = FileEvents()
    events.watching(str(tmp_path))
    src, clock = setup(tmp_path, 5, events)
    with (tmp_path / "s002.log").open("a") as f:
        f.write("missed event\n")
    clock.advance(0.25)
    assert lines(src) == []
    clock.advance(5)
    assert lines(src) == ["missed event"]


def test_look_everywhere_finds_an_append_at_once_and_only_once(tmp_path: Path, stats: list[str]) -> None:
    """Appends name no file (writes are not subscribed to): a scrape's catch-up looks at every file."""
    events = FileEvents()
    events.watching(str(tmp_path))
    src, clock = setup(tmp_path, 5, events)
    with (tmp_path / "s003.log").open("a") as f:
        f.write("appended\n")
    clock.advance(0.25)
    assert lines(src) == []
    events.look_everywhere()
    stats.clear()
    assert lines(src) == ["appended"]
    assert len([p for p in stats if p.endswith(".log")]) == 5
    stats.clear()
    clock.advance(0.25)
    assert lines(src) == []
    # Back to skipping quiet files; the one just written stays active for quiet_after.
    assert [p for p in stats if p.endswith(".log")] == [str(tmp_path / "s003.log")]


def test_without_events_for_the_directory_every_poll_looks(tmp_path: Path, stats: list[str]) -> None:
    src, clock = setup(tmp_path, 20, FileEvents())  # no directory watched
    stats.clear()
    clock.advance(0.25)
    lines(src)
    assert len([p for p in stats if p.endswith(".log")]) == 20
