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

import shutil
import sys
import time
from collections.abc import Callable
from datetime import tzinfo
from pathlib import Path

from acceptmon.apps.backfill.blocks import beside
from acceptmon.apps.backfill.findings import HistoryFindings
from acceptmon.apps.backfill.parts import Parts, WriteError
from acceptmon.apps.backfill.progress import progress
from acceptmon.apps.backfill.sampler import Sampler
from acceptmon.ingest.read import new_pipeline, opened, read_logs
from acceptmon.labels import SourceIdentity
from acceptmon.model import SpecConfig
from acceptmon.runs.ahead import AheadGuard
from acceptmon.sources.base import FileReader
from acceptmon.sources.files import InputError, Log
from acceptmon.text.printable import printable

#: Exit status when promtool is missing or fails (the OpenMetrics file is still written).
NO_BLOCKS = 3
_NO_PROMTOOL = "promtool is not installed (Debian package prometheus); the OpenMetrics file is ready for it"

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
    declared: SpecConfig | None = None,
    *,
    read: Callable[[str], None] | None = None,
    parts: Parts | None = None,
) -> Sampler:
    """Read ``logs`` into a sampler (``read``: told each path read; ``parts``: writes the
    history in parts while the reading goes on)."""
    pipeline, _table = new_pipeline(tz, draft_config, readers, run_table=False, declared=declared)
    # As in the agent: a time ahead of this host's clock is never a record's (nor a gauge's) time.
    pipeline.ahead = AheadGuard(time.time)
    for lg in logs:  # the host label the agent's series carry (``run_info``)
        pipeline.store.hosts[lg.name] = SourceIdentity.of(lg.url or lg.name).host
    sampler = Sampler(pipeline.store, step, labels, zone=tz)
    if parts is not None:
        parts.attach(sampler.recorder)
    findings = HistoryFindings(pipeline)
    sampler.parts, sampler.extra = findings.part, findings.families
    pipeline.log_clock = sampler
    problems = read_logs(pipeline, logs, read, placed=True)  # the sampler reads lines anywhere
    for problem in problems:
        print(f"acceptmon: cannot read {printable(problem)}", file=sys.stderr)
    sampler.finish()
    return sampler


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
    declared: SpecConfig | None = None,
) -> int:
    """``names``: the ``source`` labels of the SOURCEs in the same position (``--name``), so
    history continues the series of the agent source of that ``name``."""
    directory = Path(out)
    promtool = shutil.which("promtool")
    try:
        with (
            opened(sources, ssh_config, names) as (logs, readers),
            progress([path for lg in logs for path in lg.files]) as shown,
            beside(promtool, directory / "blocks", shown.blocks) as blocks,
        ):
            parts = Parts(directory, blocks)
            sampler = collect(
                logs, tz, step, draft_config, readers, labels, declared, read=shown.read, parts=parts
            )
            written = parts.finish()
            problem = blocks.finish() if blocks is not None else _NO_PROMTOOL
    except InputError as exc:
        print(f"acceptmon: {printable(str(exc))}", file=sys.stderr)
        return 2
    except WriteError as exc:
        print(f"acceptmon: {exc}", file=sys.stderr)
        return 1
    recorder = sampler.recorder
    what = f"{recorder.points} points of {len(recorder.families)} metrics"
    if len(written) == 1:
        print(f"wrote {written[0]}: {what}")
    else:
        print(f"wrote {written[0]} … {written[-1].name} ({len(written)} parts by time): {what}")
    refused = sampler.refused()
    if refused:
        print(refused, file=sys.stderr)
    if not recorder.points:
        print("acceptmon: nothing to backfill: no line with a timestamp and a metric", file=sys.stderr)
        return 0
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
