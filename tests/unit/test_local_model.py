"""Model-based check of the file followers: random writes, rotations, crashes and restarts.

Whatever happens, the lines the consumer processed, with re-reads after a
crash resumed from the last saved checkpoint, must equal the lines written:
none lost, none repeated, in order. One interpreter drives two followers:
``LocalSource`` over real files and over the in-memory filesystem with local
semantics, and ``SSHSource`` over the in-memory filesystem with SFTP's (no
inodes, whole-second mtimes), as a remote host would show it.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptmon.clock import ManualClock
from acceptmon.model import Chunk
from acceptmon.sources.base import Source
from acceptmon.sources.local import LocalSource
from acceptmon.sources.ssh import SSHSource
from acceptmon.sources.ssh.options import SSHSettings
from tests.support.fakefs import FakeFS

ROTATE_WAIT = 5.0


class Disk(Protocol):
    """What the writer and logrotate do to files: a real directory or a ``FakeFS``."""

    def write(self, path: str, data: bytes) -> None: ...

    def create(self, path: str) -> None: ...

    def rename(self, a: str, b: str) -> None: ...

    def truncate(self, path: str) -> None: ...

    def set_mtime(self, path: str, ns: int) -> None: ...

    def exists(self, path: str) -> bool: ...

    def read(self, path: str) -> bytes: ...


class OsDisk:
    def write(self, path: str, data: bytes) -> None:
        with open(path, "ab") as f:
            f.write(data)

    def create(self, path: str) -> None:
        open(path, "wb").close()

    def rename(self, a: str, b: str) -> None:
        os.rename(a, b)

    def truncate(self, path: str) -> None:
        os.truncate(path, 0)

    def set_mtime(self, path: str, ns: int) -> None:
        os.utime(path, ns=(ns, ns))

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()


class Writer:
    """A log writer plus logrotate (numbered, no deletion), with mtimes that advance."""

    def __init__(self, disk: Disk, directory: str) -> None:
        self.disk = disk
        self.path = f"{directory}/x.log"
        self.expected: list[str] = []
        self.rotated = 0
        self.partial = ""
        self.t = time.time_ns()
        #: Bytes copied so far while a staged copytruncate is under way.
        self.copying: int | None = None
        #: Whether the writer keeps writing during this copytruncate (else it is paused).
        self.running = False
        self.floor = 0
        #: Lines written after the copy's end and before the truncate: in no file at the end,
        #: though the agent may have read them; and the unterminated pieces copies end with.
        self.lost: set[str] = set()
        self.tails: list[str] = []

    def _write(self, path: str, data: str) -> None:
        self.disk.write(path, data.encode())
        self._touch(path)

    def _touch(self, path: str) -> None:
        self.t += 10_000_000
        self.disk.set_mtime(path, self.t)

    def append(self, n: int) -> None:
        if self.copying is not None and not self.running:
            return  # paused during copytruncate, as logrotate's users do
        lines = [
            f"L{len(self.expected) + i:05d} " + "x" * ((len(self.expected) + i) * 7 % 23) for i in range(n)
        ]
        rest = self.partial + "\n" if self.partial else ""
        self.partial = ""
        self._write(self.path, rest + "".join(line + "\n" for line in lines))
        self.expected += lines

    def append_partial(self) -> None:
        if self.partial or self.copying is not None:
            return
        line = f"L{len(self.expected):05d} partial"
        # Real files start with a timestamp: a file's first bytes are its own.
        self._write(self.path, line[:9])
        self.partial = line[9:]
        self.expected.append(line)

    def finish_partial(self) -> None:
        if self.partial:
            self._write(self.path, self.partial + "\n")
            self.partial = ""

    def _shift(self) -> None:
        for i in range(self.rotated, 0, -1):
            self.disk.rename(f"{self.path}.{i}", f"{self.path}.{i + 1}")
        self.rotated += 1

    def rename(self, create: bool) -> None:
        self.copy_truncate()
        self.finish_partial()
        if not self.disk.exists(self.path):
            return
        self._shift()
        self.disk.rename(self.path, self.path + ".1")
        if create:
            self.disk.create(self.path)
            self._touch(self.path)

    def copytruncate(self) -> None:
        self.copy_begin()
        self.copy_fill(2)
        self.copy_truncate()

    def copy_begin(self) -> None:
        """logrotate's copytruncate in stages: create the copy empty (the writer is paused)."""
        self.finish_partial()
        if self.copying or not self.disk.exists(self.path):
            return
        self._shift()
        self.disk.create(self.path + ".1")
        self.copying = 0

    def copy_fill(self, n: int) -> None:
        """Copy the next part of the file; ``n`` of 2 or more finishes the copy."""
        if self.copying is None:
            return
        data = self.disk.read(self.path)
        end = len(data) if n >= 2 else min(len(data), self.copying + 100 * n)
        self.disk.write(self.path + ".1", data[self.copying : end])
        self.copying = end
        self._touch(self.path + ".1")

    def copy_begin_running(self) -> None:
        """A copytruncate the writer does not pause for: what it writes after the copy is lost.

        The copy reads to an end-of-file it sees after it began, so it holds at least
        what the file held then.
        """
        self.copy_begin()
        self.running = self.copying is not None
        self.floor = len(self.disk.read(self.path)) if self.running else 0

    def copy_truncate(self) -> None:
        if self.copying is None:
            return
        if self.running:
            if self.copying < self.floor:
                data = self.disk.read(self.path)
                self.disk.write(self.path + ".1", data[self.copying : self.floor])
                self.copying = self.floor
                self._touch(self.path + ".1")
            self._lose_after(self.copying)
        else:
            self.copy_fill(2)
        self.copying, self.running = None, False
        self.disk.truncate(self.path)
        self._touch(self.path)

    def _lose_after(self, copied: int) -> None:
        data = self.disk.read(self.path)
        start = 0
        for raw in data.splitlines(keepends=True):
            end = start + len(raw)
            if end > copied:
                self.lost.add(raw.decode().rstrip("\n"))
                if start < copied:
                    self.tails.append(data[start:copied].decode())
            start = end

    def check(self, got: list[str]) -> None:
        """Every line in the files once, in order; a lost line at most once; a copy's tail at most once."""
        rest = list(got)
        for tail in self.tails:
            if rest.count(tail) > (tail in self.expected and tail not in self.lost):
                rest.remove(tail)
        assert len(rest) == len(set(rest)), "a line was handed out twice"
        assert set(rest) <= set(self.expected), "a line nobody wrote"
        order = {line: i for i, line in enumerate(self.expected)}
        assert rest == sorted(rest, key=order.__getitem__), "lines out of order"
        assert set(self.expected) - self.lost <= set(rest), "a line in the files was never handed out"


