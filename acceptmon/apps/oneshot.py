"""Read log files to the end through the live pipeline and print the result.

This is both a feature (``acceptmon oneshot``: backfill, CI checks, "what
did last night look like") and the golden-test harness: its ``prom`` output
is exactly what the daemon would serve for the same lines.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from datetime import tzinfo
from operator import attrgetter
from typing import IO, Any

from acceptmon.ingest import Pipeline
from acceptmon.ingest.build import build_pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.ingest.read import opened, read_logs
from acceptmon.metrics.collect import render
from acceptmon.model import KIND, DecodeSample, PrefillSample, Record, Run, SpecSample
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch
from acceptmon.runs.batch_json import batch_jsonl
from acceptmon.runs.draft_config import draft_reader
from acceptmon.sources.files import InputError
from acceptmon.text.printable import printable

#: Exit status when no file of any SOURCE could be read.
UNREADABLE = 1
#: Exit status when a SOURCE names nothing readable (or a flag is invalid).
BAD_SOURCE = 2


def main(
    sources: list[str],
    *,
    fmt: str,
    tz: tzinfo,
    names: list[str] | None = None,
    year: int | None = None,
    draft_config: list[str] | None = None,
    ssh_config: str | None = None,
) -> int:
    """Read every SOURCE to its end and print ``fmt`` (prom, jsonl or findings) to stdout."""
    try:
        with opened(sources, ssh_config, names) as (logs, readers):
            # The draft config.json is part of each run's snapshot, as in the agent.
            pipeline = build_pipeline(tz, draft=draft_reader(draft_config or [], readers), year=year)
            if fmt == "jsonl":
                pipeline.consumers.append(JsonlWriter(sys.stdout, pipeline.tracker))
            findings = FindingLog(pipeline) if fmt == "findings" else None
            problems = read_logs(pipeline, logs)
    except InputError as exc:
        print(f"acceptmon: {printable(str(exc))}", file=sys.stderr)
        return BAD_SOURCE
    if fmt == "prom":
        sys.stdout.write(prom(pipeline))
    elif findings is not None:
        findings.write(sys.stdout)
    for problem in problems:
        print(f"acceptmon: cannot read {printable(problem)}", file=sys.stderr)
    return UNREADABLE if problems and len(problems) == sum(len(lg.files) for lg in logs) else 0


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


#: One encoder for every line (``json.dumps`` with an option builds one per call).
_ENCODE = json.JSONEncoder(allow_nan=False).encode
#: Kinds whose fields are scalars and whose ``ranks`` and ``extra`` have text keys: for them
#: ``_clean`` changes nothing but non-finite floats, which the encoder refuses (then it runs).
_FLAT = (DecodeSample, PrefillSample)
#: Each record type's fields but ``meta``, and what reads them all at C speed.
_FIELDS: dict[type, tuple[tuple[str, ...], Callable[[Record], tuple[Any, ...]]]] = {}


def _fields(record: Record) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The record's field names but ``meta``, and their values."""
    got = _FIELDS.get(type(record))
    if got is None:
        names = tuple(n for n in record.__slots__ if n != "meta")
        read = attrgetter(*names) if len(names) > 1 else lambda r: tuple(getattr(r, n) for n in names)
        got = _FIELDS[type(record)] = (names, read)
    return got[0], got[1](record)


def record_json(record: Record, run_id: str | None = None) -> dict[str, Any]:
    """One JSON object per record: kind, source, run, lineno, ts, ranks, then its fields."""
    cleaned: dict[str, Any] = _clean(_raw(record, run_id))
    return cleaned


def _raw(record: Record, run_id: str | None, iso: dict[int, str] | None = None) -> dict[str, Any]:
    """``record_json`` before non-finite floats become None. ``iso``: times already written,
    by object id (a batch's lines share their prefix's time object; the caller keeps the
    records, so an id is not reused meanwhile)."""
    meta = record.meta
    ts = meta.ts
    text = None
    if ts is not None:
        text = iso.get(id(ts)) if iso is not None else None
        if text is None:
            text = ts.isoformat()
            if iso is not None:
                iso[id(ts)] = text
    out: dict[str, Any] = {
        "kind": KIND[type(record)],
        "source": meta.source,
        "run_id": run_id,
        "lineno": meta.lineno,
        "ts": text,
        "ranks": dict(meta.ranks),
    }
    names, values = _fields(record)
    out.update(zip(names, values, strict=True))
    if "extra" in out:
        out["extra"] = dict(out["extra"])
    if isinstance(record, SpecSample):
        out["per_position"] = list(record.per_position)
    return out


def record_line(record: Record, run_id: str | None = None) -> str:
    """``record_json`` as one line of JSON (no newline)."""
    out = _raw(record, run_id)
    if isinstance(record, _FLAT):
        try:
            return _ENCODE(out)
        except ValueError:  # a non-finite float: null, as _clean makes it
            pass
    return _ENCODE(_clean(out))


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
        self._out.write(record_line(record, self._run_id(record.meta.source)) + "\n")

    def observe_batch(self, batch: DecodeBatch) -> None:
        """The batch's records encoded in one call: its records are flat and every object
        starts with its ``kind`` key, and an unescaped ``"`` never occurs inside a JSON string,
        so the list splits into the objects exactly where ``}, {"kind": `` stands."""
        run_id = self._run_id(batch.source)
        text = batch_jsonl(batch, run_id)
        if text is not None:  # straight from the columns (the usual case)
            self._out.write(text)
            return
        records = batch.records()
        if not records:
            return
        try:
            if not all(isinstance(r, _FLAT) for r in records):
                raise ValueError("not flat")
            iso: dict[int, str] = {}
            text = _ENCODE([_raw(r, run_id, iso) for r in records])
        except ValueError:  # a non-finite float (or a record kind _clean changes): line by line
            self._out.write("".join(record_line(r, run_id) + "\n" for r in records))
            return
        self._out.write(text[1:-1].replace('}, {"kind": ', '}\n{"kind": ') + "\n")


def prom(pipeline: Pipeline) -> str:
    return render(pipeline.store)
