"""``acceptmon demo``: replay the bundled incident and show what acceptmon sees."""

from __future__ import annotations

import sys
from importlib import resources

from acceptmon.oneshot import read_chunks
from acceptmon.pipeline import Pipeline
from acceptmon.report import RunSummaries, RunSummary

DEMO_LOG = "demo-eagle3-incident.log"
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


def replay() -> tuple[Pipeline, list[RunSummary]]:
    pipeline = Pipeline()
    summaries = RunSummaries(pipeline.tracker)
    pipeline.sinks.append(summaries)
    with resources.files("acceptmon.data").joinpath(DEMO_LOG).open("rb") as stream:
        for chunk, _ in read_chunks(SOURCE, stream):
            pipeline.feed(chunk)
    return pipeline, list(summaries.runs.values())


def main(plain: bool = False) -> int:
    pipeline, summaries = replay()
    rows = _rows(summaries)
    stats = pipeline.store.stats(SOURCE).counters
    title = f"acceptmon demo — {SOURCE}: {int(stats['lines'])} lines, {int(stats['decode_batches'])} Decode intervals"
    if plain or not sys.stdout.isatty():
        print(title)
        print(" | ".join(HEADERS))
        for row in rows:
            print(" | ".join(row))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title)
        for h in HEADERS:
            table.add_column(h)
        for row in rows:
            table.add_row(*row)
        Console().print(table)
    return 0
