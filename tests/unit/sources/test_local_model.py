"""Model-based check of the file followers: random writes, rotations, crashes and restarts.

Whatever happens, the lines the consumer processed, with re-reads after a
crash resumed from the last saved checkpoint, must equal the lines written:
none lost, none repeated, in order. One interpreter drives the one follower
on three targets: ``LocalSource`` over real files, ``LocalSource`` over the
in-memory filesystem with local semantics (inodes, nanosecond mtimes), and
``SSHSource`` over the in-memory filesystem with SFTP's (no inodes,
whole-second mtimes), stepped as its host worker would step it, with
connections that drop mid-I/O.
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

    def names(self) -> list[str]:
        """Every file's path."""
        ...


class OsDisk:
    def __init__(self, directory: str) -> None:
        self.directory = directory

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

    def names(self) -> list[str]:
        return [os.path.join(self.directory, n) for n in os.listdir(self.directory)]


class Writer:
    """A log writer plus logrotate (numbered, no deletion), with mtimes that advance."""

    def __init__(
        self, disk: Disk, directory: str, clock: ManualClock, *, running: bool = False, pad: int = 0
    ) -> None:
        self.disk = disk
        self.clock = clock
        self.path = f"{directory}/x.log"
        #: Whether the writer keeps writing through copytruncate (lines written
        #: after the copy and before the truncate are then in no file).
        self.running = running
        #: Extra bytes per line: with long lines a file soon outgrows the fingerprint.
        self.pad = pad
        self.expected: list[str] = []
        self.rotated = 0
        self.partial = ""
        self.t = self.t0 = time.time_ns()
        self.c0 = clock.monotonic()
        #: Bytes copied so far while a staged copytruncate is under way.
        self.copying: int | None = None

    def _write(self, path: str, data: str) -> None:
        self.disk.write(path, data.encode())
        self._touch(path)

    def _touch(self, path: str) -> None:
        # mtimes advance, and keep up with the agent's clock as a real one would (SFTP's
        # whole-second mtimes must not look unchanged for longer than they would).
        self.t = max(self.t + 10_000_000, self.t0 + int((self.clock.monotonic() - self.c0) * 1e9))
        self.disk.set_mtime(path, self.t)

    def append(self, n: int) -> None:
        if self.copying is not None and not self.running:
            return  # paused during copytruncate, as logrotate's users do
        lines = [
            f"L{len(self.expected) + i:05d} " + "x" * ((len(self.expected) + i) * 7 % 23 + self.pad)
            for i in range(n)
        ]
        rest = self.partial + "\n" if self.partial else ""
        self.partial = ""
        self._write(self.path, rest + "".join(line + "\n" for line in lines))
        self.expected += lines

    def append_partial(self) -> None:
        if self.partial or (self.copying is not None and not self.running):
            return
        line = f"L{len(self.expected):05d} partial {len(self.expected)}"
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

    def copy_truncate(self, fill: bool = True) -> None:
        """Truncate after the copy; without ``fill`` what the copy has not reached is lost."""
        if self.copying is None:
            return
        if fill:
            self.copy_fill(2)
        self.copying = None
        self.disk.truncate(self.path)
        self._touch(self.path)


class Target(Protocol):
    """Builds the source under test and does whatever must happen before its ``poll``."""

    def source(self, clock: ManualClock) -> Source: ...

    def pump(self, src: Source) -> None: ...

    def cut(self, n: int) -> None:
        """Drop the connection at the ``n``-th I/O call from now (where there is one)."""
        ...

    def check_closed(self) -> None:
        """Every file the source opened, it closed (where that can be told)."""
        ...


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
        assert self.fs is None or self.fs.open_handles == 0, "a handle was left open"


class FakePool:
    """Stands in for the host's worker: the test does the worker's rounds itself."""

    def acquire(self, params: Any, settings: Any, client: Any) -> FakePool:
        return self

    def release(self, worker: Any, client: Any) -> None:
        pass

    def wake(self) -> None:
        pass


class Sftp:
    def __init__(self, fs: FakeFS, path: str) -> None:
        self.fs, self.path = fs, path

    def source(self, clock: ManualClock) -> Source:
        settings = SSHSettings(ssh_config=None, settle=ROTATE_WAIT, step_bytes=64, buffer_bytes=512)
        return SSHSource("x", f"ssh://gpu1{self.path}", settings, pool=FakePool(), clock=clock)  # type: ignore[arg-type]

    def pump(self, src: Source) -> None:
        """The worker's rounds until it has nothing ready (it would then wait for the clock).

        A round the connection dropped in ends as the worker's does: the host is
        reported down, then, reconnected, every client resyncs. The files the
        source keeps open die with the connection (``FakeFS``), so it must find
        them again; that it closed them all is checked when it is closed.
        """
        assert isinstance(src, SSHSource)
        for _ in range(100):
            try:
                more = src.work(self.fs, lambda: not self.fs.down)
            except ConnectionResetError:
                assert self.fs.down, "only a lost connection may end a round"
                src.host_state(False, "io", "connection lost")
                self.fs.down = False
                src.reconnected()
                src.host_state(True, "", "")
                continue
            if not more:
                break

    def cut(self, n: int) -> None:
        self.fs.cut_in = n

    def check_closed(self) -> None:
        assert self.fs.open_handles == 0, "a handle was left open"