class FakePool:
    """Stands in for the host's worker: the test does the worker's rounds itself."""

    def acquire(self, params: Any, settings: Any, client: Any) -> FakePool:
        return self

    def release(self, worker: Any, client: Any) -> None:
        pass

    def wake(self) -> None:
        pass


class Backend(Protocol):
    """Builds the source under test and does whatever must happen before its ``poll``."""

    def source(self, clock: ManualClock) -> Source: ...

    def pump(self, src: Source) -> None: ...

    def cut(self, n: int) -> None:
        """Drop the connection at the ``n``-th I/O call from now (where there is one)."""
        ...

    def check_closed(self) -> None: ...


class Local:
    def __init__(self, path: str, max_detached: int, fs: FakeFS | None = None) -> None:
        self.path, self.max_detached, self.fs = path, max_detached, fs

    def source(self, clock: ManualClock) -> Source:
        return LocalSource(
            "x",
            self.path,
            clock=clock,
            read_size=64,
            rotate_wait=ROTATE_WAIT,
            max_detached=self.max_detached,
            fs=self.fs,
        )

    def pump(self, src: Source) -> None:
        pass

    def cut(self, n: int) -> None:
        pass

    def check_closed(self) -> None:
        """Every file the source opened, it closed (only a fake filesystem can tell)."""
        assert self.fs is None or self.fs.open_handles == 0


class Sftp:
    def __init__(self, fs: FakeFS, path: str) -> None:
        self.fs, self.path = fs, path

    def source(self, clock: ManualClock) -> Source:
        settings = SSHSettings(ssh_config=None, settle=ROTATE_WAIT, step_bytes=64, buffer_bytes=512)
        return SSHSource("x", f"ssh://gpu1{self.path}", settings, pool=FakePool(), clock=clock)  # type: ignore[arg-type]

    def pump(self, src: Source) -> None:
        """The worker's rounds until it has nothing ready (it would then wait for the clock).

        A round the connection dropped in ends as the worker's does: the host
        is reported down, then, reconnected, every client resyncs.
        """
        assert isinstance(src, SSHSource)
        for _ in range(100):
            try:
                more = src.work(self.fs, lambda: not self.fs.down)  # type: ignore[arg-type]
            except ConnectionResetError:
                assert self.fs.down, "only a lost connection may end a round"
                src.host_state(False, "io", "connection lost")
                self.fs.down = False
                src.reconnected()
                src.host_state(True, "", "")
                continue
            if not more:
                break
        assert self.fs.open_handles == 0

    def cut(self, n: int) -> None:
        self.fs.cut_in = n

    def check_closed(self) -> None:
        assert self.fs.open_handles == 0


