"""PLACEHOLDER until the helper's version lands: CRI / json-file wrappers of plain lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime

PIECE = 16 * 1024


def _time(line: str, default: datetime) -> datetime:
    try:
        return datetime.strptime(line[1:20], "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return default


def cri_lines(lines: list[str], default: datetime, stream: str = "stdout") -> list[str]:
    out = []
    for line in lines:
        when = _time(line, default).replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
        raw = line.encode()
        parts = [raw[i : i + PIECE].decode() for i in range(0, len(raw), PIECE)] or [""]
        out += [f"{when} {stream} P {p}" for p in parts[:-1]] + [f"{when} {stream} F {parts[-1]}"]
    return out


def json_file_lines(lines: list[str], default: datetime, stream: str = "stdout") -> list[str]:
    out = []
    for line in lines:
        when = _time(line, default).replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
        raw = (line + "\n").encode()
        parts = [raw[i : i + PIECE].decode() for i in range(0, len(raw), PIECE)]
        out += [json.dumps({"log": p, "stream": stream, "time": when}) for p in parts]
    return out
