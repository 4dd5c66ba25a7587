"""The run table and verdict as text that fits 80 columns, as rich when on a terminal, or as JSON.

Long config changes wrap at spaces, never inside a key name; numbers keep
their columns.
"""

from __future__ import annotations

import textwrap
from datetime import datetime

from acceptmon.detect.runstats import RunStats
from acceptmon.detect.verdict import Verdict
from acceptmon.text.printable import printable

WIDTH = 80
INDENT = "      "
HEADER = f"{'run':<6}{'started':<21}{'lasted':<12}{'intervals':>9}  {'accept len [95%]':<20}{'rate':>5}"


def duration_words(seconds: float | None) -> str:
    """A duration as people say it: ``45 s``, ``12 min``, ``6 h 5 min``, ``2 d 3 h``."""
    if seconds is None or seconds < 0:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(s // 3600, 24)
    return f"{d} d {h} h" if h else f"{d} d"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _started(ts: datetime | None) -> str:
    return ts.replace(microsecond=0).isoformat(sep=" ")[:19] if ts else "-"


def _lasted(s: RunStats) -> float | None:
    start, end = s.run.started, s.last_ts
    return (end - start).total_seconds() if start and end else None


def _accept(s: RunStats) -> str:
    m = s.median()
    return "-" if m is None else f"{m[0]:.2f} [{m[1]:.2f}, {m[2]:.2f}]"


def _rate(s: RunStats) -> str:
    r = s.accept_rate()
    return "-" if r is None else f"{r:.0%}"


def _wrap(text: str, first: str) -> list[str]:
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=INDENT + first,
        subsequent_indent=INDENT + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def plain(
    source: str, runs: list[RunStats], verdict: Verdict | None, notes: list[str], latest: int | None = None
) -> str:
    """The table for one source, then its verdict, within 80 columns; only the ``latest`` runs
    when given (a report of thousands of runs). Log-derived text is made :func:`printable`."""
    total = sum(r.intervals for r in runs)
    # The source on a line of its own: a path is never cut, whatever its length.
    out = [source, f"{_n(len(runs), 'run')}, {_n(total, 'Decode interval')}", "", HEADER]
    shown = runs if latest is None or len(runs) <= latest else runs[-latest:]
    if len(shown) < len(runs):
        out.append(f"({_n(len(runs) - len(shown), 'earlier run')} left out: acceptmon runs lists every run)")
    for r in shown:
        out.append(
            f"{r.run.run_id:<6}{_started(r.run.started):<21}{duration_words(_lasted(r)):<12}"
            f"{r.intervals:>9}  {_accept(r):<20}{_rate(r):>5}"
        )
        out += _wrap(r.settings(), "")
        out += _wrap(r.change(), "opened by: ")
    out.append("")
    out += textwrap.wrap(
        "verdict: " + (verdict.words() if verdict else "no runs with Decode intervals"),
        WIDTH,
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    if verdict is not None and verdict.good is not None:
        out += textwrap.wrap(
            "against the last good run: " + verdict.good.words(),
            WIDTH,
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    for note in notes:
        out += textwrap.wrap("note: " + note, WIDTH, subsequent_indent="  ", break_long_words=False)
    return "\n".join(printable(line) for line in out)
