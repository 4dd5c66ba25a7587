"""Container runtime log lines → the engine's own lines (pure, stateful).

Runtimes wrap each line the engine writes: Docker's json-file driver as
``{"log": "…\\n", "stream": "stdout", "time": "…Z"}``, kubelet/containerd (CRI)
as ``<RFC3339Nano> stdout F <text>``. Both split a line over 16 KiB into
pieces (json-file: a ``log`` without the trailing newline; CRI: tag ``P``
until the ``F`` piece), so a long ``server_args`` line must be joined before
the parser sees it. The format is detected once per file from its first
non-blank line; a plain file then passes through as the same list object.
Runtime times travel as the raw RFC 3339 strings (``parse_time`` reads one
where a record needs it), so a message costs no datetime object.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import NamedTuple

from acceptmon.sources.lines import MAX_LINE_BYTES

PLAIN, CRI, JSON_FILE = "plain", "cri", "json-file"
STREAMS = frozenset({"stdout", "stderr"})

#: (raw RFC 3339 time, stream, partial, content) of one runtime record.
Piece = tuple[str | None, str, bool, str]


class Message(NamedTuple):
    """One line as the engine wrote it, with what the runtime knew about it."""

    text: str
    stream: str | None
    time: str | None


class Decoded(NamedTuple):
    """Messages as parallel lists, so a plain file costs no per-line objects.

    ``streams`` and ``times`` are None for a plain file (``texts`` is then
    the list that was fed in).
    """

    texts: list[str]
    streams: list[str] | None
    times: list[str | None] | None

    def messages(self) -> Iterator[Message]:
        if self.streams is None or self.times is None:
            return (Message(t, None, None) for t in self.texts)
        return (Message(*m) for m in zip(self.texts, self.streams, self.times, strict=True))


def parse_time(raw: str) -> datetime | None:
    """RFC 3339 with a zone (Go's RFC3339Nano; digits past microseconds dropped), else None."""
    if len(raw) < 20 or raw[10] != "T":
        return None
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _cri(line: str) -> Piece | None:
    """(time, stream, partial, content) of a CRI line, or None (kubelet's parseCRILog rules)."""
    parts = line.split(" ", 3)
    if len(parts) != 4 or parts[1] not in STREAMS:
        return None
    if parse_time(parts[0]) is None:
        return None
    # Tags are ':'-separated and only the first is defined; anything but P ends a message.
    return parts[0], parts[1], parts[2].partition(":")[0] == "P", parts[3]


def _json(line: str) -> Piece | None:
    """(time, stream, partial, content) of a json-file record, or None."""
    if not line.startswith("{"):
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return None
    # Docker omits an empty ``log`` (an empty piece); ``attrs`` may be present and is ignored.
    text, stream, raw = rec.get("log", ""), rec.get("stream"), rec.get("time")
    if not isinstance(text, str) or stream not in STREAMS:
        return None
    when = raw if isinstance(raw, str) and parse_time(raw) is not None else None
    if text.endswith("\n"):
        return when, stream, False, text[:-2] if text.endswith("\r\n") else text[:-1]
    return when, stream, True, text


def detect(line: str) -> str:
    """The format a file is in, judged from one of its (non-blank) lines."""
    if _cri(line) is not None:
        return CRI
    if _json(line) is not None:
        return JSON_FILE
    return PLAIN


class _Partial:
    """Pieces of one stream's unfinished message."""

    __slots__ = ("pieces", "size", "skipping", "time")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.size = 0
        self.time: str | None = None
        self.skipping = False


class Clean(NamedTuple):
    """The last point of a decode where no message was in pieces: safe to resume from."""

    lines: int  # input lines before it
    messages: int  # messages handed out before it
    malformed: int
    overlong: int
    skipping: tuple[bool, bool]  # (stderr, stdout) skipping the rest of an overlong message


class Decoder:
    """Decode one file's lines; pieces of a message are joined per stream.

    ``feed`` takes complete lines (as ``LineSplitter`` yields them). A message
    whose pieces pass ``max_message`` characters is dropped and counted in
    ``errors["overlong"]`` (its later pieces are skipped up to its final one),
    so memory stays bounded; a line that is not in the file's format is
    counted in ``errors["malformed"]`` and skipped. A message still in pieces
    at the end of the input stays pending until more lines or ``flush``.
    ``clean`` tells where the last ``feed`` last had no message in pieces
    (``ContainerSplitter`` resumes there, so positions stay exact).
    """

    __slots__ = ("_parse", "_partial", "clean", "errors", "format", "max_message")

    def __init__(self, max_message: int = MAX_LINE_BYTES) -> None:
        self.format: str | None = None
        self.max_message = max_message
        self.errors = {"malformed": 0, "overlong": 0}
        self._partial = {s: _Partial() for s in sorted(STREAMS)}
        self._parse: Callable[[str], Piece | None] = _cri
        self.clean = Clean(0, 0, 0, 0, (False, False))

    def set_format(self, fmt: str) -> None:
        self.format = fmt
        self._parse = _json if fmt == JSON_FILE else _cri

    def restart(self, skipping: tuple[bool, bool]) -> None:
        """Drop every unfinished message; keep skipping what ``skipping`` says (from a ``Clean``)."""
        self._partial = {s: _Partial() for s in sorted(STREAMS)}
        for part, skip in zip(self._partial.values(), skipping, strict=True):
            part.skipping = skip

    @property
    def skipping(self) -> tuple[bool, bool]:
        """(stderr, stdout): whether the rest of a dropped message is being skipped."""
        return self._partial["stderr"].skipping, self._partial["stdout"].skipping

    @property
    def pending_bytes(self) -> int:
        """Characters held in unfinished messages."""
        return sum(p.size for p in self._partial.values())

    @property
    def pending_pieces(self) -> int:
        return sum(len(p.pieces) for p in self._partial.values())

    def feed(self, lines: list[str]) -> Decoded:
        if self.format is None:
            first = next((s for s in lines if s.strip()), None)
            if first is None:
                return Decoded(lines, None, None)
            self.set_format(detect(first))
        if self.format == PLAIN:
            return Decoded(lines, None, None)
        return self._decode(lines)

    def flush(self) -> Decoded:
        """Hand over unfinished messages as they are (the input has ended)."""
        texts: list[str] = []
        streams: list[str] = []
        times: list[str | None] = []
        for stream, part in self._partial.items():
            if part.pieces:
                texts.append("".join(part.pieces))
                streams.append(stream)
                times.append(part.time)
            self._partial[stream] = _Partial()
        return Decoded(texts, streams, times)

    def _decode(self, lines: list[str]) -> Decoded:
        texts: list[str] = []
        streams: list[str] = []
        times: list[str | None] = []
        parse, limit, partials = self._parse, self.max_message, self._partial
        err, out = partials["stderr"], partials["stdout"]
        malformed = overlong = 0
        # The last clean point is where the last run of open pieces began: recorded when a
        # first piece opens a message while the other stream has none open.
        clean: Clean | None = None
        for i, line in enumerate(lines):
            got = parse(line)
            if got is None:
                malformed += 1
                continue
            when, stream, partial, text = got
            part = out if stream == "stdout" else err
            if not part.pieces and not part.skipping:
                if not partial:  # the common case: a whole line in one record
                    if len(text) > limit:
                        overlong += 1
                        continue
                    texts.append(text)
                    streams.append(stream)
                    times.append(when)
                    continue
                if not (err if part is out else out).pieces:
                    clean = Clean(i, len(texts), malformed, overlong, (err.skipping, out.skipping))
                part.time = when
            if part.skipping:
                part.skipping = partial
                continue
            part.size += len(text)
            if part.size > limit:
                overlong += 1
                part.pieces, part.size, part.skipping = [], 0, partial
                continue
            part.pieces.append(text)
            if not partial:
                texts.append("".join(part.pieces))
                streams.append(stream)
                times.append(part.time)
                part.pieces, part.size, part.time = [], 0, None
        if not err.pieces and not out.pieces:
            clean = Clean(len(lines), len(texts), malformed, overlong, (err.skipping, out.skipping))
        self.clean = clean or Clean(0, 0, 0, 0, (err.skipping, out.skipping))
        self.errors["malformed"] += malformed
        self.errors["overlong"] += overlong
        return Decoded(texts, streams, times)
