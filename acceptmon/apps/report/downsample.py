"""Series cut to what a screen shows: per pixel column, each run's min, max and median.

A month of logs holds millions of intervals, and a plot a thousand pixels wide
shows a thousand columns: drawing every point costs seconds and megabytes of PNG
and shows nothing more. Each (run, column) bucket keeps its extremes, so a drop
or a spike of a single interval still reaches its value on screen, and a median
for the line through them. Buckets never span a restart, so there are at most
``columns + runs`` of them, however long the log.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(slots=True)
class Envelope:
    """Buckets in run order; ``at`` is each bucket's first interval (its x on the plot)."""

    at: list[int] = field(default_factory=list)
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    mid: list[float] = field(default_factory=list)
    #: Where each run's buckets end (exclusive): the median line breaks there.
    ends: list[int] = field(default_factory=list)


def envelope(
    xs: Sequence[float], ys: Sequence[float], runs: Iterable[list[int]], columns: int, window: int
) -> Envelope:
    """``ys`` bucketed by the column ``xs`` falls in, within each run (its interval indices, in
    log order). A bucket's median is over its own intervals, or over the run's last
    ``window + 1`` up to it when it holds fewer: with fewer points than columns this is the
    rolling median, point for point."""
    out = Envelope()
    if not xs:
        return out
    x0, x1 = min(xs), max(xs)
    scale = (columns - 1) / (x1 - x0) if x1 > x0 else 0.0
    for idx in runs:
        buckets: dict[int, list[int]] = {}
        for pos, i in enumerate(idx):
            buckets.setdefault(int((xs[i] - x0) * scale), []).append(pos)
        vals = [ys[i] for i in idx]
        for col in sorted(buckets):
            members = buckets[col]
            mine = [vals[p] for p in members]
            last = members[-1]
            span = max(window, len(members) - 1)
            out.at.append(idx[members[0]])
            out.lo.append(min(mine))
            out.hi.append(max(mine))
            out.mid.append(statistics.median(vals[max(0, last - span) : last + 1]))
        out.ends.append(len(out.at))
    return out


def by_value(pairs: Iterable[tuple[int, float]]) -> tuple[list[int], list[float], list[float], list[float]]:
    """(x, min, max, median) of ``y`` per distinct ``x``, x ascending: bounded by the distinct
    batch sizes a server runs, not by how many intervals it logged."""
    by: dict[int, list[float]] = {}
    for x, y in pairs:
        by.setdefault(x, []).append(y)
    xs = sorted(by)
    return (
        xs,
        [min(by[x]) for x in xs],
        [max(by[x]) for x in xs],
        [statistics.median(by[x]) for x in xs],
    )
