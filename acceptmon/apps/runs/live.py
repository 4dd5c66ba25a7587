"""``acceptmon runs --follow``: the table and verdict redrawn as lines arrive.

Rotated files are read once; each log's current file is then followed like
the agent follows it (rotation, truncation), through the agent's live loop
(``ingest.loop``) and source factory (``sources.open_source``), and the view — every run, the
current run's recent acceptance as a sparkline beside the previous run's
level, the verdict firming up — is redrawn a few times a second. Ctrl-C ends
it cleanly with the last view left on screen.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import tzinfo

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from acceptmon.clock import SystemClock
from acceptmon.detect.runstats import RunStats, RunTable
from acceptmon.detect.table import duration_words
from acceptmon.detect.verdict import Verdict
from acceptmon.ingest.loop import Loop
from acceptmon.ingest.read import feed_file, new_pipeline
from acceptmon.settings.sources import SourceSettings
from acceptmon.sources import open_source
from acceptmon.sources.base import FileReader, Source
from acceptmon.sources.container.follow import WorkloadSource
from acceptmon.sources.files import Log
from acceptmon.sources.ssh.options import SSHSettings
from acceptmon.text.printable import printable

TICKS = "▁▂▃▄▅▆▇█"
#: Sparkline width in intervals (one character each).
SPARK = 40
STYLE = {"better": "bold green", "worse": "bold red", "same": "bold", "insufficient": "yellow"}


def sparkline(values: list[float], low: float, high: float) -> str:
    span = max(high - low, 1e-9)
    return "".join(TICKS[min(len(TICKS) - 1, max(0, int((v - low) / span * len(TICKS))))] for v in values)


def _level_text(s: RunStats) -> str:
    m = s.median()
    return "-" if m is None else f"{m[0]:.2f}"


def _runs_table(runs: list[RunStats]) -> Table:
    t = Table(box=None, pad_edge=False, expand=False)
    for name, justify in (
        ("run", "left"),
        ("intervals", "right"),
        ("accept len", "right"),
        ("rate", "right"),
    ):
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    # The change takes whatever width the terminal leaves; it folds only where that ends.
    t.add_column("opened by", overflow="fold")
    for s in runs[-8:]:
        rate = s.accept_rate()
        # Text, not str: a cell string would be read as rich markup ("[/x]" in a key name fails).
        t.add_row(
            _text(s.run.run_id),
            str(s.intervals),
            _level_text(s),
            "-" if rate is None else f"{rate:.0%}",
            _text(s.change()),
        )
    return t


def _text(value: str, style: str = "") -> Text:
    """Log-derived text for the live view: printable, and never taken for rich markup."""
    return Text(printable(value), style=style)


def _verdict_text(v: Verdict | None) -> Text:
    """The verdict, and against the last good run when that is another run (as the table says it)."""
    if v is None:
        return Text("verdict: waiting for Decode intervals", style="yellow")
    text = _text("verdict: " + v.words(), style=STYLE[v.state])
    if v.good is not None:
        text.append("\n")
        text.append(_text("against the last good run: " + v.good.words(), style=STYLE[v.good.state]))
    return text


def view(table: RunTable, logs: list[Log]) -> RenderableType:
    parts: list[RenderableType] = []
    for lg in logs:
        runs = table.of(lg.name)
        parts.append(_text(lg.name, style="bold"))
        parts.append(_runs_table(runs))
        served = [s for s in runs if s.intervals]
        if served:
            cur = served[-1]
            values = list(cur.recent)[-SPARK:]
            prev = served[-2].median() if len(served) > 1 else None
            low = min([*values, prev[0] if prev else values[0]])
            high = max([*values, prev[0] if prev else values[0]])
            line = _text(f"{cur.run.run_id} now ", style="bold")
            line.append(sparkline(values, low, high), style="cyan")
            line.append(f" {values[-1]:.2f}")
            if prev is not None:
                line.append(printable(f"   previous run {served[-2].run.run_id}: {prev[0]:.2f}"))
            parts.append(line)
            if cur.run.started and cur.last_ts:
                parts.append(
                    Text(f"running {duration_words((cur.last_ts - cur.run.started).total_seconds())}")
                )
        parts.append(_verdict_text(table.verdict(lg.name)))
        parts.append(Text(""))
    return Group(*parts)


@contextmanager
def _logs_above() -> Iterator[None]:
    """Send log lines through Live's redirected stderr, so they print above the view, not into it."""
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]
    old = [h.setStream(sys.stderr) for h in handlers]
    try:
        yield
    finally:
        for h, stream in zip(handlers, old, strict=True):
            if stream is not None:
                h.setStream(stream)


def follow_logs(
    logs: list[Log],
    tz: tzinfo,
    draft_config: list[str] | None = None,
    *,
    console: Console | None = None,
    stop: threading.Event | None = None,
    interval: float = 0.25,
    ssh_config: str | None = None,
    readers: dict[str, FileReader] | None = None,
    state_dir: str | None = None,
) -> bool:
    """Follow until Ctrl-C (or ``stop``); True when some latest run ended up worse."""
    pipeline, table = new_pipeline(tz, draft_config, readers, state_dir=state_dir)
    for lg in logs:
        for path in lg.files[:-1]:
            feed_file(pipeline, lg.name, path, lg.opener)
    clock = SystemClock()
    sources: dict[str, Source] = {}
    for spec in live_specs([lg for lg in logs if not lg.tree], ssh_config):
        sources[spec.name] = open_source(spec, clock)
    for tree in sorted({lg.tree for lg in logs if lg.tree}):
        # A node's containers: later restarts and new pods join their workloads as they come.
        current = {lg.files[-1] for lg in logs if lg.tree == tree}
        sources[tree] = WorkloadSource("", tree, clock=clock, from_beginning=False, whole=current)
    for lg in logs:
        if lg.files[-1] == "-":
            feed_file(pipeline, lg.name, "-")
    stop = stop or threading.Event()
    loop = Loop(pipeline)
    try:
        with (
            Live(view(table, logs), console=console, refresh_per_second=4, transient=False) as live,
            _logs_above(),
        ):
            while not stop.is_set():
                loop.step(sources)
                live.update(view(table, logs))
                if not loop.backlog:
                    stop.wait(interval)  # the files' pace: polling, as tail -F does
    except KeyboardInterrupt:
        pass
    finally:
        for src in sources.values():
            src.close()
    return any((v := table.verdict(lg.name)) is not None and v.state == "worse" for lg in logs)


def live_specs(logs: list[Log], ssh_config: str | None = None) -> list[SourceSettings]:
    """The current file of each log, as a source to follow (stdin is read to its end instead)."""
    specs = []
    for lg in logs:
        if lg.opener is not None:  # ssh://: its current file followed as the agent follows it
            ssh = SSHSettings(ssh_config=ssh_config) if ssh_config else SSHSettings()
            specs.append(SourceSettings(lg.url or lg.name, lg.name, ssh=ssh))
        elif lg.files[-1] != "-":
            specs.append(SourceSettings(lg.files[-1], lg.name))
    return specs