class Agent:
    """Polls, processes a prefix of what it polled, saves checkpoints, crashes."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.clock = ManualClock()
        self.got: list[str] = []
        self.saved: dict[str, Any] = {}
        self.saved_len = 0
        self.src: Source | None = None
        self.queue: list[Chunk] = []
        self.start()

    def start(self) -> None:
        if self.src is None:
            self.src = self.backend.source(self.clock)
            self.src.restore(self.saved)
            self.poll()  # the agent starts when it first looks: earlier rotations are not its business
            if not self.saved:
                self.save()  # so a crash before any other save still resumes rather than starts afresh

    def poll(self) -> None:
        if self.src is not None:
            self.backend.pump(self.src)
            self.queue += self.src.poll()

    def consume(self, n: int) -> None:
        if self.src is None:
            return
        for chunk in self.queue[:n]:
            self.got += chunk.lines
            self.src.commit(chunk)
        del self.queue[:n]

    def save(self) -> None:
        if self.src is not None:
            self.saved = self.src.checkpoint()
            self.saved_len = len(self.got)

    def crash(self) -> None:
        if self.src is not None:
            self.src.close()
            self.src = None
            self.queue = []
            del self.got[self.saved_len :]

    def tick(self) -> None:
        self.clock.advance(ROTATE_WAIT + 1)

    def finish(self) -> None:
        self.start()
        for _ in range(200):
            self.poll()
            self.consume(len(self.queue))
            self.tick()
        assert self.src is not None
        assert self.src.health().open_files <= 1


OPS = ["append", "append", "partial", "rename", "rename_nocreate", "copytruncate", "poll", "poll", "consume"]
OPS += ["save", "crash", "start", "tick", "copy_begin", "copy_fill", "copy_truncate", "cut", "copy_running"]


@contextmanager
def local_disk(max_detached: int) -> Iterator[tuple[Disk, str, Backend]]:
    with tempfile.TemporaryDirectory() as d:
        yield OsDisk(), d, Local(f"{d}/x.log", max_detached)


@contextmanager
def fake_local_disk() -> Iterator[tuple[Disk, str, Backend]]:
    fs = FakeFS(inodes=True)
    fs.mkdir("/logs")
    yield fs, "/logs", Local("/logs/x.log", 4, fs)


@contextmanager
def sftp_disk() -> Iterator[tuple[Disk, str, Backend]]:
    fs = FakeFS(inodes=False)
    fs.mkdir("/logs")
    yield fs, "/logs", Sftp(fs, "/logs/x.log")


BACKENDS: dict[str, Callable[[], Any]] = {
    "local": lambda: local_disk(4),
    "local-one-rotated-file-open": lambda: local_disk(1),
    "local-fakefs": fake_local_disk,
    "sftp": sftp_disk,
}


@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(1, 6)), max_size=40))
def test_no_line_lost_or_repeated(backend: str, ops: list[tuple[str, int]]) -> None:
    with BACKENDS[backend]() as (disk, directory, follower):
        w = Writer(disk, directory)
        a = Agent(follower)
        do = {
            "append": w.append,
            "partial": lambda _n: w.append_partial(),
            "rename": lambda _n: w.rename(create=True),
            "rename_nocreate": lambda _n: w.rename(create=False),
            "copytruncate": lambda _n: w.copytruncate(),
            "poll": lambda _n: a.poll(),
            "consume": a.consume,
            "save": lambda _n: a.save(),
            "crash": lambda _n: a.crash(),
            "start": lambda _n: a.start(),
            "tick": lambda _n: a.tick(),
            "copy_begin": lambda _n: w.copy_begin(),
            "copy_fill": w.copy_fill,
            "copy_truncate": lambda _n: w.copy_truncate(),
            "cut": follower.cut,
            "copy_running": lambda _n: w.copy_begin_running(),
        }
        for op, n in ops:
            do[op](n)
        w.copy_truncate()
        w.finish_partial()
        a.finish()
        w.check(a.got)
        assert a.src is not None
        a.src.close()
        follower.check_closed()
