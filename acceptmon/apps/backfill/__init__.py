"""``acceptmon backfill SOURCE… --out DIR``: old logs as Prometheus history.

The incident this project exists for sat at ~19% for days before anyone
looked; backfill puts those days into Prometheus. Each SOURCE is read once
through the agent's pipeline; every ``--step`` seconds of each log's own time
the log-derived metrics (the same names and labels the agent serves) are
recorded with that time, written as OpenMetrics (``DIR/acceptmon.om``), and
turned into TSDB blocks by ``promtool tsdb create-blocks-from openmetrics``
(``DIR/blocks``), ready to copy into Prometheus's data directory. Samples get
the ``job`` and ``instance`` labels the agent's scrape would add, so history and
live data are one series.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import tzinfo
from pathlib import Path
from typing import Any

from acceptmon.apps.backfill.findings import HistoryFindings
from acceptmon.apps.backfill.sampler import Sampler
from acceptmon.ingest.read import new_pipeline, opened, read_logs
from acceptmon.labels import SourceIdentity
from acceptmon.runs.ahead import AheadGuard
from acceptmon.sources.base import FileReader
from acceptmon.sources.files import InputError, Log
from acceptmon.text.printable import printable

#: The longest TSDB block written (promtool's default is 2 h).
BLOCK = "24h"
#: Exit status when promtool is missing or fails (the OpenMetrics file is still written).
NO_BLOCKS = 3

STEPS = """Load the blocks into Prometheus:
  1. stop Prometheus (or not: since 2.39 it picks blocks up at the next compaction, but a stop is surest);
  2. copy {blocks}/* (the ULID directories) into its --storage.tsdb.path;
  3. make sure --storage.tsdb.retention.time reaches back to {oldest} (older blocks are deleted at start);
  4. start it: the history is queryable, and the dashboard's panels on raw metrics show it;
  5. recording rules (acceptmon:…) are not evaluated for the past: create their history with
     promtool tsdb create-blocks-from rules --start … --end … --url http://prometheus:9090 rules.yml
Caveats: history that overlaps data Prometheus already has is merged (overlapping blocks are the
default since 2.39); a series' samples older than its newest live sample are out of order for the
head block, which is why history goes in as blocks, not through the agent."""


def collect(
    logs: list[Log],
    tz: tzinfo,
    step: float,
    draft_config: list[str] | None,
    readers: dict[str, FileReader],
    labels: dict[str, str] | None = None,
) -> Sampler:
    pipeline, _table = new_pipeline(tz, draft_config, readers, run_table=False)
    # As in the agent: a time ahead of this host's clock is never a record's (nor a gauge's) time.
    pipeline.ahead = AheadGuard(time.time)
    for lg in logs:  # the host label the agent's series carry (``run_info``)
        pipeline.store.hosts[lg.name] = SourceIdentity.of(lg.url or lg.name).host
    sampler = Sampler(pipeline.store, step, labels, zone=tz)
    findings = HistoryFindings(pipeline)
    sampler.parts, sampler.extra = findings.part, findings.families
    pipeline.log_clock = sampler
    with _progress([path for lg in logs for path in lg.files]) as advance:
        problems = read_logs(pipeline, logs, advance)
    for problem in problems:
        print(f"acceptmon: cannot read {printable(problem)}", file=sys.stderr)
    sampler.finish()
    return sampler


def _progress(files: list[str]) -> Any:
    """A rich progress bar over files when stderr is a terminal; nothing otherwise."""
    from contextlib import contextmanager

    @contextmanager
    def bar() -> Any:
        if not sys.stderr.isatty():
            yield lambda _path: None
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        sizes = {p: _size(p) for p in files}
        with Progress(
            TextColumn("backfill"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeRemainingColumn(),
            transient=True,
        ) as progress:
            task = progress.add_task("read", total=sum(sizes.values()) or len(files))
            yield lambda path: progress.advance(task, sizes.get(path) or 1)

    return bar()


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def blocks(om: Path, out: Path) -> str | None:
    """Run promtool; None when the blocks are written, else why not."""
    promtool = shutil.which("promtool")
    if promtool is None:
        return "promtool is not installed (Debian package prometheus); the OpenMetrics file is ready for it"
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        # Day-long blocks: a fifth of promtool's time with its 2 h default on days of history
        # (fewer blocks to write and for Prometheus to compact later).
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            f"--max-block-duration={BLOCK}",
            str(om),
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"promtool failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    return None


def main(
    sources: list[str],
    *,
    out: str,
    step: float,
    tz: tzinfo,
    draft_config: list[str] | None = None,
    ssh_config: str | None = None,
    labels: dict[str, str] | None = None,
    names: list[str] | None = None,
) -> int:
    """``names``: the ``source`` labels of the SOURCEs in the same position (``--name``), so
    history continues the series of the agent source of that ``name``."""
    try:
        with opened(sources, ssh_config, names) as (logs, readers):
            sampler = collect(logs, tz, step, draft_config, readers, labels)
    except InputError as exc:
        print(f"acceptmon: {printable(str(exc))}", file=sys.stderr)
        return 2
    directory = Path(out)
    om = directory / "acceptmon.om"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with om.open("w", encoding="utf-8") as f:
            sampler.recorder.write(f)
    except OSError as exc:
        print(f"acceptmon: cannot write {om}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {om}: {sampler.recorder.points} points of {len(sampler.recorder.families)} metrics")
    refused = sampler.refused()
    if refused:
        print(refused, file=sys.stderr)
    if not sampler.recorder.points:
        print("acceptmon: nothing to backfill: no line with a timestamp and a metric", file=sys.stderr)
        return 0
    problem = blocks(om, directory / "blocks")
    if problem:
        print(f"acceptmon: no TSDB blocks: {problem}", file=sys.stderr)
        return NO_BLOCKS
    from datetime import UTC, datetime

    oldest = datetime.fromtimestamp(sampler.oldest or 0, UTC).date().isoformat()
    print(
        f"wrote TSDB blocks to {directory / 'blocks'}\n"
        + STEPS.format(blocks=directory / "blocks", oldest=oldest)
    )
    return 0
