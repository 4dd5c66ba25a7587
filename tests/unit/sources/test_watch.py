"""DirectoryWatcher logic with a fake observer (no threads), and what a real one sends."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from watchdog.events import (
    FileClosedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from acceptmon.sources.events import FileEvents
from acceptmon.sources.watch import DirectoryWatcher
from tests.support.wait import wait_for
from tests.support.waker import CountingWaker


class FakeObserver:
    def __init__(self, fail_start: bool = False, fail_dirs: tuple[str, ...] = ()) -> None:
        self.fail_start = fail_start
        self.fail_dirs = fail_dirs
        self.scheduled: list[tuple[Any, str]] = []
        self.filters: list[Any] = []
        self.stopped = False

    def start(self) -> None:
        if self.fail_start:
            raise OSError(24, "inotify instance limit reached")

    def schedule(self, handler: Any, path: str, recursive: bool = False, event_filter: Any = None) -> None:
        assert not recursive
        if path in self.fail_dirs:
            raise OSError(28, "inotify watch limit reached")
        self.scheduled.append((handler, path))
        self.filters.append(event_filter)

    def stop(self) -> None:
        self.stopped = True

    def join(self, timeout: float | None = None) -> None:
        pass


def test_files_that_come_go_or_move_wake_writes_and_reads_do_not(tmp_path: Path) -> None:
    obs = FakeObserver()
    waker = CountingWaker()
    w = DirectoryWatcher(waker, observer_factory=lambda: obs)
    w.add(str(tmp_path))
    assert w.start() and w.active
    w.add(str(tmp_path))  # idempotent
    [(handler, path)] = obs.scheduled
    assert path == str(tmp_path)
    [wanted] = obs.filters  # the observer is told not to subscribe to writes at all
    assert FileCreatedEvent in wanted and FileModifiedEvent not in wanted and FileOpenedEvent not in wanted
    log = str(tmp_path / "x.log")
    for quiet in (FileModifiedEvent, FileOpenedEvent, FileClosedEvent, FileClosedNoWriteEvent):
        handler.dispatch(quiet(log))  # an observer that ignores the filter still wakes nobody
    assert waker.woken == 0
    handler.dispatch(FileMovedEvent(log, log + ".1"))
    handler.dispatch(FileCreatedEvent(log))
    handler.dispatch(FileDeletedEvent(log + ".1"))
    assert waker.woken == 3
    w.stop()
    assert obs.stopped and not w.active


def test_observer_that_cannot_start_leaves_polling(caplog: Any) -> None:
    w = DirectoryWatcher(CountingWaker(), observer_factory=lambda: FakeObserver(fail_start=True))
    assert not w.start() and not w.active
    w.add("/tmp")  # no observer: nothing happens, nothing raises
    assert "relying on polling" in caplog.text


def test_directory_that_cannot_be_watched_is_logged_once_and_retried(tmp_path: Path, caplog: Any) -> None:
    obs = FakeObserver(fail_dirs=(str(tmp_path),))
    w = DirectoryWatcher(CountingWaker(), observer_factory=lambda: obs)
    w.start()
    w.add(str(tmp_path))
    w.add(str(tmp_path))
    assert caplog.text.count("cannot watch") == 1
    obs.fail_dirs = ()
    w.add(str(tmp_path))
    assert [p for _, p in obs.scheduled] == [str(tmp_path)]


def test_a_real_observer_sends_nothing_for_appends_and_wakes_on_rotation(tmp_path: Path) -> None:
    """inotify delivers in order: once the create is seen, any event for the appends before it was too."""
    log = tmp_path / "server.log"
    log.write_text("first\n")
    waker, events = CountingWaker(), FileEvents()
    w = DirectoryWatcher(waker, events=events)
    w.add(str(tmp_path))
    assert w.start()
    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        try:
            for i in range(20):
                os.write(fd, b"line %d\n" % i)
        finally:
            os.close(fd)
        (tmp_path / "marker").touch()
        wait_for(lambda: waker.woken >= 1, 10, "the create event")
        assert events.touched_since(0)[1] == {str(tmp_path / "marker")}
        assert waker.woken == 1
        seq = events.touched_since(0)[0]
        log.rename(tmp_path / "server.log.1")
        wait_for(lambda: waker.woken >= 2, 10, "the move event")
        log.write_text("new\n")
        (tmp_path / "server.log.1").unlink()
        wait_for(lambda: waker.woken >= 4, 10, "the create and delete events")
        assert events.touched_since(seq)[1] == {str(log), str(tmp_path / "server.log.1")}
    finally:
        w.stop()
