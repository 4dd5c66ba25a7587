"""Snapshots of the store's metrics at log times, written as OpenMetrics documents.

The live agent's metric families of one source, as ``collect.source_samples``
gives them (the mapping ``/metrics`` uses too), at a log time. OpenMetrics wants
each series' points contiguous and in time order, and a histogram's buckets,
count and sum together, so points are kept per series and written family by
family when a part of the history is cut (``parts.Parts``) or at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

from acceptmon.metrics.collect import MetricDef, SourceSample

#: Label sets are kept as sorted tuples (hashable, stable order in the output).
Labels = tuple[tuple[str, str], ...]


#: One series' points: [(ts, [(sample head, value), …])], in time order; a sample's head is its
#: name and labels as written (``name{labels} ``), rendered once per sample of a series.
Series = list[tuple[float, list[tuple[str, float]]]]


@dataclass
class Family:
    name: str
    type: str
    help: str
    #: series key (labels without ``le``) → its points
    points: dict[Labels, Series] = field(default_factory=dict)


class Recorder:
    """Collects time-stamped snapshots of metric families."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        """``extra`` labels go on every sample (``job`` and ``instance``, as a scrape adds them)."""
        self.families: dict[str, Family] = {}
        #: Points recorded in all parts, and in the part being recorded.
        self.points = self.part = 0
        #: The latest instant recorded (in any part).
        self.until = -math.inf
        self._extra = extra or {}
        #: (sample name, label values) → its series' points and its head.
        self._named: dict[tuple[str, tuple[str, ...]], tuple[Series, str]] = {}
        #: A head → its sample's name and labels (``samples``).
        self._heads: dict[str, tuple[str, Labels]] = {}
        self._cut: Callable[[], None] | None = None
        self._part_points = 0

    def cut_every(self, points: int, cut: Callable[[], None]) -> None:
        """Call ``cut`` before a snapshot once the part holds ``points`` points, if the
        snapshot is at an instant after every one recorded: ``cut`` writes the part and
        ``clear``s it, so no two parts share an instant (nor a point of one series)."""
        self._part_points, self._cut = points, cut

    def snapshot(self, families: Iterable[tuple[MetricDef, Iterable[SourceSample]]], ts: float) -> None:
        """Record one source's samples of each family (``collect.source_samples``) at ``ts``.

        A series' samples come together (a histogram's buckets, count and sum), so each run of
        samples of one series is one point; each series is looked up once per snapshot, by the
        sample's name and label values (thousands of snapshots repeat the same series)."""
        if ts > self.until:
            if self._cut is not None and self.part >= self._part_points:
                self._cut()
            self.until = ts
        named, isfinite, added = self._named, math.isfinite, 0
        for m, samples in families:
            series: Series | None = None
            points: list[tuple[str, float]] = []
            for name, names, values, value in samples:
                if not isfinite(value):
                    continue
                hit = named.get((name, values))
                if hit is None:
                    hit = named[(name, values)] = self._series(m, name, dict(zip(names, values, strict=True)))
                own, head = hit
                if own is not series:
                    series, points = own, []
                    if own and own[-1][0] >= ts:
                        own[-1] = (own[-1][0], points)  # same instant: the later state wins
                    else:
                        own.append((ts, points))
                        added += 1
                points.append((head, value))
        self.points += added
        self.part += added

    def _series(self, m: MetricDef, name: str, own: dict[str, str]) -> tuple[Series, str]:
        """The point list of a sample's series (its labels without ``le``) and its head."""
        labels = {**self._extra, **own}
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        ordered = tuple(sorted(labels.items()))
        head = f"{name}{_labels(ordered)} "
        self._heads[head] = (name, ordered)
        f = self.families.get(m.name)
        if f is None:
            f = self.families[m.name] = Family(m.name, m.type, m.help)
        return f.points.setdefault(key, []), head

    def samples(self) -> Iterator[tuple[float, str, Labels, float]]:
        """The part's samples: (time, name, labels, value), series by series."""
        heads = self._heads
        for f in self.families.values():
            for series in f.points.values():
                for ts, points in series:
                    for head, value in points:
                        yield (ts, *heads[head], value)

    def clear(self) -> None:
        """Forget the points of the part written (the series stay known)."""
        for f in self.families.values():
            for series in f.points.values():
                series.clear()
        self.part = 0

    def write(self, out: IO[str]) -> None:
        """The part recorded since the last ``clear`` as one OpenMetrics document (each family
        with points in it, its TYPE and HELP first), in one write."""
        number = _number
        ats: dict[float, str] = {}
        lines: list[str] = []
        for f in sorted(self.families.values(), key=lambda f: f.name):
            if not any(f.points.values()):
                continue
            lines += (f"# TYPE {f.name} {_om_type(f.type)}\n", f"# HELP {f.name} {_escape_help(f.help)}\n")
            for key in sorted(f.points):
                for ts, points in f.points[key]:
                    at = ats.get(ts)
                    if at is None:
                        at = ats[ts] = f" {ts:.3f}\n"
                    for head, value in points:
                        lines += (head, number(value), at)
        lines.append("# EOF\n")
        out.write("".join(lines))


def _om_type(t: str) -> str:
    return {"counter": "counter", "gauge": "gauge", "histogram": "histogram", "info": "info"}.get(
        t, "unknown"
    )


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))
