"""SSHSource's own logic with an in-memory filesystem: checkpoints, health, back-pressure."""

from __future__ import annotations

from typing import Any

from acceptmon.clock import ManualClock
from acceptmon.sources.ssh import SSHSource
from acceptmon.sources.ssh.options import SSHSettings
from tests.support.fakefs import FakeFS

LOG = "/var/log/app.log"


class FakeWorker:
    def __init__(self) -> None:
        self.wakes = 0

    def wake(self) -> None:
        self.wakes += 1


class FakePool:
    def __init__(self) -> None:
        self.worker = FakeWorker()
        self.released = False

    def acquire(self, params: Any, settings: Any, client: Any) -> FakeWorker:
        return self.worker

    def release(self, worker: Any, client: Any) -> None:
        self.released = True


def make(pattern: str = LOG, **kw: Any) -> tuple[SSHSource, FakePool, ManualClock]:
    pool, clock = FakePool(), ManualClock()
    settings = SSHSettings(ssh_config=None, **kw)
    return SSHSource("gpu1", f"ssh://gpu1{pattern}", settings, pool=pool, clock=clock), pool, clock  # type: ignore[arg-type]


def drive(src: SSHSource, fs: FakeFS, clock: ManualClock) -> list[str]:
    """A few worker rounds, then one poll with every chunk committed."""
    for _ in range(10):
        if not src.work(fs, lambda: True):  # type: ignore[arg-type]
            clock.advance(0.3)
    lines: list[str] = []
    for chunk in src.poll():
        lines.extend(chunk.lines)
        src.commit(chunk)
    return lines


def test_checkpoint_restore_round_trip() -> None:
    fs = FakeFS()
    src, _, clock = make()
    src.host_state(True, "", "")
    fs.append(LOG, "a", "b")
    assert drive(src, fs, clock) == ["a", "b"]
    state = src.checkpoint()
    (entry,) = state["files"][LOG]["streams"]
    assert entry["offset"] == 4 and entry["lineno"] == 3
    fs.append(LOG, "c")
    again, _, clock2 = make()
    again.restore(state)
    assert drive(again, fs, clock2) == ["c"]


def test_missing_file_is_one_error_episode_and_recovers() -> None:
    fs = FakeFS()
    src, _, clock = make()
    src.host_state(True, "", "")
    drive(src, fs, clock)
    drive(src, fs, clock)
    health = src.health()
    assert not health.up and dict(health.errors) == {"file_missing": 1}
    fs.append(LOG, "x")
    assert drive(src, fs, clock) == ["x"]
    assert src.health().up


def test_full_buffer_stops_reading_and_poll_wakes_the_worker() -> None:
    fs = FakeFS()
    src, pool, _clock = make(buffer_bytes=64)
    fs.append(LOG, *(f"line {i:03d}" for i in range(100)))
    src.poll()
    for _ in range(5):
        src.work(fs, lambda: True)  # type: ignore[arg-type]
    chunks = src.poll()
    assert 0 < sum(len(c.lines) for c in chunks) < 20
    assert pool.worker.wakes == 1
    src.close()
    assert pool.released


def test_glob_adds_new_files_and_drops_vanished_idle_ones() -> None:
    fs = FakeFS()
    src, _, clock = make("/var/log/*.log", glob_interval=1.0)
    fs.append("/var/log/a.log", "a")
    fs.append("/var/log/a.log.1", "old")
    assert drive(src, fs, clock) == ["a"]
    fs.append("/var/log/b.log", "b")
    clock.advance(2)
    assert drive(src, fs, clock) == ["b"]
    del fs.files["/var/log/b.log"]
    clock.advance(2)
    drive(src, fs, clock)
    clock.advance(2)
    drive(src, fs, clock)
    assert src.health().open_files == 1


def test_rotated_files_known_before_a_first_line_stay_history_across_a_restart() -> None:
    """Found by the model test: with nothing committed yet, a restart must not take a file
    rotated through the path meanwhile for history (nor the old history for news)."""
    fs = FakeFS()
    src, _, clock = make()
    fs.append(f"{LOG}.1", "history")
    assert drive(src, fs, clock) == []
    state = src.checkpoint()
    assert state["files"][LOG]["done"] and not state["files"][LOG]["streams"]
    fs.append(LOG, "a")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.rename(LOG, f"{LOG}.1")
    again, _, clock2 = make()
    again.restore(state)
    assert drive(again, fs, clock2) == ["a"]
    assert again.checkpoint()["files"][LOG]["streams"][0]["offset"] == 2
