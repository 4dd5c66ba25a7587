"""What a path follower shares with its source: its settings (its events go to ``SourceEvents``)."""

from __future__ import annotations

from dataclasses import dataclass

from acceptmon.clock import Clock
from acceptmon.sources.tail.fs import FileSystem


@dataclass(frozen=True, slots=True)
class FollowSettings:
    source: str
    fs: FileSystem
    clock: Clock
    read_size: int
    rotate_wait: float
    max_line: int
    max_detached: int = 4
