"""What a path follower shares with its source: settings and cumulative counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from acceptmon.clock import Clock
from acceptmon.sources.tail.stream import Opener


@dataclass
class SourceStats:
    """Cumulative counters one source reports in its health."""

    bytes_read: int = 0
    rotations: int = 0
    truncations: int = 0
    overlong: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    last_error: str = ""

    def error(self, kind: str, message: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1
        self.last_error = message


@dataclass(frozen=True, slots=True)
class FollowConfig:
    source: str
    opener: Opener
    clock: Clock
    read_size: int
    rotate_wait: float
    max_line: int
    max_detached: int = 4
