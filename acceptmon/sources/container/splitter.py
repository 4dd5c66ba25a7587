"""Bytes of a log file → the engine's own lines, whatever runtime wrapped them, positions exact.

``ContainerSplitter`` has ``LineSplitter``'s interface, so every reader of log
bytes (followed files, files read once, stdin) takes it unchanged. It detects
the format from the file's first non-blank line; a plain file then goes through
the ``LineSplitter`` as before (the same lists, no per-line objects).

Docker json-file and CRI lines are unwrapped by ``Decoder``. ``consumed`` only
ever advances to a raw line boundary no message straddles: a message still in
pieces (and every message, of either stream, that starts after its first piece)
is held back as raw bytes and decoded again with the next data, so a checkpoint
at ``consumed`` resumes without losing or repeating a message. Errors are
counted once, when ``consumed`` passes their line. Held bytes are bounded by
``max_line``: past it the unfinished messages are dropped (counted overlong)
and the rest of their pieces skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from acceptmon.model import CONTAINER_MALFORMED, CONTAINER_OVERLONG
from acceptmon.sources.container.lines import PLAIN, Decoded, Decoder, detect
from acceptmon.sources.lines import MAX_LINE_BYTES, LineSplitter

#: Nothing to skip: (stderr, stdout) of ``Clean.skipping``.
_NO_SKIP = (False, False)


def _detect(buf: bytes) -> str | None:
    """The format of the first complete non-blank line in ``buf``; None if there is none yet."""
    start = 0
    while (end := buf.find(b"\n", start)) >= 0:
        line = buf[start:end]
        if line.strip():
            return detect(line.decode("utf-8", "replace").rstrip("\r"))
        start = end + 1
    return None


class ContainerSplitter:
    """``LineSplitter`` for a file that may be a container runtime's log.

    ``feed`` returns (lines, bytes consumed since the previous boundary);
    after it, ``times`` holds the runtime's raw RFC 3339 time per line (None
    for a plain file) and ``lines_read`` how many raw lines it consumed (line
    numbers stay the raw file's). ``errors`` counts container lines that were
    malformed or messages over ``max_line`` (``take_errors`` hands them on);
    ``overlong`` counts plain lines dropped for length (as ``LineSplitter``).
    """

    __slots__ = (
        "_decoder",
        "_held",
        "_lines",
        "_skip",
        "_skipping",
        "errors",
        "format",
        "lines_read",
        "max_line",
        "times",
    )

    def __init__(self, max_line: int = MAX_LINE_BYTES, lazy: bool = False) -> None:
        """``lazy``: a plain file's lines as ``LineSplitter`` gives them with ``lazy``."""
        self._lines = LineSplitter(max_line, lazy)
        self._decoder = Decoder(max_line)
        #: Raw bytes after the last boundary (while detecting, and for container formats).
        self._held = b""
        #: Bytes of an unterminated raw line over the limit being skipped (None: not skipping).
        self._skip: int | None = None
        #: At the boundary: which streams skip the rest of a dropped message.
        self._skipping = _NO_SKIP
        self.format: str | None = None
        self.max_line = max_line
        self.errors = {CONTAINER_MALFORMED: 0, CONTAINER_OVERLONG: 0}
        self.times: list[str | None] | None = None
        self.lines_read = 0

    @property
    def overlong(self) -> int:
        return self._lines.overlong

    @overlong.setter
    def overlong(self, n: int) -> None:
        self._lines.overlong = n

    @property
    def text(self) -> str | None:
        """The last ``feed``'s lines joined by newlines, where a plain file's splitter has
        that string (``LineSplitter.text``); None for a container log's unwrapped lines."""
        return self._lines.text if self.format == PLAIN else None

    @property
    def pending(self) -> int:
        """Bytes after the last boundary (held, or being skipped)."""
        if self.format == PLAIN:
            return self._lines.pending
        return len(self._held) + (self._skip or 0)

    def take_errors(self) -> tuple[tuple[str, int], ...]:
        """(kind, n) of errors counted since the last call (a ``Chunk.errors``)."""
        if not any(self.errors.values()):
            return ()
        got = tuple((k, n) for k, n in self.errors.items() if n)
        self.errors = dict.fromkeys(self.errors, 0)
        return got

    def reset(self) -> None:
        self._lines.reset()
        self._held, self._skip, self._skipping = b"", None, _NO_SKIP

    def feed(self, data: bytes) -> tuple[Sequence[str], int]:
        """Return (complete lines, bytes consumed up to a boundary no message straddles)."""
        if self.format == PLAIN:
            over = self._lines.overlong
            lines, consumed = self._lines.feed(data)
            self.lines_read = len(lines) + self._lines.overlong - over
            return lines, consumed
        if self.format is None:
            data = self._held + data
            fmt = _detect(data)
            if fmt is None and len(data) <= self.max_line:
                self._held, self.lines_read = data, 0
                return [], 0
            self._held = b""
            self.format = fmt or PLAIN
            if self.format == PLAIN:
                return self.feed(data)
            self._decoder.set_format(self.format)
        return self._container(data, final=False)

    def finish(self) -> tuple[Sequence[str], int]:
        """The input has ended: hand out everything held, an unfinished message as it is."""
        if self.format == PLAIN:
            self._lines.text = None
            return self.feed(b"\n") if self._lines.pending else ([], 0)
        open_line = self._skip is not None or not self._held.endswith(b"\n")
        tail = b"\n" if open_line and (self._held or self._skip is not None) else b""
        if self.format is None:
            data, self._held = self._held + tail, b""
            fmt = _detect(data)
            if fmt is None:  # blank lines only: nothing to hand out, in any format
                self.times, self.lines_read = None, data.count(b"\n")
                return [], len(data)
            self.format = fmt
            if fmt == PLAIN:
                return self.feed(data)
            self._decoder.set_format(self.format)
            tail = data
        return self._container(tail, final=True)

    def _container(self, data: bytes, *, final: bool) -> tuple[list[str], int]:
        skipped = 0
        lines_read = 0
        if self._skip is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self._skip += len(data)
                self.times, self.lines_read = [], 0
                return [], 0
            skipped, data, self._skip, lines_read = self._skip + nl + 1, data[nl + 1 :], None, 1
        buf = self._held + data
        cut = buf.rfind(b"\n")
        text = buf[:cut].decode("utf-8", "replace") if cut >= 0 else ""
        raw = text.split("\n") if cut >= 0 else []
        if "\r" in text:
            raw = [s.rstrip("\r") for s in raw]
        dec = self._decoder
        dec.restart(self._skipping)
        malformed, overlong = dec.errors["malformed"], dec.errors["overlong"]
        out = dec.feed(raw)
        clean = dec.clean
        if final or clean.lines == len(raw):
            start = cut + 1
        else:
            start = cut
            for _ in range(len(raw) - clean.lines):
                start = buf.rfind(b"\n", 0, start)
            start += 1
        if final or len(buf) - start > self.max_line:
            self.errors[CONTAINER_MALFORMED] += dec.errors["malformed"] - malformed
            self.errors[CONTAINER_OVERLONG] += dec.errors["overlong"] - overlong
            return self._release(out, buf, cut, skipped, lines_read + len(raw), final)
        self.errors[CONTAINER_MALFORMED] += clean.malformed
        self.errors[CONTAINER_OVERLONG] += clean.overlong
        self._skipping = clean.skipping
        self._held = buf[start:]
        n = clean.messages
        self.times = out.times[:n] if out.times is not None else None
        self.lines_read = lines_read + clean.lines
        return out.texts[:n], skipped + start

    def _release(
        self, out: Decoded, buf: bytes, cut: int, skipped: int, lines_read: int, final: bool
    ) -> tuple[list[str], int]:
        """Hand out every finished message; drop (or, at the end, flush) the unfinished ones."""
        dec = self._decoder
        skip_err, skip_out = dec.skipping
        texts, times = out.texts, out.times or []
        unfinished = dec.flush()
        if final:
            texts, times = texts + unfinished.texts, times + (unfinished.times or [])
        else:
            self.errors[CONTAINER_OVERLONG] += len(unfinished.texts)
        # The rest of a dropped message's pieces is skipped up to its final one.
        streams = unfinished.streams or []
        self._skipping = (skip_err or "stderr" in streams, skip_out or "stdout" in streams)
        self._held = buf[cut + 1 :]
        if len(self._held) > self.max_line:  # one raw line already over the limit: skip to its end
            self.errors[CONTAINER_OVERLONG] += 1
            self._held, self._skip = b"", len(self._held)
        self.times, self.lines_read = times, lines_read
        return texts, skipped + cut + 1
