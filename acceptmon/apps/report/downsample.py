"""Series cut to what a screen shows: per pixel column, each run's min, max and median.

A month of logs holds millions of intervals, and a plot a thousand pixels wide
shows a thousand columns: drawing every point costs seconds and megabytes of PNG
and shows nothing more. Each (run, column) bucket keeps its extremes, so a drop
or a spike of a single interval still reaches its value on screen, and a median
for the line through them. Buckets never span a restart, so there are at most
``columns + runs`` of them, however long the log. The passes over every interval
are numpy's (matplotlib's own dependency): a month costs about what a day does.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Floats = Sequence[float] | npt.NDArray[np.float64]


@dataclass(slots=True)
class Envelope:
    """Buckets in run order; ``at`` is each bucket's first interval (its x on the plot)."""

    at: list[int] = field(default_factory=list)
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    mid: list[float] = field(default_factory=list)
    #: Where each run's buckets end (exclusive): the median line breaks there.
    ends: list[int] = field(default_factory=list)


def _groups(keys: npt.NDArray[np.int64]) -> tuple[list[int], list[int]]:
    """Starts and ends of the stretches of equal ``keys`` (sorted, not empty)."""
    starts = np.flatnonzero(np.diff(keys, prepend=keys[0] - 1))
    return starts.tolist(), [*starts[1:].tolist(), len(keys)]


def envelope(xs: Floats, ys: Floats, runs: Iterable[Sequence[int]], columns: int, window: int) -> Envelope:
    """``ys`` bucketed by the column ``xs`` falls in, within each run (its interval indices, in
    log order). A bucket's median is over its own intervals, or over the run's last
    ``window + 1`` up to it when it holds fewer: with fewer points than columns this is the
    rolling median, point for point."""
    out = Envelope()
    x, y = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if not x.size:
        return out
    x0, x1 = float(x.min()), float(x.max())
    column = ((x - x0) * ((columns - 1) / (x1 - x0) if x1 > x0 else 0.0)).astype(np.int64)
    for members in runs:
        idx = np.asarray(members, dtype=np.int64)
        # In column order, log order within a column (stable: an in-order run stays as it is).
        order = np.argsort(column[idx], kind="stable")
        starts, ends = _groups(column[idx][order])
        v = y[idx[order]]
        vals = v.tolist()
        out.at += idx[order[starts]].tolist()
        out.lo += np.minimum.reduceat(v, starts).tolist()
        out.hi += np.maximum.reduceat(v, starts).tolist()
        out.mid += [
            statistics.median(vals[a:b] if b - a > window else vals[max(0, b - 1 - window) : b])
            for a, b in zip(starts, ends, strict=True)
        ]
        out.ends.append(len(out.at))
    return out


def by_value(
    xs: Sequence[int] | npt.NDArray[np.int64], ys: Floats
) -> tuple[list[int], list[float], list[float], list[float]]:
    """(x, min, max, median) of ``ys`` per distinct ``x``, x ascending: bounded by the distinct
    batch sizes a server runs, not by how many intervals it logged."""
    x, y = np.asarray(xs, dtype=np.int64), np.asarray(ys, dtype=np.float64)
    if not x.size:
        return [], [], [], []
    order = np.lexsort((y, x))  # by x, each x's values ascending
    keys, vals = x[order], y[order]
    starts, ends = _groups(keys)
    first, after = np.asarray(starts), np.asarray(ends)
    n = after - first
    median = (vals[first + (n - 1) // 2] + vals[first + n // 2]) / 2
    return keys[first].tolist(), vals[first].tolist(), vals[after - 1].tolist(), median.tolist()
