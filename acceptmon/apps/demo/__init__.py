"""``acceptmon demo``: replay the bundled incident and show what acceptmon sees."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from importlib import resources
from typing import Any

from acceptmon.detect.cost import cost_of, cost_words
from acceptmon.detect.runstats import RunStats, RunTable
from acceptmon.ingest import Pipeline
from acceptmon.ingest.build import build_pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.ingest.read import read_logs
from acceptmon.model import Finding
from acceptmon.runs import DraftReader
from acceptmon.sources.files import Log
from acceptmon.text.printable import printable

DEMO_LOG = "demo-eagle3-incident.log"
DRAFT_CONFIGS = "demo-draft-configs.json"
SOURCE = "gpu-node-7:/var/log/sglang/server.log"


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _rows(runs: list[RunStats]) -> list[list[str]]:
    """The columns of ``acceptmon runs``' table, from the same per-run numbers (``RunTable``)."""
    rows = []
    for s in runs:
        median = s.median()
        rows.append(
            [
                s.run.run_id,
                s.run.started.isoformat(sep=" ") if s.run.started else "-",
                str(s.intervals),
                _fmt(median[0] if median else None, ".2f"),
                _fmt(s.accept_rate(), ".0%"),
                s.settings(),
                s.change(),
            ]
        )
    return rows


HEADERS = ["run", "started", "intervals", "accept len (median)", "accept rate", "settings", "config change"]


def _snapshots() -> DraftReader:
    """The draft config.json as it was at each start (the agent reads it live)."""
    text = resources.files("acceptmon.apps.demo.data").joinpath(DRAFT_CONFIGS).read_text()
    queue = list(json.loads(text)["snapshots"])

    def read(_source: str, _path: str, _started: datetime | None) -> dict[str, Any] | None:
        return queue.pop(0) if queue else None

    return read


def replay() -> tuple[Pipeline, RunTable, list[Finding]]:
    """The bundled log read to its end as ``acceptmon runs`` and ``oneshot`` read a log."""
    pipeline = build_pipeline(draft=_snapshots())
    table = RunTable(pipeline.tracker)
    pipeline.consumers.append(table)
    findings = FindingLog(pipeline)
    with resources.as_file(resources.files("acceptmon.apps.demo.data").joinpath(DEMO_LOG)) as path:
        read_logs(pipeline, [Log(SOURCE, (str(path),))])
    findings.detector.evaluate()
    return pipeline, table, list(findings.findings.values())


def _finding_lines(findings: list[Finding]) -> list[str]:
    out = []
    for f in findings:
        state = (
            "FIRING" if f.active else f"resolved {f.resolved_at.isoformat(sep=' ') if f.resolved_at else ''}"
        )
        out.append(f"{f.severity.upper()} {f.rule} [{f.run_id} vs {f.baseline_run_id}] {state}")
        out.append(f"  {f.summary}")
        cost = cost_of(f)
        if cost is not None:
            out.append(f"  {cost_words(cost)} (an estimate: the same step time assumed)")
    return out or ["no findings"]


#: Where a new user goes from here: the same answer for their own log, then the agent.
NEXT_STEP = (
    "\nNow try your own log: `acceptmon runs /path/to/server.log` (a glob or ssh://host/path works "
    "too); to watch it live: `acceptmon run --listen 127.0.0.1:9469 /path/to/server.log`."
)


def main(plain: bool = False) -> int:
    pipeline, runs, findings = replay()
    rows = [[printable(cell) for cell in row] for row in _rows(runs.of(SOURCE))]
    stats = pipeline.store.stats(SOURCE).counters
    title = f"acceptmon demo — {SOURCE}: {int(stats['lines'])} lines, {int(stats['decode_batches'])} Decode intervals"
    if plain or not sys.stdout.isatty():
        print(title)
        print(" | ".join(HEADERS))
        for row in rows:
            print(" | ".join(row))
        print()
        print("\n".join(printable(line) for line in _finding_lines(findings)))
    else:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(title=title)
        for h in HEADERS:
            table.add_column(h)
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))  # Text: log text is never rich markup
        console = Console()
        console.print(table)
        for line in _finding_lines(findings):
            console.print(
                Text(printable(line)), style="bold red" if "FIRING" in line else None, highlight=False
            )
    print(
        "\nThe server_args of all three runs are identical; the change was in the draft model's "
        "config.json, which acceptmon snapshots at each start (bundled here as the agent saw it)."
    )
    print(NEXT_STEP)
    return 0
