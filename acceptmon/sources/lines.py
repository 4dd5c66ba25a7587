"""Bytes chunks → complete lines, keeping the partial tail (pure)."""

from __future__ import annotations

from typing import Protocol


class Readable(Protocol):
    """What lines are read from: a file, a decompressing reader, an SFTP file, a pipe."""

    def read(self, size: int = -1, /) -> bytes: ...


#: A line longer than this is dropped and counted, so one runaway writer
#: cannot make the agent's memory grow without bound.
MAX_LINE_BYTES = 4 * 1024 * 1024


class LineSplitter:
    """Split a byte stream into complete lines.

    ``feed`` returns the decoded complete lines and how many bytes, counted
    from the end of the previous complete line, are now fully handled (so the
    caller's offset always sits on a line boundary). A partial last line is
    held until its newline arrives. Invalid UTF-8 is replaced, never fatal;
    a trailing ``\\r`` is stripped. A line longer than ``max_line`` bytes is
    dropped whole and counted in ``overlong`` (complete lines are measured in
    characters, held partial lines in bytes); memory stays bounded. After ``feed``,
    ``text`` is its lines joined by newlines when that is the decoded text itself
    (nothing stripped or dropped; else None): a ``Chunk.text`` no one need join again.
    """

    __slots__ = ("_pending", "_skipping", "_tail", "max_line", "overlong", "text")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._tail = b""
        self._pending = 0
        self._skipping = False
        self.max_line = max_line
        self.overlong = 0
        self.text: str | None = None

    @property
    def pending(self) -> int:
        """Bytes after the last complete line (held or being skipped)."""
        return self._pending

    def reset(self) -> None:
        self._tail = b""
        self._pending = 0
        self._skipping = False

    def feed(self, data: bytes) -> tuple[list[str], int]:
        """Return (complete lines, bytes consumed up to the last newline)."""
        cut = data.rfind(b"\n")
        self.text = None
        if cut < 0:
            self._pending += len(data)
            self._hold(self._tail + data if not self._skipping else data)
            return [], 0
        consumed = self._pending + cut + 1
        buf = data[:cut] if self._skipping else self._tail + data[:cut]
        skip_first = self._skipping
        self._skipping = False
        rest = data[cut + 1 :]
        self._tail, self._pending = b"", len(rest)
        self._hold(rest)
        # "\n" never occurs inside a UTF-8 sequence, so decoding first and
        # splitting after gives the same lines as splitting bytes first.
        text = buf.decode("utf-8", "replace")
        out = text.split("\n")
        if skip_first:
            del out[0]
        if "\r" in text:
            out = [s.rstrip("\r") for s in out]
        elif not skip_first:
            self.text = text
        if len(text) > self.max_line and max(map(len, out), default=0) > self.max_line:
            keep = [s for s in out if len(s) <= self.max_line]
            self.overlong += len(out) - len(keep)
            out = keep
            self.text = None
        return out, consumed

    def _hold(self, buf: bytes) -> None:
        if self._skipping:
            return
        if len(buf) > self.max_line:
            self.overlong += 1
            self._skipping = True
            buf = b""
        self._tail = buf


READ_SIZE = 1 << 20
