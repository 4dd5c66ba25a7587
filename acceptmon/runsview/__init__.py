"""``acceptmon runs SOURCE…``: one row per server run and the verdict "is it better now?".

Reads each SOURCE once to its end through the same pipeline as the agent and
``oneshot`` (same parser, run tracking, redaction and draft-config snapshots),
then prints, per log, the runs with their acceptance and the config change
that opened each, and a verdict for the latest run against the run before it
with a different config. The exit status carries the verdict so a deploy
script can gate on it: 0 not worse, 3 worse somewhere, 2 a SOURCE names
nothing readable.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import tzinfo
from typing import Any

from acceptmon.oneshot import mtime_hint, read_chunks
from acceptmon.pipeline import Pipeline
from acceptmon.redact import redact_text
from acceptmon.runs import DraftReader, RunTracker
from acceptmon.runs.draft_config import read_draft_config
from acceptmon.runsview import render
from acceptmon.runsview.collect import RunTable
from acceptmon.runsview.inputs import InputError, Log, expand, open_log_file

log = logging.getLogger("acceptmon.runs")

#: Exit status when the latest run of some log is worse than its baseline.
WORSE = 3
#: Exit status when a SOURCE names nothing readable.
BAD_SOURCE = 2


def _draft_reader(saved: str | None) -> DraftReader:
    """The draft config.json of each run: a saved copy, or where server_args says it lives."""
    if saved is None:
        missing: set[str] = set()

        def find(_source: str, path: str) -> dict[str, Any] | None:
            found = read_draft_config(path)
            if found is None and path not in missing:
                missing.add(path)
                log.warning(
                    "draft model %s: no config.json here; changes inside it cannot be seen "
                    "(--draft-config points at a saved copy)",
                    redact_text(path),
                )
            return found

        return find

    def read(_source: str, _path: str) -> dict[str, Any] | None:
        return read_draft_config(saved)

    return read


def collect(
    logs: list[Log], tz: tzinfo, draft_config: str | None = None
) -> tuple[Pipeline, RunTable, list[str]]:
    """Feed every log (each file of it in order) and return the run table and the problems met."""
    tracker = RunTracker(draft_reader=_draft_reader(draft_config))
    pipeline = Pipeline(tracker, year_hint=mtime_hint, zone=lambda _s: tz)
    table = RunTable(tracker)
    pipeline.sinks.append(table)
    problems = []
    for lg in logs:
        for path in lg.files:
            try:
                with open_log_file(path) as stream:
                    for chunk, overlong in read_chunks(lg.name, stream, "" if path == "-" else path):
                        pipeline.feed(chunk)
                        if overlong:
                            pipeline.count_overlong(lg.name, overlong)
            except (OSError, EOFError) as exc:
                problems.append(f"{path}: {getattr(exc, 'strerror', None) or exc}")
    return pipeline, table, problems


def _notes(pipeline: Pipeline, table: RunTable, source: str) -> list[str]:
    notes = []
    if any(
        s.run.config is not None and s.run.config.draft_config is None and s.run.settings.draft_model_path
        for s in table.of(source)
    ):
        notes.append(
            "the draft model's config.json was not found: changes inside it cannot be seen "
            "(point --draft-config at a saved copy)"
        )
    errors = int(pipeline.store.stats(source).counters["parse_errors"])
    if errors:
        notes.append(f"{errors} lines could not be used (see acceptmon oneshot for the counts by kind)")
    return notes


def main(sources: list[str], *, fmt: str, tz: tzinfo, draft_config: str | None = None) -> int:
    logs: list[Log] = []
    for source in sources:
        try:
            logs += expand(source)
        except InputError as exc:
            print(f"acceptmon: {exc}", file=sys.stderr)
            return BAD_SOURCE
    pipeline, table, problems = collect(logs, tz, draft_config)
    for problem in problems:
        print(f"acceptmon: cannot read {problem}", file=sys.stderr)
    names = [lg.name for lg in logs]
    verdicts = {name: table.verdict(name) for name in names}
    if fmt == "json":
        doc = [
            {
                "source": n,
                "runs": [render.run_json(s) for s in table.of(n)],
                "verdict": render.verdict_json(verdicts[n]),
            }
            for n in names
        ]
        print(
            json.dumps(doc[0] if len(doc) == 1 else {"sources": doc}, indent=2, allow_nan=False, default=str)
        )
    else:
        blocks = [render.plain(n, table.of(n), verdicts[n], _notes(pipeline, table, n)) for n in names]
        print("\n\n".join(blocks))
    worse = any(v is not None and (v.state == "worse") for v in verdicts.values())
    return WORSE if worse else 0
