"""Wires the stages: chunks of lines → records and Decode batches → runs → store (→ consumers).

``Pipeline.feed`` is the single entry point for both one-shot mode and the
live agent, so the golden tests of one-shot output also test the daemon's
arithmetic. It holds no threads; the live loop (``ingest.loop``) drives it.

Its output goes to one list of consumers with one interface, in line order:
run starts, kept records and Decode batches. ``feed`` also returns the run
starts of the chunk, for what must wait until the chunk is in (the agent
renders and announces findings then, never in the middle of one).

Both run the bulk path (``ingest.bulk``): stretches of plain Decode lines become
one ``DecodeBatch`` each, which the store and every consumer (the detector,
the jsonl writer) take whole; the few event records (starts, stops, crashes,
vLLM lines) go one by one, in line order with the batches. ``bulk=False``
keeps the per-line records path, the reference the parity tests hold the
bulk path to.

No record can stop it: an exception while parsing, tracking, storing or
sinking one record is contained there, counted as a parse error of kind
``exception`` and logged once per source and kind (source and line number
only: a line may hold secrets), and the chunk goes on, so its position is
committed and a restart does not meet the same line again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from typing import Any, Protocol

from acceptmon.ingest import bulk
from acceptmon.ingest.bulk import Presorted
from acceptmon.metrics.engine import sniff
from acceptmon.metrics.store import Store, accept_len_range
from acceptmon.model import (
    EXCEPTION,
    OUT_OF_RANGE,
    OVERLONG,
    TIME_AHEAD,
    Chunk,
    Crash,
    DecodeSample,
    ParseError,
    PrefillSample,
    Record,
    Run,
    ServerStart,
    Shutdown,
    SpecSample,
)
from acceptmon.parse.line import LineParser
from acceptmon.runs import RunTracker
from acceptmon.runs.ahead import AheadGuard
from acceptmon.runs.batch import DecodeBatch

log = logging.getLogger("acceptmon.pipeline")


class Consumer(Protocol):
    """What takes the pipeline's output, in line order: each run start, each kept record,
    and each Decode batch whole. A consumer that also wants the Prefill records of stretches
    that make no batch says so with a true ``wants_prefill`` attribute."""

    def observe_run_start(self, run: Run) -> None: ...

    def observe(self, record: Record) -> None: ...

    def observe_batch(self, batch: DecodeBatch) -> None: ...


class LogClock(Protocol):
    """What steps with the log's own time as lines reach the store (``acceptmon backfill``'s
    sampler): told each chunk, each record before the store takes it, and each Decode batch,
    which it hands to the store (``take``) in parts cut where its samples fall, so a sample
    at time T holds the lines logged up to T, not the rest of their chunk."""

    def chunk(self, chunk: Chunk) -> None: ...

    def record(self, record: Record) -> None: ...

    def batch(self, batch: DecodeBatch, take: Callable[[DecodeBatch], None]) -> None: ...


YearHint = Callable[[Chunk], "datetime | None"]
#: The zone a source's naive log times are in, by source name.
ZoneOf = Callable[[str], tzinfo]


class Pipeline:
    """``year_hint`` gives vLLM's year-less lines a year from where the latest chunk of
    their source came from (e.g. its file's mtime; it is handed the chunk without its
    lines); ``year`` pins it instead; ``zone`` names each
    source's time zone (default UTC, so tables and goldens do not depend on the host);
    ``ahead`` (the live agent's) keeps times ahead of the host clock from being trusted."""

    def __init__(
        self,
        tracker: RunTracker | None = None,
        store: Store | None = None,
        year_hint: YearHint | None = None,
        zone: ZoneOf | None = None,
        year: int | None = None,
        bulk: bool = True,
        ahead: AheadGuard | None = None,
    ) -> None:
        self.tracker = tracker or RunTracker()
        self.store = store or Store()
        self._parsers: dict[str, LineParser] = {}
        self._latest: dict[str, Chunk] = {}
        self._year_hint = year_hint
        self._zone = zone
        self._year = year
        self.bulk = bulk
        self.ahead = ahead
        #: Given every run start, kept record and Decode batch (the detector, the run table, …).
        self.consumers: list[Consumer] = []
        self._logged: set[tuple[str, str]] = set()
        #: The run starts of the chunk being fed (``feed`` returns them).
        self._starts: list[Run] = []
        #: Backfill's sampler, when one steps with the log's time (None: the store takes batches whole).
        self.log_clock: LogClock | None = None
        #: The chunk being fed as a scout sorted it in another process (``ingest/read.py``
        #: sets it for each chunk of a file read with one), or None.
        self.presorted: Presorted | None = None

    def zone(self, source: str) -> tzinfo:
        """The zone ``source``'s naive log times are in."""
        return self._zone(source) if self._zone else UTC

    def _parser(self, chunk: Chunk) -> LineParser:
        source = chunk.source
        # Where the lines came from is all a year hint reads: their text need not outlive the feed.
        self._latest[source] = Chunk(source, (), chunk.lineno, chunk.end, chunk.path)
        parser = self._parsers.get(source)
        if parser is None:
            parser = self._parsers[source] = LineParser(
                source, self._hint(source), self.zone(source), self._year
            )
        parser.at_chunk(chunk.times, chunk.lineno)
        return parser

    def _hint(self, source: str) -> Callable[[], datetime | None]:
        year_hint, latest = self._year_hint, self._latest
        return lambda: year_hint(latest[source]) if year_hint else None

    def feed(self, chunk: Chunk) -> list[Run]:
        """Process every line of ``chunk``; return the runs it started, in line order (the
        consumers have had each already, in its place among the records)."""
        parser = self._parser(chunk)
        stats = self.store.stats(chunk.source)
        stats.counters["lines"] += len(chunk.lines)
        if not stats.engine:  # known before any of its series is exported
            stats.engine = sniff(chunk.lines)
        for kind, n in chunk.errors:
            self.count_dropped(chunk.source, kind, n)
            if (chunk.source, kind) not in self._logged:
                self._logged.add((chunk.source, kind))
                log.warning(
                    "%s: %d line(s) near line %d dropped (%s); further ones are counted in "
                    'acceptmon_parse_errors_total{kind="%s"} only',
                    chunk.source,
                    n,
                    chunk.lineno,
                    kind,
                    kind,
                )
        if self.log_clock is not None:
            self.log_clock.chunk(chunk)
        starts: list[Run] = []
        self._starts = starts
        try:
            if self.bulk:
                bulk.feed(self, chunk, parser)
            else:
                self._feed_records(chunk, parser)
        except Exception as exc:  # outside any one record's handling: the rest of the chunk
            self.contained(chunk.source, chunk.lineno, exc)
        self._starts = []
        return starts

    def _feed_records(self, chunk: Chunk, parser: LineParser) -> None:
        parse, route = parser.parse, self.route
        lineno = chunk.lineno
        for text in chunk.lines:
            try:
                record = parse(text, lineno)
                if record is not None:
                    route(record)
            except Exception as exc:
                self.contained(chunk.source, lineno, exc)
            lineno += 1

    def count_overlong(self, source: str, n: int) -> None:
        """Lines dropped by the splitter for length are lines and errors."""
        self.count_dropped(source, OVERLONG, n)

    def count_dropped(self, source: str, kind: str, n: int) -> None:
        """Lines a source dropped (too long, not a container record) are lines and errors of ``kind``."""
        stats = self.store.stats(source)
        stats.counters["lines"] += n
        stats.count_error(kind, n)

    def count_error(self, source: str, lineno: int, kind: str, detail: str = "") -> None:
        """Count one unusable record; log the first of each kind per source (never its text)."""
        self.store.stats(source).count_error(kind)
        if (source, kind) not in self._logged:
            self._logged.add((source, kind))
            log.warning(
                "%s line %d: record skipped (%s%s); further ones are counted in "
                'acceptmon_parse_errors_total{kind="%s"} only',
                source,
                lineno,
                kind,
                f": {detail}" if detail else "",
                kind,
            )

    def count_suspect(self, source: str, lineno: int) -> None:
        """A record kept though one printed value does not fit the others (``SpecSample.suspect``):
        counted as ``out_of_range``, the first per source logged (its line number, never its text)."""
        self.store.stats(source).count_error(OUT_OF_RANGE)
        if (source, "suspect") not in self._logged:
            self._logged.add((source, "suspect"))
            log.warning(
                "%s line %d: a value does not fit the line's counts (kept: the counts are exact); "
                'further ones are counted in acceptmon_parse_errors_total{kind="%s"} only',
                source,
                lineno,
                OUT_OF_RANGE,
            )

    def count_ahead(self, source: str, lineno: int, n: int = 1) -> None:
        """Lines whose time is ahead of the host clock: counted, used with their source's last
        trusted time; the first per source is logged (its line number, never its text)."""
        self.store.stats(source).count_error(TIME_AHEAD, n)
        if (source, TIME_AHEAD) not in self._logged:
            self._logged.add((source, TIME_AHEAD))
            log.warning(
                "%s line %d: time more than %.0f s ahead of this host's clock (bad clock or corrupted "
                "timestamp): its values are kept, its time is not trusted; further ones are counted in "
                'acceptmon_parse_errors_total{kind="%s"} only',
                source,
                lineno,
                self.ahead.ahead_s if self.ahead else 0.0,
                TIME_AHEAD,
            )

    def contained(self, source: str, lineno: int, exc: Exception) -> None:
        """An exception while handling one record: counted, logged by type only. A closed
        output pipe (``oneshot | head``) is not the record's fault: it ends the reading."""
        if isinstance(exc, BrokenPipeError):
            raise exc
        self.count_error(source, lineno, EXCEPTION, type(exc).__name__)

    def route(self, record: Record) -> None:
        """Send one record through run tracking, the store and the sinks (each contained)."""
        try:
            if self.ahead is not None:
                record, ahead = self.ahead.record(record)
                if ahead:
                    self.count_ahead(record.meta.source, record.meta.lineno)
            if self.log_clock is not None:
                self.log_clock.record(record)
            kept = self._track(record)
        except Exception as exc:
            self.contained(record.meta.source, record.meta.lineno, exc)
            return
        if kept is not None:
            self.sink(kept)

    @property
    def wants_prefill(self) -> bool:
        """Whether any consumer takes Prefill records (the bulk path then hands them on)."""
        return any(getattr(c, "wants_prefill", False) for c in self.consumers)

    def sink(self, record: Record) -> None:
        """Hand one kept record to every consumer (each contained)."""
        for consumer in self.consumers:
            try:
                consumer.observe(record)
            except Exception as exc:
                self.contained(record.meta.source, record.meta.lineno, exc)

    def batch(self, batch: DecodeBatch) -> None:
        """One stretch of Decode lines: the store, then every consumer, each contained.

        A consumer that raises on a batch has it counted as one exception (at its
        first line); the store's sums are already in, as on the per-line path.
        """
        try:
            if self.ahead is not None:
                ahead = self.ahead.batch(batch)
                if ahead:
                    self.count_ahead(batch.source, batch.lineno, ahead)
            if self.log_clock is not None:
                self.log_clock.batch(batch, self.store.decode_batch)
            else:
                self.store.decode_batch(batch)
        except Exception as exc:
            self.contained(batch.source, batch.lineno, exc)
            return
        for consumer in self.consumers:
            try:
                consumer.observe_batch(batch)
            except Exception as exc:
                self.contained(batch.source, batch.lineno, exc)

    def _track(self, record: Record) -> Record | None:
        """Run tracking and the store; None when the record is an error (counted)."""
        tracker, store = self.tracker, self.store
        if type(record) is DecodeSample:
            record, started = tracker.observe(record)
            if started is not None:
                self._started(started)
            run = tracker.current(record.meta.source)
            assert run is not None and isinstance(record, DecodeSample)
            if record.accept_len is not None and not _in_range(record.accept_len, run):
                self.count_error(record.meta.source, record.meta.lineno, OUT_OF_RANGE)
                return None
            store.decode(record, run.spec)
        elif isinstance(record, ParseError):
            self.count_error(record.meta.source, record.meta.lineno, record.kind)
            return None
        else:
            if type(record) is SpecSample and record.suspect:
                self.count_suspect(record.meta.source, record.meta.lineno)
            self._route_other(record)
        return record

    def _route_other(self, record: Record) -> None:
        source = record.meta.source
        counters = self.store.stats(source).counters
        if isinstance(record, Shutdown | Crash):
            was_ended = self.tracker.ended(source)
            self._observe(record)
            if not was_ended:
                counters["server_crashes" if isinstance(record, Crash) else "server_shutdowns"] += 1
            return
        self._observe(record)
        if isinstance(record, ServerStart):
            self.store.start(record)
        elif isinstance(record, SpecSample):
            self.store.spec(record)
        elif isinstance(record, PrefillSample):
            self.store.prefill(record)

    def _observe(self, record: Record) -> None:
        started = self.tracker.observe(record)[1]
        if started is not None:
            self._started(started)

    def _started(self, run: Run) -> None:
        """A line opened a run: handed on before that line's record, and returned by ``feed``."""
        self.run_started(run)
        self._starts.append(run)

    def run_started(self, run: Run) -> None:
        """A run start: the store, then every consumer (each contained). Called directly for
        a run no line opens (an edited watched file: ``RunTracker.new_segment``)."""
        self.store.stats(run.source).run = run
        for consumer in self.consumers:
            try:
                consumer.observe_run_start(run)
            except Exception as exc:
                self.contained(run.source, run.started_lineno, exc)

    def checkpoint(self) -> dict[str, Any]:
        return {"store": self.store.checkpoint()}

    def restore(self, data: dict[str, Any]) -> None:
        self.store.restore(data.get("store", {}))


def _in_range(accept_len: float, run: Run) -> bool:
    bounds = accept_len_range(run.spec)
    return bounds is None or bounds[0] <= accept_len <= bounds[1]
