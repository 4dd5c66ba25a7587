"""Model-based check of LocalSource: random writes, rotations, crashes and restarts.

Whatever happens, the lines the consumer processed, with re-reads after a
crash resumed from the last saved checkpoint, must equal the lines written:
none lost, none repeated, in order.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptmon.clock import ManualClock
from acceptmon.sources.local import LocalSource

ROTATE_WAIT = 5.0


class Writer:
    """A log writer plus logrotate (numbered, no deletion), with mtimes that advance."""

    def __init__(self, directory: str, *, running: bool = False, pad: int = 0) -> None:
        self.path = os.path.join(directory, "x.log")
        #: Whether the writer keeps writing through copytruncate (lines written
        #: after the copy and before the truncate are then in no file).
        self.running = running
        #: Extra bytes per line: with long lines a file soon outgrows the fingerprint.
        self.pad = pad
        self.expected: list[str] = []
        self.rotated = 0
        self.partial = ""
        self.t = time.time_ns()
        #: Bytes copied so far while a staged copytruncate is under way.
        self.copying: int | None = None

    def _write(self, path: str, data: str) -> None:
        with open(path, "ab") as f:
            f.write(data.encode())
        self._touch(path)

    def _touch(self, path: str) -> None:
        self.t += 10_000_000
        os.utime(path, ns=(self.t, self.t))

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
            os.rename(f"{self.path}.{i}", f"{self.path}.{i + 1}")
        self.rotated += 1

    def rename(self, create: bool) -> None:
        self.copy_truncate()
        self.finish_partial()
        if not os.path.exists(self.path):
            return
        self._shift()
        os.rename(self.path, self.path + ".1")
        if create:
            open(self.path, "wb").close()
            self._touch(self.path)

    def copytruncate(self) -> None:
        self.copy_begin()
        self.copy_fill(2)
        self.copy_truncate()

    def copy_begin(self) -> None:
        """logrotate's copytruncate in stages: create the copy empty (the writer is paused)."""
        self.finish_partial()
        if self.copying or not os.path.exists(self.path):
            return
        self._shift()
        open(self.path + ".1", "wb").close()
        self.copying = 0

    def copy_fill(self, n: int) -> None:
        """Copy the next part of the file; ``n`` of 2 or more finishes the copy."""
        if self.copying is None:
            return
        with open(self.path, "rb") as f:
            data = f.read()
        end = len(data) if n >= 2 else min(len(data), self.copying + 100 * n)
        with open(self.path + ".1", "ab") as f:
            f.write(data[self.copying : end])
        self.copying = end
        self._touch(self.path + ".1")

    def copy_truncate(self, fill: bool = True) -> None:
        """Truncate after the copy; without ``fill`` what the copy has not reached is lost."""
        if self.copying is None:
            return
        if fill:
            self.copy_fill(2)
        self.copying = None
        os.truncate(self.path, 0)
        self._touch(self.path)


class Agent:
    """Polls, processes a prefix of what it polled, saves checkpoints, crashes."""

    def __init__(self, path: str, max_detached: int) -> None:
        self.path = path
        self.max_detached = max_detached
        self.clock = ManualClock()
        self.got: list[str] = []
        self.saved: dict = {}
        self.saved_len = 0
        self.src: LocalSource | None = None
        self.queue: list = []
        self.start()

    def start(self) -> None:
        if self.src is None:
            self.src = LocalSource(
                "x",
                self.path,
                clock=self.clock,
                read_size=64,
                rotate_wait=ROTATE_WAIT,
                max_detached=self.max_detached,
            )
            self.src.restore(self.saved)
            self.poll()  # the agent starts when it first looks: earlier rotations are not its business
            if not self.saved:
                self.save()  # so a crash before any other save still resumes rather than starts afresh

    def poll(self) -> None:
        if self.src is not None:
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
OPS += ["save", "crash", "start", "tick", "copy_begin", "copy_fill", "copy_truncate"]


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
    }
    for op, n in ops:
        do[op](n)


@pytest.mark.parametrize("max_detached", [4, 1], ids=["default", "one-rotated-file-open"])
@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(1, 6)), max_size=40))
def test_no_line_lost_or_repeated(max_detached: int, ops: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        w = Writer(d)
        a = Agent(w.path, max_detached)
        play(w, a, ops)
        w.copy_truncate()
        w.finish_partial()
        a.finish()
        assert a.got == w.expected
        assert a.src is not None
        a.src.close()


def on_disk(directory: str) -> tuple[set[str], set[str]]:
    """(whole lines, unterminated last lines) in the log and all its copies."""
    whole: set[str] = set()
    tails: set[str] = set()
    for name in os.listdir(directory):
        with open(os.path.join(directory, name), "rb") as f:
            *lines, tail = f.read().decode().split("\n")
        whole.update(lines)
        if tail:
            tails.add(tail)
    return whole, tails


RUNNING_OPS = [*OPS, "append", "copy_truncate_early"]


@pytest.mark.parametrize("pad", [0, 300], ids=["short-lines", "long-lines"])
@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(RUNNING_OPS), st.integers(1, 6)), max_size=40))
def test_writer_running_through_copytruncate(pad: int, ops: list[tuple[str, int]]) -> None:
    """Lines written between the copy and the truncate are in no file: counting them is
    allowed (we may have read them in time), but every line in a file is counted exactly
    once and in order, and nothing is counted twice."""
    with tempfile.TemporaryDirectory() as d:
        w = Writer(d, running=True, pad=pad)
        a = Agent(w.path, 4)
        play(w, a, ops)
        w.copy_truncate()
        w.finish_partial()
        a.finish()
        whole, tails = on_disk(d)
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
