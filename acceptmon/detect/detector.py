"""The incremental detector the pipeline calls: runs and samples in, findings out.

No threads, no I/O, no wall clock: time comes from the samples, or from the
``now`` handed to ``evaluate``. ``observe`` is O(1); ``evaluate`` re-runs the
stratified test only on a schedule (every interval early in a run, then every
n/32 intervals), so calling it after every Decode line stays cheap.
"""

from __future__ import annotations

from datetime import datetime

from acceptmon.detect.config import DetectConfig
from acceptmon.detect.source import SourceState, SourceStatus
from acceptmon.model import DecodeSample, Finding, Record, Run, Shutdown, SpecSample


def naive_local(ts: datetime) -> datetime:
    """Log timestamps are naive local time; an aware ``now`` is brought to the same footing."""
    return ts.astimezone().replace(tzinfo=None) if ts.tzinfo is not None else ts


class Detector:
    """Per-source acceptance rules over a stream of runs and samples."""

    def __init__(self, config: DetectConfig | None = None) -> None:
        self.config = config or DetectConfig()
        self._sources: dict[str, SourceState] = {}

    def _source(self, name: str) -> SourceState:
        state = self._sources.get(name)
        if state is None:
            state = self._sources[name] = SourceState(name, self.config)
        return state

    def observe_run_start(self, run: Run) -> None:
        """A server (re)start or config segment; ``run.diff`` is relative to ``previous_run_id``."""
        self._source(run.source).start_run(run)

    def observe(self, record: Record) -> None:
        """One parsed record: Decode and vLLM spec lines are intervals; a graceful ``Shutdown``
        explains the silence that follows it (a ``Crash`` does not); other kinds are ignored."""
        if isinstance(record, DecodeSample | SpecSample):
            self._source(record.meta.source).observe(record)
        elif isinstance(record, Shutdown):
            self._source(record.meta.source).stop(record.meta.ts)

    def evaluate(self, now: datetime | None = None, source: str | None = None) -> list[Finding]:
        """Every open finding plus the most recently resolved ones, of every source.

        ``now`` (naive local time like the log, or aware) only drives the stall
        rule; without it, the newest sample time seen is used. ``source`` limits
        the work to the source that just got data (the others keep their state;
        evaluate them all on a timer so that stalls are noticed).
        """
        if now is not None:
            now = naive_local(now)
        else:
            seen = [s.last_ts for s in self._sources.values() if s.last_ts is not None]
            now = max(seen) if seen else None
        out: list[Finding] = []
        for name, state in self._sources.items():
            out += state.evaluate(now) if source is None or name == source else state.book.all()
        return out

    def status(self, source: str) -> SourceStatus | None:
        state = self._sources.get(source)
        return state.status() if state else None
