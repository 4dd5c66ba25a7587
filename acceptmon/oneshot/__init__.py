"""Read log files to the end through the live pipeline and print the result.

This is both a feature (``acceptmon oneshot``: backfill, CI checks, "what
did last night look like") and the golden-test harness: its ``prom`` output
is exactly what the daemon would serve for the same lines.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import IO, Any

from acceptmon.metrics.collect import render
from acceptmon.model import KIND, Chunk, DecodeSample, Finding, Record, SpecSample
from acceptmon.pipeline import Pipeline
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.lines import LineSplitter
from acceptmon.terminal import printable

READ_SIZE = 1 << 20


def read_chunks(source: str, stream: IO[bytes], path: str = "") -> Iterator[tuple[Chunk, int]]:
    """Yield (chunk, overlong lines dropped) until end of stream; a final unterminated line counts."""
    splitter = LineSplitter()
    lineno = 1
    dropped = 0
    while True:
        data = stream.read(READ_SIZE)
        if not data:
            break
        lines, _ = splitter.feed(data)
        if lines:
            yield Chunk(source, tuple(lines), lineno, None, path), splitter.overlong - dropped
            dropped = splitter.overlong
            lineno += len(lines)
    if splitter.pending:
        lines, _ = splitter.feed(b"\n")
        if lines or splitter.overlong > dropped:
            yield Chunk(source, tuple(lines), lineno, None, path), splitter.overlong - dropped


def mtime_hint(chunk: Chunk) -> datetime | None:
    """vLLM timestamps have no year; the file's modification time supplies it."""
    try:
        return datetime.fromtimestamp(os.stat(chunk.path).st_mtime, UTC) if chunk.path else None
    except OSError:
        return None


def run_files(pipeline: Pipeline, paths: list[str], names: list[str] | None = None) -> list[str]:
    """Feed every file; return the problems met (unreadable files) without stopping."""
    problems: list[str] = []
    for i, path in enumerate(paths):
        name = printable(names[i] if names and i < len(names) else path)
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            problems.append(f"{printable(path)}: {exc.strerror or exc}")
            continue
        with stream:
            for chunk, overlong in read_chunks(name, stream, "" if path == "-" else path):
                pipeline.feed(chunk)
                if overlong:
                    pipeline.count_overlong(name, overlong)
    return problems


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def record_json(record: Record, run_id: str | None = None) -> dict[str, Any]:
    """One JSON object per record: kind, source, run, lineno, ts, ranks, then its fields."""
    meta = record.meta
    out: dict[str, Any] = {
        "kind": KIND[type(record)],
        "source": meta.source,
        "run_id": run_id,
        "lineno": meta.lineno,
        "ts": meta.ts.isoformat() if meta.ts else None,
        "ranks": dict(meta.ranks),
    }
    for name in record.__slots__:
        if name == "meta":
            continue
        value = getattr(record, name)
        out[name] = dict(value) if name == "extra" else value
    if isinstance(record, SpecSample):
        out["per_position"] = list(record.per_position)
    return _clean(out)  # type: ignore[no-any-return]


class JsonlWriter:
    """One JSON object per record, in line order; a Decode batch is written as its records."""

    #: The bulk path hands Prefill records on only to consumers that ask.
    wants_prefill = True

    def __init__(self, out: IO[str], tracker: RunTracker | None = None) -> None:
        """With ``tracker``, each record names the run it belongs to (``run_id``)."""
        self._out = out
        self._tracker = tracker

    def _run_id(self, source: str) -> str | None:
        run = self._tracker.current(source) if self._tracker is not None else None
        return run.run_id if run is not None else None

    def observe(self, record: Record) -> None:
        line = json.dumps(record_json(record, self._run_id(record.meta.source)), allow_nan=False)
        self._out.write(line + "\n")

    def observe_batch(self, batch: DecodeBatch) -> None:
        run_id = self._run_id(batch.source)
        self._out.write(
            "".join(json.dumps(record_json(r, run_id), allow_nan=False) + "\n" for r in batch.records())
        )


def prom(pipeline: Pipeline) -> str:
    return render(pipeline.store)


class FindingLog:
    """Runs the detector after every interval, as the agent would live, keeping each
    finding's latest state (so a drop that a later revert resolved is still reported)."""

    def __init__(self, pipeline: Pipeline) -> None:
        from acceptmon.detect import Detector

        self.detector = Detector()
        self._store = pipeline.store
        self.findings: dict[str, Finding] = {}
        pipeline.tracker.on_run_start.append(self.detector.observe_run_start)
        pipeline.consumers.append(self)

    def observe(self, record: Record) -> None:
        self.detector.observe(record)
        if isinstance(record, DecodeSample | SpecSample):
            self._evaluate()

    def observe_batch(self, batch: DecodeBatch) -> None:
        self.detector.observe_batch(batch, self._evaluate)

    def _evaluate(self) -> None:
        for finding in self.detector.evaluate():
            self.findings[finding.key] = self._engine(finding)

    def _engine(self, finding: Finding) -> Finding:
        """The finding with its source's inference server (the detector does not know it)."""
        stats = self._store.sources.get(finding.source)
        return replace(finding, engine=stats.engine) if stats is not None and stats.engine else finding

    def write(self, out: IO[str]) -> None:
        from acceptmon.notify.payload import finding_json

        for finding in self.detector.evaluate():
            self.findings[finding.key] = self._engine(finding)
        for finding in self.findings.values():
            out.write(json.dumps(finding_json(finding), allow_nan=False, default=str) + "\n")
