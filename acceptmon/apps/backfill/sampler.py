"""Samples of the store at log times, each holding exactly what a live agent served then.

A live agent reading a log at time T has read the lines logged up to T: its
counters count them, its gauges are the last one's. The bulk path stores a whole
stretch of Decode lines at once, so a sample taken after it would carry the
stretch's end (the future) at an earlier time. The sampler is the pipeline's
``LogClock`` instead: it sees each line's time before the store takes the line,
and when the time moves past the latest trusted one (``c``) a step after the
last sample, it samples at ``c`` first: the store has every line up to the first
one logged after ``c``. A batch is stored in parts cut at those lines.

Two counters are added ahead of the lines they count (the chunk's lines when it
is fed, a stretch's Prefill lines with its batch); a sample subtracts those
at or after its cut. A line that makes no record (noise, HTTP access lines)
counts with the record line before it: its time is not read.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import replace

from acceptmon.apps.backfill.openmetrics import Recorder
from acceptmon.apps.backfill.window import TimeWindow
from acceptmon.metrics.collect import store_metrics
from acceptmon.metrics.store import Store
from acceptmon.model import TIME_AHEAD, Chunk, Record
from acceptmon.parse.prefix import epoch
from acceptmon.runs.batch import DecodeBatch


class Sampler:
    """Per source, a sample at the latest trusted log time each time that time has moved
    ``step`` seconds on. Only trusted times (``window.TimeWindow``: never after ``now``,
    never an isolated outlier) become sample times; a refused line is in the next sample."""

    def __init__(
        self, store: Store, step: float, labels: dict[str, str] | None = None, now: float | None = None
    ) -> None:
        self._store, self._step = store, step
        self.recorder = Recorder(labels)
        self.window = TimeWindow(time.time() if now is None else now)
        #: Per source: the latest trusted time, and the time of its last sample.
        self._latest: dict[str, float] = {}
        self._last: dict[str, float] = {}
        self._chunk: Chunk | None = None
        self.oldest: float | None = None

    def chunk(self, chunk: Chunk) -> None:
        self._chunk = chunk

    def record(self, record: Record) -> None:
        t = epoch(record.meta.ts)
        if t is not None and t != self._latest.get(record.meta.source):
            self._step_to(record.meta.source, t, record.meta.lineno, 0)

    def batch(self, batch: DecodeBatch, take: Callable[[DecodeBatch], None]) -> None:
        """Store ``batch`` through ``take`` in parts, sampling between them where a step falls."""
        source, n = batch.source, batch.n
        latest = self._latest.get(source)
        prefills, prefill_epochs = batch.prefill_times()
        # Each timed line in order: (offset in the stretch, Decode lines before it, epoch).
        timeline = list(zip(batch.line_offsets(), range(n), batch.epochs, strict=True))
        if prefills:
            timeline += [
                (k, bisect_left(timeline, (k,)), e) for k, e in zip(prefills, prefill_epochs, strict=True)
            ]
            timeline.sort()
        offsets: list[int] | None = None
        start = 0
        for offset, before, t in timeline:
            if t is None or t == latest:
                continue
            if self._due(source, t):
                if before > start:
                    offsets = offsets or batch.line_offsets()
                    take(batch.part(start, before, offsets))
                    start = before
                after = len(prefills) - bisect_left(prefills, offset)
                self._sample(source, batch.lineno + offset, after)
            self._admit(source, t)
            latest = self._latest.get(source)
        if start == 0:
            take(batch)
        elif start < n:
            take(batch.part(start, n, offsets or batch.line_offsets()))

    def _due(self, source: str, t: float) -> bool:
        """Whether a line at ``t`` ends a step: it is after the latest trusted time, and
        that time is a step after the last sample."""
        latest = self._latest.get(source)
        return (
            latest is not None and t > latest and latest - self._last.get(source, float("-inf")) >= self._step
        )

    def _step_to(self, source: str, t: float, lineno: int, prefills_after: int) -> None:
        if self._due(source, t):
            self._sample(source, lineno, prefills_after)
        self._admit(source, t)

    def _admit(self, source: str, t: float) -> None:
        for trusted in self.window.admit(source, t):
            self._trust(source, trusted)

    def _trust(self, source: str, t: float) -> None:
        self._latest[source] = max(t, self._latest.get(source, t))
        self.oldest = t if self.oldest is None else min(self.oldest, t)

    def _sample(self, source: str, lineno: int | None, prefills_after: int) -> None:
        """The store of ``source`` at its latest trusted time, without what it holds of the
        lines from ``lineno`` on (None: it holds nothing ahead)."""
        t = self._latest[source]
        self._last[source] = t
        stats = self._store.sources[source]
        chunk = self._chunk
        lines_after = 0
        if lineno is not None and chunk is not None and chunk.source == source:
            lines_after = min(len(chunk.lines), max(0, chunk.lineno + len(chunk.lines) - lineno))
        if lines_after or prefills_after:
            counters = dict(stats.counters)
            counters["lines"] -= lines_after
            counters["prefill_batches"] -= prefills_after
            stats = replace(stats, counters=counters)
        view = Store()
        view.sources[source] = stats
        view.hosts = self._store.hosts
        self.recorder.snapshot(store_metrics(view), t, source)

    def refused(self) -> str | None:
        """The stderr note on line times not used, or None."""
        ahead = sum(s.error_kinds.get(TIME_AHEAD, 0.0) for s in self._store.sources.values())
        return self.window.refused(int(ahead))

    def finish(self) -> None:
        """The state at each source's last line (the rest of its last step)."""
        for source, times in self.window.finish().items():
            for t in times:
                self._trust(source, t)
        for source, t in self._latest.items():
            if t > self._last.get(source, float("-inf")):
                self._sample(source, None, 0)
