"""What a report draws, collected in one pass: per-interval points, run boundaries, findings."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from acceptmon.detect.positions import Positions
from acceptmon.model import DecodeSample, Record, Run, SpecSample
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch


def _floats() -> array[float]:
    return array("d")


def _ints() -> array[int]:
    return array("q")


@dataclass
class SourceSeries:
    """One source's intervals as columns (no per-line objects kept): a Decode batch is
    appended column by column, never interval by interval. The columns are machine
    numbers (``array``), which numpy reads and pickle writes as they are: a month of
    intervals goes to the child that draws them as a few buffers, not as a float object each."""

    #: Each interval's time, in epoch seconds.
    secs: array[float] = field(default_factory=_floats)
    accept_len: array[float] = field(default_factory=_floats)
    running: array[int] = field(default_factory=_ints)
    #: Each run's interval indices, in order of first appearance.
    by_run: dict[str, array[int]] = field(default_factory=dict)
    #: Whether any interval logged a batch size (SGLang's ``#running-req``; vLLM logs none).
    loads: bool = False
    #: vLLM per-position acceptance per run, weighted by drafts as the findings' words are.
    positions: Positions = field(default_factory=Positions)

    def add(self, rid: str, secs: list[float], lens: list[float], running: list[int]) -> None:
        """Intervals of run ``rid``, column by column (``fromlist``: twice as fast as ``extend``
        from a list, ~0.05 s of a 1M-line report)."""
        start = len(self.secs)
        self.secs.fromlist(secs)
        self.accept_len.fromlist(lens)
        self.running.fromlist(running)
        self.by_run.setdefault(rid, _ints()).fromlist(list(range(start, len(self.secs))))


class SeriesSink:
    """A pipeline sink: every interval with a time and an accept length, by source."""

    def __init__(self, tracker: RunTracker) -> None:
        self._tracker = tracker
        self.sources: dict[str, SourceSeries] = {}

    def observe_run_start(self, run: Run) -> None:
        """Nothing to note: each interval looks its run up."""

    def observe_batch(self, batch: DecodeBatch) -> None:
        """A stretch of Decode lines, column by column (the fast path)."""
        lens, run = batch.lens, self._tracker.current(batch.source)
        if lens is None or not batch.n:
            return
        s = self.sources.setdefault(batch.source, SourceSeries())
        s.loads = True
        rid = run.run_id if run else "-"
        epochs, running = batch.epochs, batch.running
        secs = [t for t in epochs if t is not None]
        if len(secs) == len(epochs):
            s.add(rid, secs, lens, running)
            return
        kept = [i for i, t in enumerate(epochs) if t is not None]  # an interval without a time is left out
        s.add(rid, secs, [lens[i] for i in kept], [running[i] for i in kept])

    def observe(self, record: Record) -> None:
        if not isinstance(record, DecodeSample | SpecSample):
            return
        run = self._tracker.current(record.meta.source)
        s = self.sources.setdefault(record.meta.source, SourceSeries())
        if isinstance(record, SpecSample) and record.per_position:
            s.positions.add(run.run_id if run else "-", record)
        if record.accept_len is None or record.meta.ts is None:
            return
        s.loads = s.loads or isinstance(record, DecodeSample)
        running = record.running_req if isinstance(record, DecodeSample) else 0
        s.add(run.run_id if run else "-", [record.meta.ts.timestamp()], [record.accept_len], [running])
