"""Read log files to the end through the live pipeline and print the result.

This is both a feature (``acceptmon oneshot``: backfill, CI checks, "what
did last night look like") and the golden-test harness: its ``prom`` output
is exactly what the daemon would serve for the same lines.
"""

from __future__ import annotations

import json
import math
import sys
from typing import IO, Any

from acceptmon.ingest import Pipeline
from acceptmon.metrics.collect import render
from acceptmon.model import KIND, Record, Run, SpecSample
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.lines import read_chunks
from acceptmon.text.printable import printable


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

    def observe_run_start(self, run: Run) -> None:
        """Nothing to write: each record names its run."""

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
