"""The report's plots (matplotlib, Agg): each drawn in a light and a dark variant.

Acceptance over time with run boundaries labelled by the keys that changed and
findings marked; per-run distributions side by side; acceptance against batch
size; per-position acceptance where the engine logs it.
"""

from __future__ import annotations

import io
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acceptmon.detect.runstats import RunStats
from acceptmon.model import Finding
from acceptmon.report.series import SourceSeries

#: Themes: (matplotlib style sheet, accent colours).
THEMES = {"light": "default", "dark": "dark_background"}
BLUE, ORANGE, RED, GREY = "#1f77b4", "#ff7f0e", "#d62728", "#888888"


@dataclass(frozen=True, slots=True)
class Plot:
    name: str
    title: str
    png: dict[str, bytes]  # theme → PNG bytes


def _render(draw: Callable[[Any, str], None], size: tuple[float, float]) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    for theme, style in THEMES.items():
        with plt.style.context(style):
            fig, ax = plt.subplots(figsize=size, dpi=100)
            try:
                draw(ax, theme)
                fig.tight_layout()
                buf = io.BytesIO()
                fig.savefig(buf, format="png")
                out[theme] = buf.getvalue()
            finally:
                plt.close(fig)
    return out


def _short_keys(run: RunStats) -> str:
    keys = run.changed_keys()
    if not keys:
        return run.run.run_id
    names = [k.rsplit(".", 1)[-1] for k in keys[:2]]
    return f"{run.run.run_id}: " + ", ".join(names) + (f" +{len(keys) - 2}" if len(keys) > 2 else "")


def _ordinal(s: SourceSeries) -> bool:
    """Whether to draw against interval number: when idle gaps (days between short runs) would
    squeeze every run into a sliver of a time axis."""
    if len(s.ts) < 2:
        return False
    span = (s.ts[-1] - s.ts[0]).total_seconds()
    active = sum(
        max(0.0, (b - a).total_seconds())
        for a, b, ra, rb in zip(s.ts, s.ts[1:], s.run_id, s.run_id[1:], strict=False)
        if ra == rb and (b - a).total_seconds() < 600
    )
    return span > 0 and active < 0.2 * span


def over_time(s: SourceSeries, runs: list[RunStats], findings: list[Finding]) -> Callable[[Any, str], None]:
    ordinal = _ordinal(s)
    xs: list[Any] = list(range(len(s.ts))) if ordinal else list(s.ts)
    first: dict[str, int] = {}
    for i, rid in enumerate(s.run_id):
        first.setdefault(rid, i)

    def x_of(ts: Any) -> Any:
        if not ordinal:
            return ts
        return next((i for i, t in enumerate(s.ts) if t >= ts), len(s.ts) - 1)

    def draw(ax: Any, _theme: str) -> None:
        ax.plot(xs, s.accept_len, ".", markersize=3, color=BLUE, alpha=0.5, label="accept len per interval")
        window = max(1, min(25, len(s.accept_len) // 10))
        for rid, start in first.items():  # a rolling median per run: never across a restart
            idx = [i for i in range(start, len(s.run_id)) if s.run_id[i] == rid]
            vals = [s.accept_len[i] for i in idx]
            rolling = [statistics.median(vals[max(0, j - window) : j + 1]) for j in range(len(vals))]
            ax.plot(
                [xs[i] for i in idx],
                rolling,
                "-",
                color=ORANGE,
                linewidth=1.5,
                label=f"rolling median ({window + 1})" if start == 0 else None,
            )
        for r in runs:
            if r.run.run_id not in first:
                continue
            x = xs[first[r.run.run_id]]
            ax.axvline(x, color=GREY, linestyle="--", linewidth=1)
            when = r.run.started.strftime("%m-%d %H:%M") if r.run.started else ""
            ax.annotate(
                f"{_short_keys(r)}  {when}",
                (x, 1.0),
                xycoords=("data", "axes fraction"),
                rotation=90,
                va="top",
                ha="right",
                fontsize=7,
                color=GREY,
            )
        for f in findings:
            if f.first_seen is not None and f.after_accept_len is not None:
                x = x_of(f.first_seen)
                ax.plot([x], [f.after_accept_len], "v", color=RED, markersize=9)
                ax.annotate(
                    f.rule,
                    (x, f.after_accept_len),
                    xytext=(4, -12),
                    textcoords="offset points",
                    fontsize=7,
                    color=RED,
                )
        ax.set_xlabel("Decode interval, in log order (idle gaps left out)" if ordinal else "time")
        ax.set_ylabel("accept length (tokens per verify step)")
        ax.legend(loc="lower left", fontsize=7)
        ax.grid(alpha=0.3)

    return draw


def per_run(runs: list[RunStats], s: SourceSeries) -> Callable[[Any, str], None]:
    def draw(ax: Any, _theme: str) -> None:
        ids = [r.run.run_id for r in runs if r.intervals]
        data = [[a for a, rid in zip(s.accept_len, s.run_id, strict=True) if rid == i] for i in ids]
        if data:
            ax.boxplot(data, tick_labels=ids, showfliers=False)
        ax.set_xlabel("run")
        ax.set_ylabel("accept length")
        ax.grid(alpha=0.3, axis="y")

    return draw


def against_load(s: SourceSeries) -> Callable[[Any, str], None]:
    def draw(ax: Any, _theme: str) -> None:
        for rid in dict.fromkeys(s.run_id):  # one colour per run: runs differ more than loads do
            pts = [(n, a) for n, a, r in zip(s.running, s.accept_len, s.run_id, strict=True) if r == rid]
            by: dict[int, list[float]] = {}
            for n, a in pts:
                by.setdefault(n, []).append(a)
            xs = sorted(by)
            line = ax.plot(
                xs, [statistics.median(by[x]) for x in xs], "-", linewidth=1.5, label=f"{rid} median"
            )
            ax.plot(
                [n for n, _ in pts],
                [a for _, a in pts],
                ".",
                markersize=3,
                alpha=0.35,
                color=line[0].get_color(),
            )
        ax.set_xlabel("#running-req (batch size)")
        ax.set_ylabel("accept length")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)

    return draw


def positions(s: SourceSeries) -> Callable[[Any, str], None]:
    def draw(ax: Any, _theme: str) -> None:
        values = s.positions()
        ax.bar(range(1, len(values) + 1), values, color=BLUE)
        ax.set_xlabel("draft position")
        ax.set_ylabel("mean acceptance")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3, axis="y")

    return draw


def plots_for(source: str, s: SourceSeries, runs: list[RunStats], findings: list[Finding]) -> list[Plot]:
    out = [
        Plot(
            "over-time",
            "Acceptance over time (dashed: run starts, labelled by what changed; ▼ findings)",
            _render(over_time(s, runs, findings), (11, 4)),
        ),
        Plot("per-run", "Accept length per run", _render(per_run(runs, s), (6, 3.6))),
        Plot("against-load", "Accept length against batch size", _render(against_load(s), (6, 3.6))),
    ]
    if s.positions():
        out.append(Plot("positions", "Acceptance per draft position", _render(positions(s), (6, 3.6))))
    return out
