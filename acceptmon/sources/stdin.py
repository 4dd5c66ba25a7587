"""Lines from a byte stream (stdin, a pipe): no positions, nothing to resume.

The one reader of standard input: the agent polls it (never blocking); the
commands that read to the end (``oneshot -``, ``runs -``, ...) wait on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, BinaryIO

from acceptmon.model import Chunk
from acceptmon.sources.base import SourceHealth
from acceptmon.sources.container.splitter import ContainerSplitter
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.lines import MAX_LINE_BYTES

log = logging.getLogger("acceptmon.sources")


class StreamSource:
    """Reads what the stream has now without blocking; EOF ends it (health down).

    The descriptor is switched to non-blocking while we read it and switched
    back on close, since a terminal's or pipe's flags are shared with the
    processes around us. With ``wait`` it is made blocking instead: a poll waits for
    data (a command reading the stream to its end has nothing else to do).
    """

    def __init__(
        self,
        name: str,
        fileobj: BinaryIO,
        *,
        read_size: int = 1 << 16,
        poll_bytes: int = 4 << 20,
        max_line: int = MAX_LINE_BYTES,
        wait: bool = False,
    ) -> None:
        self.name = name
        self._file = fileobj
        self._fd = _fileno(fileobj)
        self._was_blocking = True
        if self._fd is not None:
            self._was_blocking = os.get_blocking(self._fd)
            os.set_blocking(self._fd, wait)
        self._read_size = read_size
        self._poll_bytes = poll_bytes
        self._splitter = ContainerSplitter(max_line)
        self._lineno = 1
        self._health = SourceEvents(name, log)
        self._eof = False

    def _read(self) -> bytes | None:
        """Bytes available now; None if none yet; b"" at end of stream."""
        if self._fd is None:
            return self._file.read(self._read_size)
        try:
            return os.read(self._fd, self._read_size)
        except BlockingIOError:
            return None

    def poll(self) -> list[Chunk]:
        lines: list[str] = []
        times: list[str | None] | None = None
        raw_lines = 0
        used = 0
        while not self._eof and used < self._poll_bytes:
            try:
                data = self._read()
            except OSError as e:
                self._health.error("read_error", f"read error: {e.strerror or e}")
                self._eof = True
                break
            if data is None:
                break
            if not data:
                self._eof = True
                log.info("%s: end of stream", self.name)
            got = self._splitter.feed(data)[0] if data else self._splitter.finish()[0]
            used += len(data)
            raw_lines += self._splitter.lines_read
            if self._splitter.times is not None:
                times = (times or [None] * len(lines)) + self._splitter.times
            lines += got
            if not data:
                break
        self._health.read(used)
        errors = self._splitter.take_errors()
        if not lines and not errors:
            return []
        # No path: a stream has no file to take a modification time (a year) from.
        chunk = Chunk(
            self.name, tuple(lines), self._lineno, None, "", tuple(times) if times else None, errors
        )
        self._lineno += raw_lines
        return [chunk]

    @property
    def ended(self) -> bool:
        """Whether the stream reached its end (or failed)."""
        return self._eof

    def commit(self, chunk: Chunk) -> None:
        """Nothing to remember: a stream cannot be re-read."""

    def checkpoint(self) -> dict[str, Any]:
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        """Nothing to restore: a stream starts where it is."""

    def health(self) -> SourceHealth:
        return self._health.snapshot(up=not self._eof, lag=0, files=0, overlong=self._splitter.overlong)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, self._was_blocking)
            self._fd = None


def _fileno(fileobj: BinaryIO) -> int | None:
    try:
        return fileobj.fileno()
    except (OSError, ValueError, AttributeError):
        return None  # an in-memory stream never blocks
