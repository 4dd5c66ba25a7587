"""Series cut to what a screen shows: per pixel column, each run's min, max and median.

A month of logs holds millions of intervals, and a plot a thousand pixels wide
shows a thousand columns: drawing every point costs seconds and megabytes of PNG
and shows nothing more. Each (run, column) bucket keeps its extremes, so a drop
or a spike of a single interval still reaches its value on screen, and a median
for the line through them. Buckets never span a restart, so there are at most
``columns + runs`` of them, however long the log.
"""

from __future__ import annotations

import bisect
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
        cols = [int((xs[i] - x0) * scale) for i in idx]
        # In column order, log order within a column (stable: an in-order run stays as it is),
        # so each bucket is one slice and its statistics run in C.
        order = sorted(range(len(idx)), key=cols.__getitem__)
        cols = [cols[p] for p in order]
        vals = [ys[idx[p]] for p in order]
        a = 0
        while a < len(cols):
            b = bisect.bisect_right(cols, cols[a], a)
            part = vals[a:b]
            out.at.append(idx[order[a]])
            out.lo.append(min(part))
            out.hi.append(max(part))
            out.mid.append(statistics.median(part if b - a > window else vals[max(0, b - 1 - window) : b]))
            a = b
        out.ends.append(len(out.at))
    return out


def by_value(xs: list[int], ys: list[float]) -> tuple[list[int], list[float], list[float], list[float]]:
    """(x, min, max, median) of ``ys`` per distinct ``x``, x ascending: bounded by the distinct
    batch sizes a server runs, not by how many intervals it logged."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    keys = [xs[i] for i in order]
    vals = [ys[i] for i in order]
    out: tuple[list[int], list[float], list[float], list[float]] = ([], [], [], [])
    a = 0
    while a < len(keys):
        b = bisect.bisect_right(keys, keys[a], a)
        part = vals[a:b]
        out[0].append(keys[a])
        out[1].append(min(part))
        out[2].append(max(part))
        out[3].append(statistics.median(part))
        a = b
    return out
