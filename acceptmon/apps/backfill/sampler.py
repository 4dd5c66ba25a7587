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
at or after its cut. A line that makes no record (noise, HTTP access lines) is
placed by the full date and time it starts with, if any, else it was logged with
the line before it; only the lines just before a cut are looked at.
"""

from __future__ import annotations

import math
import re
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, tzinfo
from itertools import chain, compress
from operator import ne
from typing import TypeGuard

from acceptmon.apps.backfill.openmetrics import Recorder
from acceptmon.apps.backfill.window import TimeWindow
from acceptmon.log_time import LocalTime
from acceptmon.metrics.collect import STORE_CATALOGUE, MetricDef, SourceSample, source_samples
from acceptmon.metrics.store import Store
from acceptmon.model import TIME_AHEAD, Chunk, Record
from acceptmon.parse.prefix import epoch, parse_ts
from acceptmon.parse.sglang import DECODE, PREFILL
from acceptmon.runs.batch import DecodeBatch

#: The full date and time a line starts with (SGLang's ``[…``, Python logging's, ISO 8601).
_LEADING = re.compile(r"\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,6})?)")


def _prefill(line: str) -> bool:
    """A Prefill line, as the bulk path counts them."""
    return DECODE not in line and PREFILL in line


def _all_timed(epochs: list[float | None]) -> TypeGuard[list[float]]:
    return bool(epochs) and None not in epochs


class Sampler:
    """Per source, a sample at the latest trusted log time each time that time has moved
    ``step`` seconds on. Only trusted times (``window.TimeWindow``: never after ``now``,
    never an isolated outlier) become sample times; a refused line is in the next sample."""

    def __init__(
        self,
        store: Store,
        step: float,
        labels: dict[str, str] | None = None,
        now: float | None = None,
        zone: tzinfo = UTC,
    ) -> None:
        """``zone``: the one naive log times of lines that make no record are read in."""
        self._store, self._step = store, step
        self._local = LocalTime(zone)
        self.recorder = Recorder(labels)
        self.window = TimeWindow(time.time() if now is None else now)
        #: Per source: the latest trusted time, and the time of its last sample.
        self._latest: dict[str, float] = {}
        self._last: dict[str, float] = {}
        #: Per source: its chunks since the last line whose time it was told, each with the
        #: number of lines before it (lines are counted from 0 across the source's files).
        self._recent: dict[str, list[tuple[int, Chunk]]] = {}
        #: Per source: the index of the last line whose time it was told.
        self._told: dict[str, int] = {}
        self.oldest: float | None = None
        #: Told each part of a Decode batch after the store took it (the findings' detector).
        self.parts: Callable[[DecodeBatch], None] | None = None
        #: More families of a source at a sample (its findings), or None.
        self.extra: Callable[[str], Iterable[tuple[MetricDef, Iterable[SourceSample]]]] | None = None

    def chunk(self, chunk: Chunk) -> None:
        """A chunk whose lines the store has just counted."""
        source = chunk.source
        before = int(self._store.stats(source).counters["lines"]) - len(chunk.lines)
        told = self._told.get(source, -1)
        recent = [(b, c) for b, c in self._recent.get(source, []) if b + len(c.lines) > told + 1]
        recent.append((before, chunk))
        self._recent[source] = recent

    def _index(self, source: str, lineno: int) -> int:
        """A line of the current chunk, by its number, as an index across the source."""
        recent = self._recent.get(source)
        if not recent:  # a record from no chunk: nothing of it to take back
            return lineno
        before, chunk = recent[-1]
        return before + min(len(chunk.lines), max(0, lineno - chunk.lineno))

    def record(self, record: Record) -> None:
        t = epoch(record.meta.ts)
        if t is None:
            return
        source = record.meta.source
        at = self._index(source, record.meta.lineno)
        if t != self._latest.get(source):
            if self._due(source, t):
                self._sample(source, at)
            self._admit(source, t)
        self._told[source] = at

    def batch(self, batch: DecodeBatch, take: Callable[[DecodeBatch], None]) -> None:
        """Store ``batch`` through ``take`` in parts, sampling between them where a step falls
        (``_cuts``); the Prefill and other lines between Decode lines are placed when a sample
        is cut (``_noise_after``)."""
        source, n = batch.source, batch.n
        parts = self.parts
        if parts is not None:
            store = take

            def take(part: DecodeBatch) -> None:
                store(part)
                parts(part)

        offsets: list[int] | None = None
        prefills: list[int] | None = None
        first = self._index(source, batch.lineno)
        start = 0
        for i in self._cuts(source, batch.epochs):
            offsets = offsets or batch.offsets()
            if i > start:
                take(batch.part(start, i, offsets))
                start = i
            if i > 0:
                self._told[source] = first + offsets[i - 1]
            prefills = prefills if prefills is not None else batch.prefill_offsets(offsets)
            self._sample(source, first + offsets[i], len(prefills) - bisect_left(prefills, offsets[i]))
        if n:
            self._told[source] = first + (offsets or batch.offsets())[-1]
        if start == 0:
            take(batch)
        elif start < n:
            take(batch.part(start, n, offsets or batch.offsets()))

    def _cuts(self, source: str, epochs: list[float | None]) -> Iterator[int]:
        """The Decode lines of a batch (by their times ``epochs``) before which a sample falls,
        each yielded when the latest trusted time is the sample's: only the lines whose time
        differs from the line before are looked at (found at C speed), and the lines after
        one whose time was not trusted."""
        latest = self._latest.get(source)
        if latest is not None and _all_timed(epochs) and self.window.steady(source, latest, epochs):
            yield from self._steady_cuts(source, latest, epochs)
            return
        n = len(epochs)
        changes = compress(range(n), map(ne, epochs, [latest, *epochs[:-1]]))
        plain, last, step = self.window.plain, self._last, self._step
        for i in changes:
            t = epochs[i]
            if t is None:
                continue
            if latest is not None and t > latest and latest - last.get(source, -math.inf) >= step:
                yield i
            if latest is not None and t > latest and plain(source, t):
                latest = self._latest[source] = t  # the usual case: a second on, trusted at once
                continue
            self._admit(source, t)
            j = i + 1
            while self._latest.get(source) != t and j < n and epochs[j] == t:
                self._admit(source, t)  # not trusted (yet): the lines of the same time count too
                j += 1
            latest = self._latest.get(source)

    def _steady_cuts(self, source: str, latest: float, epochs: list[float]) -> Iterator[int]:
        """``_cuts`` of a batch whose times are all trusted as they come (``TimeWindow.steady``):
        in order, so each cut is found by bisection, not line by line. A sample falls before
        the first line later than a trusted time a step after the last sample."""
        n, step, at = len(epochs), self._step, 0
        last = self._last.get(source, -math.inf)
        while True:
            if latest < last + step:
                at = bisect_left(epochs, last + step, at)
                if at == n:
                    break
                latest = epochs[at]
            cut = bisect_right(epochs, latest, at)
            if cut == n:
                break
            self._latest[source] = last = latest
            yield cut
            at, latest = cut, epochs[cut]
        self._latest[source] = epochs[-1]

    def _due(self, source: str, t: float) -> bool:
        """Whether a line at ``t`` ends a step: it is after the latest trusted time, and
        that time is a step after the last sample."""
        latest = self._latest.get(source)
        return (
            latest is not None and t > latest and latest - self._last.get(source, float("-inf")) >= self._step
        )

    def _admit(self, source: str, t: float) -> None:
        for trusted in self.window.admit(source, t):
            self._trust(source, trusted)

    def _trust(self, source: str, t: float) -> None:
        self._latest[source] = max(t, self._latest.get(source, t))
        self.oldest = t if self.oldest is None else min(self.oldest, t)

    def _sample(self, source: str, at: int | None, prefills_after: int = 0) -> None:
        """The store of ``source`` at its latest trusted time, without what it holds of the
        lines from index ``at`` on (None: it holds nothing ahead; ``prefills_after``: Prefill
        lines of the stretch being stored, from ``at`` on, that it has counted already)."""
        t = self._latest[source]
        self._last[source] = t
        stats = self._store.sources[source]
        counters = stats.counters
        held = counters["lines"], counters["prefill_batches"]
        if at is not None and self._recent.get(source):
            before, chunk = self._recent[source][-1]
            cut, prefills = self._noise_after(source, at, t)
            # The store's own counters, without the lines ahead, for the snapshot's while only.
            counters["lines"] -= before + len(chunk.lines) - cut
            counters["prefill_batches"] -= prefills_after + prefills
        host = self._store.hosts.get(source, "")
        families: Iterable[tuple[MetricDef, Iterable[SourceSample]]] = (
            (m, source_samples(m, source, stats, host)) for m in STORE_CATALOGUE
        )
        if self.extra is not None:  # one snapshot of both: each costs as much again as its samples
            families = chain(families, self.extra(source))
        try:
            self.recorder.snapshot(families, t)
        finally:
            counters["lines"], counters["prefill_batches"] = held

    def _noise_after(self, source: str, at: int, t: float) -> tuple[int, int]:
        """Where the lines logged after ``t`` begin, given that line ``at`` is the first told
        of, and how many Prefill lines the bulk path counted from there to ``at`` (a stretch of
        Prefill lines alone tells no time). Between the last line told of and ``at``, lines
        that start with a time after ``t`` are after it, and so are lines with no time that
        follow them."""
        cut, prefills, pending = at, 0, 0
        for index, line in self._back(source, at):
            m = _LEADING.match(line)
            wall = parse_ts(m.group(1)) if m is not None else None
            prefill = _prefill(line)
            if wall is None:
                pending += prefill
                continue
            if self._local.aware(wall).timestamp() <= t:
                break
            cut, prefills, pending = index, prefills + pending + prefill, 0
        return cut, prefills

    def _back(self, source: str, at: int) -> Iterator[tuple[int, str]]:
        """The lines before index ``at`` back to the last line told of, last first."""
        told = self._told.get(source, -1)
        for before, chunk in reversed(self._recent[source]):
            lines = chunk.lines
            low = max(told + 1, before)
            for index in range(min(at, before + len(lines)) - 1, low - 1, -1):
                yield index, lines[index - before]
            if low > before:
                return

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
                self._sample(source, None)
