"""The contract every line source fulfils (local file, SSH, stdin, journald)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from acceptmon.model import Chunk

#: The most of a small file (a draft model's config.json) read over any source's transport.
MAX_CONFIG_BYTES = 1 << 20

#: Reads a file's bytes (locally, or over an SSH connection); None if absent.
FileReader = Callable[[str], "bytes | None"]


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """What a source reports about itself for /metrics."""

    up: bool
    bytes_read: int = 0
    rotations: int = 0
    truncations: int = 0
    lag_bytes: int = 0
    open_files: int = 0
    overlong_lines: int = 0
    errors: tuple[tuple[str, int], ...] = ()
    last_error: str = ""


class Source(Protocol):
    """A pulled source of log lines.

    ``poll`` returns the complete lines available now and never blocks
    (bounded work per call: callers loop while it returns data). A line is
    handed out once. ``commit`` is told the ``Chunk.end`` of chunks that the
    consumer has fully processed; ``checkpoint`` returns JSON-able state that
    ``restore`` (called before the first poll) resumes from, so that a restart
    neither loses nor repeats a line.
    """

    name: str

    def poll(self) -> list[Chunk]: ...

    def commit(self, chunk: Chunk) -> None: ...

    def checkpoint(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...

    def health(self) -> SourceHealth: ...

    def close(self) -> None: ...
