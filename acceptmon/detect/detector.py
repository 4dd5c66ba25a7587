"""The incremental detector the pipeline calls: runs and samples in, findings out.

No threads, no I/O, no wall clock: time comes from the samples, or from the
``now`` handed to ``evaluate``. ``observe`` is O(1); ``evaluate`` re-runs the
stratified test only on a schedule (every interval early in a run, then every
n/32 intervals), so calling it after every Decode line stays cheap.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from acceptmon.detect import persist
from acceptmon.detect.settings import DetectSettings
from acceptmon.detect.source import SourceState, SourceStatus
from acceptmon.model import DecodeSample, Finding, Record, Run, Shutdown, SpecSample
from acceptmon.runs.batch import DecodeBatch

log = logging.getLogger("acceptmon.detect")


class Detector:
    """Per-source acceptance rules over a stream of runs and samples."""

    def __init__(
        self,
        config: DetectSettings | None = None,
        *,
        judge_ending_runs: bool = False,
        on_change: Callable[[Finding], object] | None = None,
    ) -> None:
        """``judge_ending_runs``: evaluate a source just before its next run starts, and keep what
        that found for ``judged``. The agent evaluates on a timer and after each chunk, so a
        backlog read in one go would otherwise start the next run before the ending one was
        compared with its baseline (and announce nothing of a drop a later run resolved);
        one-shot evaluates after every interval and needs none. ``on_change`` is told of every
        finding as it fires or resolves (``findings.Book``)."""
        self.config = config or DetectSettings()
        self._on_change = on_change
        self._sources: dict[str, SourceState] = {}
        self._judge = judge_ending_runs
        self._judged: dict[tuple[str, str], list[Finding]] = {}

    def _source(self, name: str) -> SourceState:
        state = self._sources.get(name)
        if state is None:
            state = self._sources[name] = SourceState(name, self.config, self._on_change)
        return state

    def observe_run_start(self, run: Run) -> None:
        """A server (re)start or config segment; ``run.diff`` is relative to ``previous_run_id``."""
        if self._judge:
            self._judged[(run.source, run.run_id)] = self.evaluate(source=run.source)
        self._source(run.source).start_run(run)

    def judged(self, run: Run) -> list[Finding] | None:
        """Every finding as it stood just before ``run`` started (``judge_ending_runs``), once."""
        return self._judged.pop((run.source, run.run_id), None)

    def observe(self, record: Record) -> None:
        """One parsed record: Decode and vLLM spec lines are intervals; a graceful ``Shutdown``
        explains the silence that follows it (a ``Crash`` does not); other kinds are ignored."""
        if isinstance(record, DecodeSample | SpecSample):
            self._source(record.meta.source).observe(record)
        elif isinstance(record, Shutdown):
            self._source(record.meta.source).stop(record.meta.ts)

    def observe_batch(self, batch: DecodeBatch, evaluate: bool = False) -> None:
        """A stretch of Decode lines, as ``observe`` would take their records one by one; with
        ``evaluate``, as if the source were evaluated after each (what one-shot does, as live)."""
        self._source(batch.source).observe_batch(batch, evaluate)

    def evaluate(self, now: datetime | None = None, source: str | None = None) -> list[Finding]:
        """Every open finding plus the most recently resolved ones, of every source.

        ``now`` (aware, like the parsed log times) only drives the stall
        rule; without it (one-shot, backfill) each source is judged by its own
        clock, its newest sample time, so logs read together never make each
        other look silent. ``source`` limits the work to the source that just
        got data (the others keep their state; evaluate them all on a timer so
        that stalls are noticed).
        """
        out: list[Finding] = []
        for name, state in self._sources.items():
            if source is None or name == source:
                out += state.evaluate(now if now is not None else state.last_ts)
            else:
                out += state.book.all()
        return out

    def last_time(self, source: str) -> datetime | None:
        """Time of the newest sample of ``source`` (where a stall's silence began)."""
        state = self._sources.get(source)
        return state.last_ts if state else None

    def status(self, source: str) -> SourceStatus | None:
        state = self._sources.get(source)
        return state.status() if state else None

    def findings(self) -> list[Finding]:
        """What the last evaluations left, without evaluating (e.g. just after a restore)."""
        return [f for state in self._sources.values() for f in state.book.all()]

    def checkpoint(self) -> dict[str, Any]:
        """Every source's state as JSON-able data (a few tens of KB per source at most)."""
        return persist.dump(self._sources)

    def restore(self, data: Mapping[str, Any], current: Iterable[Run] = (), *, strict: bool = False) -> None:
        """Replace the state with a checkpoint's, then follow ``current`` (the run tracker's
        restored current runs) wherever the checkpoint did not already.

        State that cannot be used is logged once and the detector starts afresh: a lost
        baseline costs one missed comparison, a crash loop costs every one. ``strict``
        (the agent's checkpoint, taken whole or not at all): corrupt state raises instead;
        state of another configuration still starts the detector afresh.
        """
        self._sources = {}
        if data:
            try:
                self._sources = persist.load(data, self.config)
            except persist.StateError as exc:
                log.warning("%s; starting the detector afresh", exc)
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                if strict:
                    raise
                # The type only: the state holds config values, which may be secrets.
                log.warning(
                    "detector state unreadable (%s); starting the detector afresh", type(exc).__name__
                )
        for restored in self._sources.values():
            restored.book.on_change = self._on_change
            restored.settle_settings()
        for run in current:
            state = self._sources.get(run.source)
            if state is None or state.current.run.run_id != run.run_id:
                self._source(run.source).start_run(run)
