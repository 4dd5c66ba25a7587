"""The report's plots (matplotlib, Agg): each drawn in a light and a dark variant.

Acceptance over time with run boundaries labelled by the keys that changed and
findings marked; per-run distributions side by side; acceptance against batch
size; per-position acceptance where the engine logs it.

A log of thousands of runs draws in about the time of a few: each plot is a
handful of artists (all boundaries one collection, every run's median one
line), boxes and load curves go to the latest runs only, labels only to a few
runs (the captions say so). A month of intervals draws in about the time of a
day's: points are cut to the screen's columns (``downsample``) before
matplotlib sees them, and the statistics are computed once for both themes.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from acceptmon.apps.report.beside import beside
from acceptmon.apps.report.downsample import by_value, envelope
from acceptmon.apps.report.drawn import Plot
from acceptmon.apps.report.mathtext import literal
from acceptmon.apps.report.series import SourceSeries
from acceptmon.detect.runstats import RunStats
from acceptmon.model import Finding

#: Themes: (matplotlib style sheet, accent colours).
THEMES = {"light": "default", "dark": "dark_background"}
BLUE, ORANGE, RED, GREY = "#1f77b4", "#ff7f0e", "#d62728", "#888888"
#: Per theme: the intervals' colour (the light theme's blue is lost on black) and the labels'.
POINTS = {"light": BLUE, "dark": "#8fd3ff"}
TEXT = {"light": "#222222", "dark": "#eeeeee"}
#: One distinct colour per run (matplotlib's tab10; the dark style's own cycle has only 8).
RUN_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
#: Run starts labelled with the keys that changed when at most this many (else the run id only:
#: longer labels would overlap; the table names the keys).
SPELLED = 4
#: Runs boxed: the latest this many. Run starts and findings are labelled when there are at
#: most this many (more labels would only overlap; the table names them).
LABELLED = 30
#: Runs drawn against batch size (one colour and legend entry each): the latest this many.
LOAD_RUNS = len(RUN_COLOURS)
#: Figure sizes in inches at DPI dots per inch: over time takes the page's width.
DPI = 100
OVER_TIME, SMALL = (11.0, 4.0), (6.0, 3.6)


def _render(draw: Callable[[Any, str], None], size: tuple[float, float]) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    margins: dict[str, float] = {}
    for theme, style in THEMES.items():
        with plt.style.context(style):
            fig, ax = plt.subplots(figsize=size, dpi=DPI)
            try:
                draw(ax, theme)
                # A theme changes colours, not text: the first theme's layout fits every theme.
                if margins:
                    fig.subplots_adjust(**margins)
                else:
                    fig.tight_layout()
                    sp = fig.subplotpars
                    margins = {"left": sp.left, "right": sp.right, "bottom": sp.bottom, "top": sp.top}
                buf = io.BytesIO()
                fig.savefig(buf, format="rgba")
                out[theme] = _png(buf.getvalue(), fig.canvas.get_width_height())
            finally:
                plt.close(fig)
    return out


def _png(rgba: bytes, size: tuple[int, int]) -> bytes:
    """A drawn figure as a 256-colour PNG: a third of a full-colour one's bytes, encoded in the
    same time (a plot has a few colours and their anti-aliased blends; Pillow comes with matplotlib)."""
    from PIL import Image

    image = Image.frombuffer("RGBA", size, rgba).convert("RGB")
    buf = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buf, format="PNG")
    return buf.getvalue()


def _start_label(run: RunStats, spelled: bool) -> str:
    """``r2 11-30 14:00`` and, when ``spelled``, the keys that changed in full (a last
    component alone, ``eagle_aux_hidden_state_layer_ids``, does not say where it is)."""
    when = run.run.started.strftime("%m-%d %H:%M") if run.run.started else ""
    head = f"{run.run.run_id} {when}".strip()
    keys = run.changed_keys()
    if not spelled or not keys:
        return head
    more = f" +{len(keys) - 2} more" if len(keys) > 2 else ""
    return head + "\n" + "\n".join(keys[:2]) + more


def _ordinal(secs: npt.NDArray[np.float64], by_run: Mapping[str, Sequence[int]]) -> bool:
    """Whether to draw against interval number: when idle gaps (days between short runs) would
    squeeze every run into a sliver of a time axis."""
    if len(secs) < 2:
        return False
    span = float(secs[-1] - secs[0])
    active = 0.0
    for idx in by_run.values():  # gaps within a run, under 10 minutes: the time it served
        gaps = np.diff(secs[np.asarray(idx, dtype=np.int64)])
        active += float(gaps[(gaps > 0) & (gaps < 600)].sum())
    return span > 0 and active < 0.2 * span


def _strokes(
    ax: Any, xs: Sequence[Any], lo: Sequence[float], hi: Sequence[float], colour: str, label: str
) -> None:
    """``ax.vlines(xs, lo, hi, color=colour, alpha=0.6, linewidth=1, label=label)`` as one path
    of strokes: ``vlines`` made each of a plot's ~1,100 strokes a path (and a draw) of its own,
    0.04-0.06 s of the two-theme plot over time; one path draws them in one go."""
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.path import Path

    given = list(xs)
    ax.xaxis.update_units(given)  # times make a date axis, as ``vlines`` would make it
    x = np.asarray(ax.convert_xunits(given), dtype=np.float64)
    verts = np.empty((2 * len(x), 2))
    verts[0::2, 0] = verts[1::2, 0] = x
    verts[0::2, 1], verts[1::2, 1] = lo, hi
    codes = np.tile(np.array([Path.MOVETO, Path.LINETO], dtype=Path.code_type), len(x))
    # zorder 2: where ``vlines``' collection goes (over the grid, under the lines and markers).
    ax.add_collection(
        PathCollection(
            [Path(verts, codes)], facecolors="none", edgecolors=colour, alpha=0.6, linewidths=1, zorder=2
        )
    )
    ax.update_datalim(verts)
    ax.autoscale_view()
    # The legend's entry: a stroke, as ``vlines`` shows it.
    ax.add_line(Line2D([], [], color=colour, alpha=0.6, linewidth=1, label=label))


def over_time(s: SourceSeries, runs: list[RunStats], findings: list[Finding]) -> Callable[[Any, str], None]:
    secs, groups = np.asarray(s.secs, dtype=np.float64), s.by_run
    ordinal = _ordinal(secs, groups)

    def x_at(i: int) -> Any:
        return i if ordinal else datetime.fromtimestamp(s.secs[i], UTC)

    def x_of(ts: datetime) -> Any:
        if not ordinal:
            return ts
        # The first interval at or after a time: search the running maximum (logs are mostly in order).
        return min(int(np.searchsorted(latest, ts.timestamp())), len(s.secs) - 1)

    latest = np.maximum.accumulate(secs)
    window = max(1, min(25, len(s.accept_len) // 10))
    where = np.arange(len(secs), dtype=np.float64) if ordinal else secs
    env = envelope(where, s.accept_len, groups.values(), int(OVER_TIME[0] * DPI), window)
    at = [x_at(i) for i in env.at]
    # Every run's median as one line, broken (NaN) between runs: never across a restart.
    med_x: list[Any] = []
    med_y: list[float] = []
    for start, end in zip([0, *env.ends], env.ends, strict=False):
        med_x += [*at[start:end], at[end - 1]]
        med_y += [*env.mid[start:end], float("nan")]
    starts = [(r, x_at(groups[r.run.run_id][0])) for r in runs if r.run.run_id in groups]
    marked = [f for f in findings if f.first_seen is not None and f.after_accept_len is not None]

    def draw(ax: Any, theme: str) -> None:
        # Each screen column's range as one vertical stroke; a column of one value as a dot.
        lone = [(x, lo) for x, lo, hi in zip(at, env.lo, env.hi, strict=True) if lo == hi]
        points = POINTS[theme]
        if len(lone) < len(at):
            label = "accept len, min to max per screen column"
            _strokes(ax, at, env.lo, env.hi, points, label)
        if lone:
            ax.plot(
                *zip(*lone, strict=True), ".", ms=4, color=points, alpha=0.8, label="accept len per interval"
            )
        ax.plot(med_x, med_y, "-", color=ORANGE, linewidth=1.5, label=f"median (of {window + 1} or more)")
        if starts:
            ax.vlines(
                [x for _, x in starts],
                0,
                1,
                transform=ax.get_xaxis_transform(),
                color=GREY,
                # Many starts: thin and solid (dashes by the thousand only blur and bloat the PNG).
                linestyle="--" if len(starts) <= LABELLED else "-",
                linewidth=1 if len(starts) <= LABELLED else 0.3,
            )
        # Above the plot, horizontal, in the text colour, alternating rows so neighbours do not
        # collide; the data is never under a label.
        spelled = len(starts) <= SPELLED
        for i, (r, x) in enumerate(starts if len(starts) <= LABELLED else []):
            ax.annotate(
                literal(_start_label(r, spelled)),
                (x, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(2, 3 + (i % 2) * (0 if spelled else 11)),
                textcoords="offset points",
                va="bottom",
                ha="left",
                fontsize=8,
                color=TEXT[theme],
            )
        marks = [(x_of(f.first_seen), f.after_accept_len, f.rule) for f in marked if f.first_seen]
        if marks:
            many = f"{len(marks)} findings" if len(marks) > LABELLED else "finding"
            ax.plot([p[0] for p in marks], [p[1] for p in marks], "v", color=RED, ms=9, ls="", label=many)
        for x, y, rule in marks if len(marks) <= LABELLED else []:
            ax.annotate(
                literal(rule), (x, y), xytext=(4, -12), textcoords="offset points", fontsize=8, color=RED
            )
        ax.set_xlabel("Decode interval, in log order (idle gaps left out)" if ordinal else "time")
        ax.set_ylabel("accept length (tokens per verify step)")
        # Below the axis, in a row: never over the data nor the run-start labels.
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4, fontsize=8, frameon=False)
        ax.grid(alpha=0.3)

    return draw


def _served(runs: list[RunStats], s: SourceSeries) -> list[str]:
    return [r.run.run_id for r in runs if r.intervals and r.run.run_id in s.by_run]


def per_run(runs: list[RunStats], s: SourceSeries) -> Callable[[Any, str], None]:
    from matplotlib import cbook

    ids = _served(runs, s)[-LABELLED:]
    # The boxes' numbers, once for both themes: a run of a month is a million intervals.
    lens = np.asarray(s.accept_len, dtype=np.float64)
    data = [lens[np.asarray(s.by_run[rid], dtype=np.int64)] for rid in ids]
    stats = cbook.boxplot_stats(data, labels=[literal(i) for i in ids]) if ids else []

    def draw(ax: Any, _theme: str) -> None:
        if stats:
            ax.bxp(stats, showfliers=False)
            if len(ids) > 12:
                ax.tick_params(axis="x", labelrotation=90, labelsize=7)
        ax.set_xlabel("run")
        ax.set_ylabel("accept length")
        ax.grid(alpha=0.3, axis="y")

    return draw


def against_load(s: SourceSeries) -> Callable[[Any, str], None]:
    lens, running = np.asarray(s.accept_len, dtype=np.float64), np.asarray(s.running, dtype=np.int64)
    shown = []
    for rid, members in list(s.by_run.items())[-LOAD_RUNS:]:
        idx = np.asarray(members, dtype=np.int64)
        shown.append((rid, by_value(running[idx], lens[idx])))

    def draw(ax: Any, _theme: str) -> None:
        # One colour per run (runs differ more than loads do), none repeated: at most LOAD_RUNS.
        for (rid, (xs, lo, hi, mid)), colour in zip(shown, RUN_COLOURS, strict=False):
            ax.plot(xs, mid, "-", color=colour, linewidth=1.5, label=literal(f"{rid} median"))
            # Each batch size's range, its ends as dots: every interval's point, without drawing each.
            ax.vlines(xs, lo, hi, color=colour, alpha=0.3, linewidth=2)
            ax.plot(xs + xs, lo + hi, ".", markersize=4, alpha=0.5, color=colour)
        ax.set_xlabel("#running-req (batch size)")
        ax.set_ylabel("accept length")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)  # beside the data
        ax.grid(alpha=0.3)

    return draw


def position_runs(s: SourceSeries, runs: list[RunStats]) -> list[tuple[str, list[float]]]:
    """Before and after: the latest run with per-position rates and the run it is judged
    against (the newest earlier one with another config, else the previous), as the findings'
    words compare them; one run alone when there is no other."""
    means = {rid: m for rid, _, _ in s.positions.dump() if (m := s.positions.means(rid))}
    order = [r for r in runs if r.run.run_id in means]
    if not order:
        return [(rid, m) for rid, m in list(means.items())[-1:]]
    latest = order[-1]
    earlier = order[:-1]
    before = next(
        (r for r in reversed(earlier) if _hash(r) != _hash(latest)), earlier[-1] if earlier else None
    )
    pair = [latest] if before is None else [before, latest]
    return [(r.run.run_id, means[r.run.run_id]) for r in pair]


def _hash(run: RunStats) -> str | None:
    return run.run.config.hash if run.run.config else None


def positions(shown: list[tuple[str, list[float]]]) -> Callable[[Any, str], None]:
    width = 0.8 / len(shown)
    roles = ["before", "after"] if len(shown) == 2 else [""]

    def draw(ax: Any, _theme: str) -> None:
        for i, ((rid, values), role) in enumerate(zip(shown, roles, strict=True)):
            # 0-based, as the findings' "fell at positions 0, 1" count them.
            xs = [p + (i - (len(shown) - 1) / 2) * width for p in range(len(values))]
            label = literal(f"{rid} ({role})" if role else rid)
            ax.bar(xs, values, width=width, color=(GREY, BLUE)[i] if role else BLUE, label=label)
        n = max(len(v) for _, v in shown)
        ax.set_xticks(range(n))
        ax.set_xlabel("draft position (0 = the first drafted token)")
        ax.set_ylabel("acceptance rate")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8, frameon=False)
        ax.grid(alpha=0.3, axis="y")

    return draw


def _latest(shown: int, total: int) -> str:
    return f" (the latest {shown} of {total} runs)" if shown < total else ""


def _over_time_title(s: SourceSeries, runs: list[RunStats]) -> str:
    starts = sum(1 for r in runs if r.run.run_id in s.by_run)
    return (
        "Acceptance over time (dashed: run starts, "
        + (
            "labelled by what changed"
            if starts <= SPELLED
            else "labelled by run: the table names what changed"
            if starts <= LABELLED
            else f"{starts} of them: the table names them"
        )
        + "; ▼ findings)"
    )


def _smaller(s: SourceSeries, runs: list[RunStats]) -> list[Plot]:
    """The plots under the one over time."""
    served, in_series = len(_served(runs, s)), len(s.by_run)
    out = [
        Plot(
            "per-run",
            "Accept length per run" + _latest(min(served, LABELLED), served),
            _render(per_run(runs, s), SMALL),
        ),
    ]
    if s.loads:  # vLLM logs no batch size: no plot against one
        title = "Accept length against batch size" + _latest(min(in_series, LOAD_RUNS), in_series)
        out.append(Plot("against-load", title, _render(against_load(s), SMALL)))
    shown = position_runs(s, runs)
    if shown:
        which = " and ".join(rid for rid, _ in shown)
        title = f"Acceptance per draft position: {which}" + (" (before and after)" if len(shown) == 2 else "")
        out.append(Plot("positions", title, _render(positions(shown), SMALL)))
    return out


#: What a source's plots are drawn from: its series, its runs and its findings.
Job = tuple[SourceSeries, list[RunStats], list[Finding]]


def over_time_pngs(jobs: list[Job]) -> list[dict[str, bytes]]:
    """Each source's plot over time (the largest)."""
    return [_render(over_time(s, runs, findings), OVER_TIME) for s, runs, findings in jobs]


def warm() -> None:
    """What drawing imports (~0.35 s), done ahead: in a child beside the process that
    reads the logs, while it reads them."""
    import matplotlib

    matplotlib.use("Agg")
    for module in ("matplotlib.pyplot", "PIL.Image"):
        importlib.import_module(module)


def draw(jobs: list[Job]) -> list[list[Plot]]:
    """Each source's plots. Those over time (the largest) are drawn beside this process (a
    forked child, with the series by then in both) while it draws the rest."""
    over = beside(partial(over_time_pngs, jobs))
    rest = [_smaller(s, runs) for s, runs, _ in jobs]
    return [
        [Plot("over-time", _over_time_title(s, runs), png), *more]
        for (s, runs, _), more, png in zip(jobs, rest, over(), strict=True)
    ]


def plots_for(s: SourceSeries, runs: list[RunStats], findings: list[Finding]) -> list[Plot]:
    """One source's plots."""
    return draw([(s, runs, findings)])[0]
