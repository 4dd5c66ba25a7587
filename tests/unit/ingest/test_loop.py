"""The one live loop (``ingest.loop``): budgets, overlong lines, and run starts after the chunk."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from acceptmon.ingest import Pipeline
from acceptmon.ingest.loop import Loop
from acceptmon.model import Chunk, Record, Run, ServerStart
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.base import SourceHealth
from acceptmon.testing.synth import decode_line, server_args_line, shutdown

T0 = datetime(2026, 12, 1, 9, 0, 0)


@dataclass
class Scripted:
    """A source handing out one scripted chunk per poll (``endless``: the same one forever)."""

    name: str
    chunks: list[Chunk]
    endless: bool = False
    overlong: int = 0
    polls: int = 0
    committed: list[Chunk] = field(default_factory=list)

    def poll(self) -> list[Chunk]:
        self.polls += 1
        if self.endless:
            return [self.chunks[0]]
        return [self.chunks.pop(0)] if self.chunks else []

    def commit(self, chunk: Chunk) -> None:
        self.committed.append(chunk)

    def checkpoint(self) -> dict[str, Any]:
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        pass

    def health(self) -> SourceHealth:
        return SourceHealth(up=True, overlong_lines=self.overlong)

    def close(self) -> None:
        pass


@dataclass
class Seen:
    """A consumer noting what it got, in order."""

    events: list[str] = field(default_factory=list)

    def observe_run_start(self, run: Run) -> None:
        self.events.append(f"start {run.run_id}")

    def observe(self, record: Record) -> None:
        if isinstance(record, ServerStart):
            self.events.append(f"args line {record.meta.lineno}")

    def observe_batch(self, batch: DecodeBatch) -> None:
        self.events.append(f"batch of {batch.n}")


T1 = T0 + timedelta(minutes=5)
FIRST = [
    server_args_line(T0),
    *(decode_line(T0 + timedelta(seconds=i), 2.5) for i in range(5)),
    *shutdown(T1),
]
#: The line number of the restart's server_args line.
RESTART = len(FIRST) + 1


def _restart_chunk() -> Chunk:
    lines = [*FIRST, server_args_line(T1), decode_line(T1, 2.0)]
    return Chunk("gpu", tuple(lines), 1)


def test_poll_budget_bounds_a_step_and_leaves_a_backlog() -> None:
    chunk = Chunk("gpu", (decode_line(T0, 2.5),), 1)
    source = Scripted("gpu", [chunk], endless=True)
    loop = Loop(Pipeline())
    assert loop.step({"gpu": source}, budget=5) == 5
    assert source.polls == 5 and len(source.committed) == 5
    assert loop.backlog and loop.pending()


def test_time_budget_stops_after_the_first_chunk_when_spent() -> None:
    chunk = Chunk("gpu", (decode_line(T0, 2.5),), 1)
    source = Scripted("gpu", [chunk], endless=True)
    loop = Loop(Pipeline())
    assert loop.step({"gpu": source}, budget=100, seconds=0.0) == 1
    assert source.polls == 1 and loop.backlog


def test_a_drained_source_leaves_no_backlog_and_overlong_lines_are_counted_once() -> None:
    source = Scripted("gpu", [Chunk("gpu", (decode_line(T0, 2.5),), 1)], overlong=3)
    pipeline = Pipeline()
    loop = Loop(pipeline)
    assert loop.step({"gpu": source}) == 1
    assert not loop.backlog and not loop.pending()
    loop.step({"gpu": source})
    stats = pipeline.store.stats("gpu")
    assert stats.error_kinds["overlong"] == 3 and stats.counters["lines"] == 4


def test_run_starts_reach_consumers_in_line_order_and_the_caller_after_the_chunk() -> None:
    """Consumers get each start in its place; ``after`` gets them once the chunk is committed,
    with the (plain, not re-entrant) lock free: it may take it itself."""
    pipeline = Pipeline()
    seen = Seen()
    pipeline.consumers.append(seen)
    lock = threading.Lock()
    source = Scripted("gpu", [_restart_chunk()])
    handled: list[tuple[list[str], int, bool]] = []

    def after(starts: list[Run]) -> None:
        free = lock.acquire(blocking=False)  # no re-entry: the loop does not hold it now
        if free:
            lock.release()
        handled.append(([r.run_id for r in starts], len(source.committed), free))

    loop = Loop(pipeline, lock, after)
    loop.step({"gpu": source})
    assert handled == [(["r1", "r2"], 1, True)]
    assert seen.events[0] == "start r1" and seen.events[1] == "args line 1"
    r2 = seen.events.index("start r2")
    assert "batch of 4" in seen.events[:r2] and seen.events[r2 + 1] == f"args line {RESTART}"


def test_feed_returns_the_chunks_run_starts() -> None:
    pipeline = Pipeline()
    starts = pipeline.feed(_restart_chunk())
    assert [(r.run_id, r.started_lineno) for r in starts] == [("r1", 1), ("r2", RESTART)]
    assert pipeline.feed(Chunk("gpu", (decode_line(T0, 2.5),), 10)) == []