@contextmanager
def local_target(max_detached: int = 4) -> Iterator[tuple[Disk, str, Target]]:
    with tempfile.TemporaryDirectory() as d:
        yield OsDisk(d), d, Local(f"{d}/x.log", max_detached)


@contextmanager
def fake_local_target() -> Iterator[tuple[Disk, str, Target]]:
    fs = FakeFS(inodes=True)
    fs.mkdir("/logs")
    yield fs, "/logs", Local("/logs/x.log", 4, fs)


@contextmanager
def sftp_target() -> Iterator[tuple[Disk, str, Target]]:
    fs = FakeFS()
    fs.mkdir("/logs")
    yield fs, "/logs", Sftp(fs, "/logs/x.log")


TARGETS: dict[str, Callable[[], Any]] = {
    "local": local_target,
    "local-one-rotated-file-open": lambda: local_target(1),
    "local-fakefs": fake_local_target,
    "sftp": sftp_target,
}


class Agent:
    """Polls, processes a prefix of what it polled, saves checkpoints, crashes."""

    def __init__(self, target: Target, clock: ManualClock) -> None:
        self.target = target
        self.clock = clock
        self.got: list[str] = []
        self.saved: dict[str, Any] = {}
        self.saved_len = 0
        self.src: Source | None = None
        self.queue: list[Chunk] = []
        self.start()

    def start(self) -> None:
        if self.src is None:
            self.src = self.target.source(self.clock)
            self.src.restore(self.saved)
            self.poll()  # the agent starts when it first looks: earlier rotations are not its business
            if not self.saved:
                self.save()  # so a crash before any other save still resumes rather than starts afresh

    def poll(self) -> None:
        if self.src is not None:
            self.target.pump(self.src)
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
OPS += ["save", "crash", "start", "tick", "copy_begin", "copy_fill", "copy_truncate", "cut"]


def play(w: Writer, a: Agent, ops: list[tuple[str, int]]) -> None:
    """Apply each (op, n) to the writer or the agent."""
    do: dict[str, Callable[[int], object]] = {
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
        "copy_truncate_early": lambda _n: w.copy_truncate(fill=False),
        "cut": a.target.cut,
    }
    for op, n in ops:
        do[op](n)


@pytest.mark.parametrize("target", list(TARGETS))
@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(1, 6)), max_size=40))
def test_no_line_lost_or_repeated(target: str, ops: list[tuple[str, int]]) -> None:
    with TARGETS[target]() as (disk, directory, tgt):
        clock = ManualClock()
        w = Writer(disk, directory, clock)
        a = Agent(tgt, clock)
        play(w, a, ops)
        w.copy_truncate()
        w.finish_partial()
        a.finish()
        assert a.got == w.expected
        assert a.src is not None
        a.src.close()
        tgt.check_closed()


def on_disk(disk: Disk) -> tuple[set[str], set[str]]:
    """(whole lines, unterminated last lines) in the log and all its copies."""
    whole: set[str] = set()
    tails: set[str] = set()
    for path in disk.names():
        *lines, tail = disk.read(path).decode().split("\n")
        whole.update(lines)
        if tail:
            tails.add(tail)
    return whole, tails


RUNNING_OPS = [*OPS, "append", "copy_truncate_early"]


@pytest.mark.parametrize("target", ["local", "local-fakefs", "sftp"])
@pytest.mark.parametrize("pad", [0, 300], ids=["short-lines", "long-lines"])
@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(RUNNING_OPS), st.integers(1, 6)), max_size=40))
def test_writer_running_through_copytruncate(target: str, pad: int, ops: list[tuple[str, int]]) -> None:
    """Lines written between the copy and the truncate are in no file: counting them is
    allowed (we may have read them in time), but every line in a file is counted exactly
    once and in order, and nothing is counted twice."""
    with TARGETS[target]() as (disk, directory, tgt):
        clock = ManualClock()
        w = Writer(disk, directory, clock, running=True, pad=pad)
        a = Agent(tgt, clock)
        play(w, a, ops)
        w.copy_truncate()
        w.finish_partial()
        a.finish()
        whole, tails = on_disk(disk)
        order = {line: i for i, line in enumerate(w.expected)}
        seen = [order[line] for line in a.got if line in order]
        fragments = [line for line in a.got if line not in order]
        assert len(seen) == len(set(seen)), "a line counted twice"
        assert whole <= set(a.got), "a line in a file was not counted"
        # Beyond whole lines: the unterminated end of a copy, or the rest of a line that
        # was being written when the copy ended (it went to the truncated file).
        assert all(f in whole or any(t.startswith(f) or f.startswith(t) for t in tails) for f in fragments)
        assert len(fragments) == len(set(fragments)), "a fragment counted twice"
        assert a.src is not None
        a.src.close()
        tgt.check_closed()
