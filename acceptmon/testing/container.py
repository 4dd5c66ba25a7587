"""Plain log lines as a container runtime writes them: CRI (kubelet/containerd) and Docker json-file.

Both runtimes split a line over 16 KiB into pieces (CRI: ``P`` tags up to an
``F``; json-file: ``log`` values without the trailing newline), so a long
``server_args`` line is wrapped as real runtimes wrap it. Times come from each
line's own timestamp where it has one (read as UTC), else the time given.
"""

from __future__ import annotations

import json
import re
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
    out: list[str] = []
    for line in lines:
        stamp = rfc3339(own_time(line, when))
        pieces = split(line)
        out += [cri(p, stream, "P", stamp) for p in pieces[:-1]]
        out.append(cri(pieces[-1], stream, "F", stamp))
    return out


def json_file_lines(lines: list[str], when: datetime, stream: str = "stdout") -> list[str]:
    """Plain lines as Docker's json-file driver writes them (split at 16 KiB)."""
    out: list[str] = []
    for line in lines:
        stamp = rfc3339(own_time(line, when))
        pieces = split(line)
        out += [docker(p, stream, "", stamp) for p in pieces[:-1]]
        out.append(docker(pieces[-1], stream, "\n", stamp))
    return out
