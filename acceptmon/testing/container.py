"""Plain log lines as a container runtime writes them: CRI (kubelet/containerd) and Docker json-file.

Both runtimes split a line over 16 KiB into pieces (CRI: ``P`` tags up to an
``F``; json-file: ``log`` values without the trailing newline), so a long
``server_args`` line is wrapped as real runtimes wrap it. Times come from each
line's own timestamp where it has one (read as UTC), else the time given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime

#: Where both runtimes split a line.
PIECE = 16 * 1024

_OWN_TIME = re.compile(r"\[?(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,6}))?")


def rfc3339(when: datetime) -> str:
    """Go's RFC3339Nano as the runtimes print it (nanoseconds, ``Z`` for UTC; a naive time is UTC)."""
    stamp = (when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)).strftime(
        "%Y-%m-%dT%H:%M:%S"
    )
    return f"{stamp}.{when.microsecond:06d}000Z"


def own_time(line: str, default: datetime) -> datetime:
    """The line's own leading timestamp (as UTC), else ``default``."""
    m = _OWN_TIME.match(line)
    if m is None:
        return default
    return datetime.fromisoformat(f"{m[1]}T{m[2]}.{(m[3] or '0').ljust(6, '0')}+00:00")


def split(text: str, size: int = PIECE) -> list[str]:
    """``text`` in pieces of at most ``size`` UTF-8 bytes, never inside a character."""
    pieces: list[str] = []
    start = used = 0
    for i, ch in enumerate(text):
        n = len(ch.encode())
        if used + n > size:
            pieces.append(text[start:i])
            start, used = i, 0
        used += n
    pieces.append(text[start:])
    return pieces


def cri(
    text: str, stream: str = "stdout", tag: str = "F", when: str = "2026-11-30T12:00:01.123456789Z"
) -> str:
    """One CRI line."""
    return f"{when} {stream} {tag} {text}"


def docker(
    text: str, stream: str = "stdout", end: str = "\n", when: str = "2026-11-30T12:00:01.123456789Z"
) -> str:
    """One json-file record (``end=""``: a partial piece)."""
    return json.dumps({"log": text + end, "stream": stream, "time": when}, separators=(",", ":"))


def cri_lines(lines: list[str], when: datetime, stream: str = "stdout") -> list[str]:
    """Plain lines as kubelet writes them (a line over 16 KiB in ``P``/``F`` pieces)."""
    return _wrapped(lines, when, lambda piece, last, stamp: cri(piece, stream, "F" if last else "P", stamp))


def json_file_lines(lines: list[str], when: datetime, stream: str = "stdout") -> list[str]:
    """Plain lines as Docker's json-file driver writes them (split at 16 KiB)."""
    return _wrapped(
        lines, when, lambda piece, last, stamp: docker(piece, stream, "\n" if last else "", stamp)
    )


def _wrapped(lines: list[str], when: datetime, record: Callable[[str, bool, str], str]) -> list[str]:
    """Each line's pieces as runtime records: (piece, is the last, the line's time) → record."""
    out: list[str] = []
    for line in lines:
        stamp = rfc3339(own_time(line, when))
        pieces = split(line)
        out += [record(p, i == len(pieces) - 1, stamp) for i, p in enumerate(pieces)]
    return out
