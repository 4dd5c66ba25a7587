"""Reading logs into the run table: the agent's pipeline, files fed to their end in order."""

from __future__ import annotations

import logging
from datetime import tzinfo
from typing import Any

from acceptmon.detect.runstats import RunTable
from acceptmon.oneshot import mtime_hint, read_chunks
from acceptmon.pipeline import Pipeline
from acceptmon.redact import redact_text
from acceptmon.runs import DraftReader, RunTracker
from acceptmon.runs.draft_config import FileReader, read_draft_config, read_local
from acceptmon.runsview.inputs import Log, Opener, open_log_file

log = logging.getLogger("acceptmon.runs")


def draft_reader(saved: list[str], readers: dict[str, FileReader]) -> DraftReader:
    """The draft config.json of each run: saved copies (the i-th for the i-th start, the
    last one for every later start), or where server_args says it lives (on the log's own
    host: ``readers`` maps a remote source to its file reader)."""
    if saved:
        starts = [0]

        def copy(_source: str, _path: str) -> dict[str, Any] | None:
            starts[0] += 1
            return read_draft_config(saved[min(starts[0], len(saved)) - 1])

        return copy
    missing: set[str] = set()

    def find(source: str, path: str) -> dict[str, Any] | None:
        found = read_draft_config(path, readers.get(source, read_local))
        if found is None and path not in missing:
            missing.add(path)
            log.warning(
                "draft model %s: no config.json here; changes inside it cannot be seen "
                "(--draft-config points at a saved copy)",
                redact_text(path),
            )
        return found

    return find


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
        return f"{path}: {getattr(exc, 'strerror', None) or exc}"
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
