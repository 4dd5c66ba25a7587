"""``acceptmon report SOURCE… -o report.html``: acceptance a person would rather see than read.

One self-contained HTML file (plots embedded as data URIs, light and dark
variants chosen by the viewer's colour scheme): per source, the run table
and verdict of ``acceptmon runs``, acceptance over time with run boundaries
labelled by the keys that changed and findings marked, per-run
distributions, acceptance against batch size, and per-position acceptance
where the engine logs it. ``--png DIR`` writes the plots alone. Needs
matplotlib (``pip install 'acceptmon[report]'``); the agent never imports it.
"""

from __future__ import annotations

import base64
import html
import sys
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from acceptmon import extras
from acceptmon.apps.report.beside import Beside, forked
from acceptmon.apps.report.drawn import Call, Plot
from acceptmon.apps.report.progress import reading
from acceptmon.apps.report.series import SeriesSink
from acceptmon.detect.table import plain
from acceptmon.ingest.findings import FindingLog
from acceptmon.ingest.read import new_pipeline, opened, read_logs
from acceptmon.model import Finding, SpecConfig
from acceptmon.sources.base import FileReader
from acceptmon.sources.files import InputError, Log
from acceptmon.text.printable import printable

if TYPE_CHECKING:  # plots import matplotlib and numpy: only the child drawing them does
    from acceptmon.apps.report.plots import Job

#: The module that draws the plots (matplotlib and numpy): imported by the child that draws.
_PLOTS = "acceptmon.apps.report.plots"
#: Runs in a source's table (the latest; ``acceptmon runs`` lists them all).
TABLE_RUNS = 200
#: Findings listed under a source's plots (the latest; every one is marked in the plot).
FINDINGS_SHOWN = 50

_CSS = """
:root { color-scheme: light dark; }
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1150px; padding: 0 1rem;
       background: Canvas; color: CanvasText; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2.5rem; }
pre { background: color-mix(in srgb, CanvasText 6%, Canvas); padding: .8rem; overflow-x: auto; }
figure { margin: 1rem 0; } figcaption { font-size: .85rem; opacity: .8; }
.row { display: flex; flex-wrap: wrap; gap: 1rem; } .row figure { flex: 1 1 480px; }
img { max-width: 100%; height: auto; }
"""


def _img(plot: Plot) -> str:
    light = base64.b64encode(plot.png["light"]).decode()
    dark = base64.b64encode(plot.png["dark"]).decode()
    return (
        f'<figure class="plot" id="{plot.name}"><picture>'
        f'<source media="(prefers-color-scheme: dark)" srcset="data:image/png;base64,{dark}">'
        f'<img alt="{html.escape(plot.title)}" src="data:image/png;base64,{light}"></picture>'
        f"<figcaption>{html.escape(plot.title)}</figcaption></figure>"
    )


def build(
    logs: list[Log],
    tz: tzinfo,
    draft_config: list[str] | None,
    readers: dict[str, FileReader],
    state_dir: str | None = None,
    declared: SpecConfig | None = None,
    drawer: Beside | None = None,
) -> tuple[str, dict[str, list[Plot]]]:
    """The HTML page and, per source, its plots (drawn by ``drawer``, a child forked before
    the logs were read; None: here)."""
    pipeline, table = new_pipeline(tz, draft_config, readers, state_dir=state_dir, declared=declared)
    series = SeriesSink(pipeline.tracker)
    pipeline.consumers.append(series)
    finding_log = FindingLog(pipeline)
    with reading(logs, "report") as (counted, done):
        problems = read_logs(pipeline, counted, done)
    for problem in problems:
        print(f"acceptmon: cannot read {printable(problem)}", file=sys.stderr)
    finding_log.detector.evaluate()
    findings: list[Finding] = list(finding_log.findings.values())
    mine = {lg.name: [f for f in findings if f.source == lg.name] for lg in logs}
    jobs: dict[str, Job] = {}
    for lg in logs:
        s = series.sources.get(lg.name)
        if s is not None and s.accept_len:
            jobs[lg.name] = (s, table.of(lg.name), mine[lg.name])
    draw = Call(_PLOTS, "draw", (list(jobs.values()),))
    each: list[list[Plot]] = (draw if drawer is None else drawer.run(draw))()
    plots = dict(zip(jobs, each, strict=True))
    parts = []
    for lg in logs:
        runs, drawn = table.of(lg.name), plots.get(lg.name)
        parts.append(f"<h2>{html.escape(lg.name)}</h2>")
        table_text = plain(lg.name, runs, table.verdict(lg.name), [], latest=TABLE_RUNS)
        parts.append(f"<pre>{html.escape(table_text)}</pre>")
        if drawn is None:
            parts.append("<p>No Decode intervals with an accept length in this log.</p>")
            continue
        parts.append(_img(drawn[0]))
        parts.append('<div class="row">' + "".join(_img(p) for p in drawn[1:]) + "</div>")
        if len(mine[lg.name]) > FINDINGS_SHOWN:
            parts.append(
                f"<p>{len(mine[lg.name]) - FINDINGS_SHOWN} earlier findings left out "
                "(acceptmon oneshot --format findings lists them all).</p>"
            )
        for f in mine[lg.name][-FINDINGS_SHOWN:]:
            state = "firing" if f.active else "resolved"
            parts.append(
                f"<p><b>{html.escape(f.severity.upper())} {html.escape(f.rule)}</b> ({state}): {html.escape(f.summary)}</p>"
            )
    page = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>acceptmon report</title><style>{_CSS}</style></head><body>"
        "<h1>acceptmon report: speculative-decoding acceptance</h1>" + "".join(parts) + "</body></html>"
    )
    return page, plots


def main(
    sources: list[str],
    *,
    out: str | None,
    png_dir: str | None,
    tz: tzinfo,
    draft_config: list[str] | None = None,
    ssh_config: str | None = None,
    state_dir: str | None = None,
    declared: SpecConfig | None = None,
) -> int:
    extras.check("report", "report")  # before reading: say at once that the plots cannot be drawn
    try:
        # The drawer is forked first, before any source starts a thread; it imports
        # matplotlib while this process reads.
        with forked(Call(_PLOTS, "warm")) as drawer, opened(sources, ssh_config) as (logs, readers):
            page, plots = build(logs, tz, draft_config, readers, state_dir, declared, drawer)
    except InputError as exc:
        print(f"acceptmon: {printable(str(exc))}", file=sys.stderr)
        return 2
    try:
        if out:
            Path(out).write_text(page, encoding="utf-8")
            print(f"wrote {out} ({sum(len(p) for p in plots.values())} plots)")
        if png_dir:
            _write_pngs(Path(png_dir), plots)
    except OSError as exc:
        print(f"acceptmon: cannot write the report: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def _write_pngs(directory: Path, plots: dict[str, list[Plot]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, (_source, drawn) in enumerate(sorted(plots.items()), start=1):
        for p in drawn:
            (directory / f"{i:02d}-{p.name}.png").write_bytes(p.png["light"])
    print(f"wrote {sum(len(d) for d in plots.values())} PNG files to {directory}")
