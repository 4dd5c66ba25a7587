"""DirectoryWatcher logic with a fake observer (no threads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from watchdog.events import FileClosedNoWriteEvent, FileModifiedEvent, FileOpenedEvent

from acceptmon.sources.watch import DirectoryWatcher


class Waker:
    def __init__(self) -> None:
        self.woken = 0

    def wait(self, timeout: float) -> bool:
        return False

    def wake(self) -> None:
        self.woken += 1


class FakeObserver:
    def __init__(self, fail_start: bool = False, fail_dirs: tuple[str, ...] = ()) -> None:
        self.fail_start = fail_start
        self.fail_dirs = fail_dirs
        self.scheduled: list[tuple[Any, str]] = []
        self.stopped = False

    def start(self) -> None:
        if self.fail_start:
            raise OSError(24, "inotify instance limit reached")

    def schedule(self, handler: Any, path: str, recursive: bool = False) -> None:
        assert not recursive
        if path in self.fail_dirs:
            raise OSError(28, "inotify watch limit reached")
        self.scheduled.append((handler, path))

    def stop(self) -> None:
        self.stopped = True

    def join(self, timeout: float | None = None) -> None:
        pass


def test_events_wake_except_those_our_reads_cause(tmp_path: Path) -> None:
    obs = FakeObserver()
    waker = Waker()
    w = DirectoryWatcher(waker, observer_factory=lambda: obs)
    w.add(str(tmp_path))
    assert w.start() and w.active
    w.add(str(tmp_path))  # idempotent
    [(handler, path)] = obs.scheduled
    assert path == str(tmp_path)
    handler.dispatch(FileModifiedEvent(str(tmp_path / "x.log")))
    handler.dispatch(FileOpenedEvent(str(tmp_path / "x.log")))
    handler.dispatch(FileClosedNoWriteEvent(str(tmp_path / "x.log")))
    assert waker.woken == 1
    w.stop()
    assert obs.stopped and not w.active


def test_observer_that_cannot_start_leaves_polling(caplog: Any) -> None:
    w = DirectoryWatcher(Waker(), observer_factory=lambda: FakeObserver(fail_start=True))
    assert not w.start() and not w.active
    w.add("/tmp")  # no observer: nothing happens, nothing raises
    assert "relying on polling" in caplog.text


def test_directory_that_cannot_be_watched_is_logged_once_and_retried(tmp_path: Path, caplog: Any) -> None:
    obs = FakeObserver(fail_dirs=(str(tmp_path),))
    w = DirectoryWatcher(Waker(), observer_factory=lambda: obs)
    w.start()
    w.add(str(tmp_path))
    w.add(str(tmp_path))
    assert caplog.text.count("cannot watch") == 1
    obs.fail_dirs = ()
    w.add(str(tmp_path))
    assert [p for _, p in obs.scheduled] == [str(tmp_path)]
