"""``acceptmon demo``: replay the bundled incident and show what acceptmon sees."""

from __future__ import annotations

import json
import sys
from importlib import resources
from typing import Any

from acceptmon.ingest import PerRecord, Pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.model import Finding
from acceptmon.runs import DraftReader, RunTracker
from acceptmon.runs.summary import RunSummaries, RunSummary
from acceptmon.sources.lines import read_chunks
from acceptmon.text.printable import printable

DEMO_LOG = "demo-eagle3-incident.log"
DRAFT_CONFIGS = "demo-draft-configs.json"
SOURCE = "gpu-node-7:/var/log/sglang/server.log"


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _rows(summaries: list[RunSummary]) -> list[list[str]]:
    return [
        [
            s.run_id,
            s.started.isoformat(sep=" ") if s.started else "-",
            str(s.intervals),
            _fmt(s.median_len(), ".2f"),
            _fmt(s.mean_rate(), ".0%"),
            s.settings,
            s.change,
        ]
        for s in summaries
    ]


HEADERS = ["run", "started", "intervals", "accept len (median)", "accept rate", "settings", "config change"]


def _snapshots() -> DraftReader:
    """The draft config.json as it was at each start (the agent reads it live)."""
    text = resources.files("acceptmon.apps.demo.data").joinpath(DRAFT_CONFIGS).read_text()
    queue = list(json.loads(text)["snapshots"])

    def read(_source: str, _path: str) -> dict[str, Any] | None:
        return queue.pop(0) if queue else None

    return read


def replay() -> tuple[Pipeline, list[RunSummary], list[Finding]]:
    pipeline = Pipeline(RunTracker(draft_reader=_snapshots()))
    summaries = RunSummaries(pipeline.tracker)
    pipeline.consumers.append(PerRecord(summaries))
    findings = FindingLog(pipeline)
    with resources.files("acceptmon.apps.demo.data").joinpath(DEMO_LOG).open("rb") as stream:
        for chunk, _ in read_chunks(SOURCE, stream):
            pipeline.feed(chunk)
    findings.detector.evaluate()
    return pipeline, list(summaries.runs.values()), list(findings.findings.values())


def _finding_lines(findings: list[Finding]) -> list[str]:
    out = []
    for f in findings:
        state = (
            "FIRING" if f.active else f"resolved {f.resolved_at.isoformat(sep=' ') if f.resolved_at else ''}"
        )
        out.append(f"{f.severity.upper()} {f.rule} [{f.run_id} vs {f.baseline_run_id}] {state}")
        out.append(f"  {f.summary}")
    return out or ["no findings"]


def main(plain: bool = False) -> int:
    pipeline, summaries, findings = replay()
    rows = [[printable(cell) for cell in row] for row in _rows(summaries)]
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
    return 0
