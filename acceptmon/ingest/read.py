"""Reading logs into the run table: the agent's pipeline, files fed to their end in order."""

from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo

from acceptmon.detect.runstats import RunTable
from acceptmon.ingest import Pipeline
from acceptmon.model import Chunk
from acceptmon.runs import RunTracker
from acceptmon.runs.draft_config import draft_reader
from acceptmon.sources.base import FileReader
from acceptmon.sources.files import Log, Opener, open_log_file
from acceptmon.sources.lines import read_chunks
from acceptmon.text.printable import printable


def mtime_hint(chunk: Chunk) -> datetime | None:
    """vLLM timestamps have no year; the file's modification time supplies it."""
    try:
        return datetime.fromtimestamp(os.stat(chunk.path).st_mtime, UTC) if chunk.path else None
    except OSError:
        return None


def new_pipeline(
    tz: tzinfo,
    draft_config: list[str] | None = None,
    readers: dict[str, FileReader] | None = None,
    *,
    run_table: bool = True,
) -> tuple[Pipeline, RunTable]:
    """The agent's pipeline with a run table as its consumer (unless ``run_table`` is False:
    then the table is returned empty and costs nothing)."""
    tracker = RunTracker(draft_reader=draft_reader(draft_config or [], readers or {}))
    pipeline = Pipeline(tracker, year_hint=mtime_hint, zone=lambda _s: tz)
    table = RunTable(tracker)
    if run_table:
        pipeline.consumers.append(table)
    return pipeline, table


def feed_file(pipeline: Pipeline, name: str, path: str, opener: Opener | None = None) -> str | None:
    """Feed one file to its end as source ``name``; the problem met, if any."""
    try:
        with (opener or open_log_file)(path) as stream:
            for chunk, overlong in read_chunks(name, stream, "" if path == "-" else path):
                pipeline.feed(chunk)
                if overlong:
                    pipeline.count_overlong(name, overlong)
    except (OSError, EOFError) as exc:
        return f"{printable(path)}: {getattr(exc, 'strerror', None) or exc}"
    return None


def collect(
    logs: list[Log],
    tz: tzinfo,
    draft_config: list[str] | None = None,
    readers: dict[str, FileReader] | None = None,
) -> tuple[Pipeline, RunTable, list[str]]:
    """Feed every log (each file of it in order) and return the run table and the problems met."""
    pipeline, table = new_pipeline(tz, draft_config, readers)
    problems = [p for lg in logs for path in lg.files if (p := feed_file(pipeline, lg.name, path, lg.opener))]
    return pipeline, table, problems
