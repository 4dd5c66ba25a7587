"""Lines from systemd's journal for one unit, via ``journalctl -f -o json``.

journalctl does the journal-file handling (rotation, vacuuming, boots); we
read its JSON lines and hand out each entry's MESSAGE. The position is the
journal cursor of the last committed entry; a restart passes it back with
``--after-cursor`` so nothing is read twice.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections import deque
from collections.abc import Sequence
from typing import Any

from acceptmon.clock import Clock, SystemClock
from acceptmon.model import Chunk, Position
from acceptmon.sources.base import SourceHealth
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.lines import LineSplitter

log = logging.getLogger("acceptmon.sources")


class JournalSource:
    """Follows ``journalctl -u UNIT``; restarts it after ``restart_interval`` if it exits."""

    def __init__(
        self,
        name: str,
        unit: str,
        *,
        clock: Clock | None = None,
        from_beginning: bool = True,
        command: Sequence[str] = ("journalctl",),
        restart_interval: float = 5.0,
        poll_bytes: int = 4 << 20,
    ) -> None:
        self.name = name
        self.unit = unit
        self._clock = clock or SystemClock()
        self._from_beginning = from_beginning
        self._command = list(command)
        self._restart_interval = restart_interval
        self._poll_bytes = poll_bytes
        self._proc: subprocess.Popen[bytes] | None = None
        self._splitter = LineSplitter()
        self._read_cursor = ""  # last entry handed out: where a restarted child resumes
        self._committed_cursor = ""  # last entry processed: what a checkpoint holds
        self._pending: deque[tuple[int, str]] = deque(maxlen=100_000)
        self._seq = 0
        self._lineno = 1
        self._next_start = 0.0
        self._health = SourceEvents(name, log)
        self._stderr_tail = ""

    def argv(self) -> list[str]:
        argv = [*self._command, "-u", self.unit, "-f", "-o", "json"]
        if self._read_cursor:
            return [*argv, "--after-cursor", self._read_cursor]
        return [*argv, "-n", "all" if self._from_beginning else "0"]

    def restore(self, state: dict[str, Any]) -> None:
        cursor = state.get("cursor")
        if isinstance(cursor, str) and cursor:
            self._read_cursor = self._committed_cursor = cursor

    def poll(self) -> list[Chunk]:
        if self._proc is None and not self._start():
            return []
        assert self._proc is not None and self._proc.stdout is not None
        data, eof = _read_available(self._proc.stdout.fileno(), self._poll_bytes)
        self._drain_stderr()
        self._health.read(len(data))
        records, _ = self._splitter.feed(data)
        lines = self._lines(records)
        if eof:
            self._exited()
        if not lines:
            return []
        self._seq += 1
        self._pending.append((self._seq, self._read_cursor))
        chunk = Chunk(
            self.name, tuple(lines), self._lineno, Position(f"journal:{self.unit}", self._seq), self.name
        )
        self._lineno += len(lines)
        return [chunk]

    def _lines(self, records: Sequence[str]) -> list[str]:
        out: list[str] = []
        for record in records:
            try:
                entry = json.loads(record)
                message = _message(entry.get("MESSAGE"))
                cursor = entry.get("__CURSOR")
            except (ValueError, AttributeError):
                self._error("bad_json", "journalctl printed a line that is not a JSON object")
                continue
            if isinstance(cursor, str):
                self._read_cursor = cursor
            if message is not None:
                out += message.split("\n")
        return out

    def _start(self) -> bool:
        if self._clock.monotonic() < self._next_start:
            return False
        try:
            self._proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except OSError as e:
            self._next_start = self._clock.monotonic() + self._restart_interval
            self._error("spawn_error", f"cannot run {self._command[0]}: {e.strerror or e}")
            return False
        assert self._proc.stdout is not None and self._proc.stderr is not None
        os.set_blocking(self._proc.stdout.fileno(), False)
        os.set_blocking(self._proc.stderr.fileno(), False)
        self._splitter.reset()
        log.info("%s: following journal of %s", self.name, self.unit)
        return True

    def _drain_stderr(self) -> None:
        """Keep the child's last complaint; an unread pipe would fill and stall it."""
        assert self._proc is not None and self._proc.stderr is not None
        err, _ = _read_available(self._proc.stderr.fileno(), 1 << 16)
        lines = err.decode("utf-8", "replace").strip().splitlines()
        if lines:
            self._stderr_tail = lines[-1][:500]

    def _exited(self) -> None:
        assert self._proc is not None
        code = self._proc.wait()
        self._drain_stderr()
        self._error("exited", f"journalctl exited ({code}): {self._stderr_tail}")
        self._stderr_tail = ""
        self._close_child()
        self._next_start = self._clock.monotonic() + self._restart_interval

    def _error(self, kind: str, message: str) -> None:
        self._health.error(kind, message)

    def commit(self, chunk: Chunk) -> None:
        if chunk.end is None:
            return
        while self._pending and self._pending[0][0] <= chunk.end.offset:
            _, cursor = self._pending.popleft()
            if cursor:
                self._committed_cursor = cursor

    def checkpoint(self) -> dict[str, Any]:
        return {"cursor": self._committed_cursor} if self._committed_cursor else {}

    def health(self) -> SourceHealth:
        running = self._proc is not None
        return self._health.snapshot(up=running, lag=0, files=int(running), overlong=self._splitter.overlong)

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
            self._close_child()

    def _close_child(self) -> None:
        assert self._proc is not None
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()
        self._proc = None


def _message(value: Any) -> str | None:
    """MESSAGE is a string, or a list of byte values when it is not valid UTF-8."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value).decode("utf-8", "replace")
    return None


def _read_available(fd: int, limit: int) -> tuple[bytes, bool]:
    """What a non-blocking pipe holds now (up to ``limit``), and whether it reached EOF."""
    parts: list[bytes] = []
    size = 0
    while size < limit:
        try:
            data = os.read(fd, min(1 << 20, limit - size))
        except BlockingIOError:
            return b"".join(parts), False
        if not data:
            return b"".join(parts), True
        parts.append(data)
        size += len(data)
    return b"".join(parts), False
