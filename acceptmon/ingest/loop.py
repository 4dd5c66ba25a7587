"""The live loop: poll → feed → commit with budgets, then the chunk's run starts.

One pass over the sources for the agent and ``acceptmon runs --follow``. Each
source is polled until it has nothing more, ``budget`` polls or ``seconds``,
so a backlog cannot hold the caller: stop requests, checkpoints, reloads and
redraws are looked at between steps (``backlog`` says to come back without
waiting). Each chunk is fed and its position committed together under
``lock``, so a checkpoint never holds a position whose lines are not counted.

The run starts a chunk opened reach the consumers in line order, inside the
feed; ``after`` gets them once the chunk is in and the lock is released, for
what must not run in the middle of one (rendering and announcing findings,
writing run snapshots), and may take the lock itself: it is never re-entered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager

from acceptmon.ingest import Pipeline
from acceptmon.ingest.garbage import young_garbage_kept
from acceptmon.model import Run
from acceptmon.sources.base import Source

#: Called after each committed chunk with the runs it started (often none), outside the lock.
AfterChunk = Callable[[list[Run]], None]

#: Polls per source per step, and seconds per source, unless the caller says otherwise.
BUDGET = 64
SECONDS = 0.25


class Loop:
    """Feeds a pipeline from live sources; holds what a health check reads without the lock."""

    def __init__(
        self,
        pipeline: Pipeline,
        lock: AbstractContextManager[object] | None = None,
        after: AfterChunk | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.lock = lock if lock is not None else threading.Lock()
        self._after = after
        #: Whether the last step left unread data behind (then the caller does not sleep).
        self.backlog = False
        #: Whether a chunk is being fed right now (read without the lock).
        self.in_hand = False
        #: When ingestion last advanced (monotonic seconds: a finished step or a committed chunk).
        self.last_progress = time.monotonic()
        self._overlong: dict[str, int] = {}

    def step(self, sources: Mapping[str, Source], budget: int = BUDGET, seconds: float = SECONDS) -> int:
        """Poll every source (at most ``budget`` polls, or ``seconds``, each); return lines fed."""
        with young_garbage_kept():  # a backlog is read in bulk (``ingest.garbage``)
            return self._step(sources, budget, seconds)

    def _step(self, sources: Mapping[str, Source], budget: int, seconds: float) -> int:
        total = 0
        self.backlog = False
        for name, source in list(sources.items()):
            deadline = time.monotonic() + seconds
            for _ in range(budget):
                if total and time.monotonic() >= deadline:
                    self.backlog = True
                    break
                chunks = source.poll()
                if not chunks:
                    break
                for chunk in chunks:
                    self.in_hand = True
                    with self.lock:
                        starts = self.pipeline.feed(chunk)
                        source.commit(chunk)
                    self.in_hand = False
                    self.last_progress = time.monotonic()
                    total += len(chunk.lines)
                    if self._after is not None:
                        self._after(starts)
            else:
                self.backlog = True  # budget spent with data left: come back without waiting
            self._count_overlong(name, source)
        self.last_progress = time.monotonic()
        return total

    def pending(self) -> bool:
        """Lines wait to be fed (no lock taken: safe to call while a step runs)."""
        return self.in_hand or self.backlog

    def _count_overlong(self, name: str, source: Source) -> None:
        """Lines the source dropped for length since the last step: lines and errors."""
        over = source.health().overlong_lines
        delta = over - self._overlong.get(name, 0)
        if delta > 0:
            with self.lock:
                self.pipeline.count_overlong(name, delta)
        self._overlong[name] = over
