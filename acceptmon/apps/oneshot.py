"""Read log files to the end through the live pipeline and print the result.

This is both a feature (``acceptmon oneshot``: backfill, CI checks, "what
did last night look like") and the golden-test harness: its ``prom`` output
is exactly what the daemon would serve for the same lines: the store's families and the
agent's own (``ingest/families.py``), findings included, as at the end of the log.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import tzinfo

from acceptmon.ingest import Pipeline
from acceptmon.ingest.build import build_pipeline
from acceptmon.ingest.families import Served, served
from acceptmon.ingest.findings import FindingLog
from acceptmon.ingest.jsonl import JsonlWriter
from acceptmon.ingest.read import opened, read_logs
from acceptmon.metrics.collect import render
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
            findings = FindingLog(pipeline) if fmt in ("findings", "prom") else None
            problems = read_logs(pipeline, logs)
    except InputError as exc:
        print(f"acceptmon: {printable(str(exc))}", file=sys.stderr)
        return BAD_SOURCE
    if fmt == "prom" and findings is not None:
        sys.stdout.write(prom(pipeline, findings))
    elif findings is not None:
        findings.write(sys.stdout)
    for problem in problems:
        print(f"acceptmon: cannot read {printable(problem)}", file=sys.stderr)
    return UNREADABLE if problems and len(problems) == sum(len(lg.files) for lg in logs) else 0


def prom(pipeline: Pipeline, findings: FindingLog) -> str:
    """The agent's ``/metrics`` families at the end of the log, its findings with their runs'
    config hashes as the agent labels them. What only a running agent has (its sources' file
    health, a settings reload, HTTP, its build, the host it runs on) is left without samples or
    zero, so the output depends on the log alone (a file, its .gz or standard input alike)."""
    findings.detector.evaluate()
    tracker = pipeline.tracker
    hashes = {
        (source, run.run_id): run.config.hash
        for source in tracker.sources()
        for run in tracker.runs(source)
        if run.config is not None
    }
    found = [
        replace(f, config_hash=hashes[(f.source, f.run_id)]) if hashes.get((f.source, f.run_id)) else f
        for f in findings.findings.values()
    ]
    got = Served(
        health={},
        findings=found,
        raised=findings.raised,
        draft_missing={},
        settings_unknown={s: tracker.settings_unknown(s) for s in tracker.sources()},
        http=({}, 0, 0),
        build=False,
        lost=findings.cost.lost,
    )
    return render(pipeline.store, [lambda: served(pipeline.store, None, got)])
