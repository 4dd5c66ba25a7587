"""Snapshots of the store's metrics at log times, written as OpenMetrics documents.

The live agent's metric families of one source, as ``collect.source_samples``
gives them (the mapping ``/metrics`` uses too), at a log time. OpenMetrics wants
each series' points contiguous and in time order, and a histogram's buckets,
count and sum together, so points are kept per series and written family by
family when a part of the history is cut (``parts.Parts``) or at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO

from acceptmon.metrics.collect import MetricDef, SourceSample

#: Label sets are kept as sorted tuples (hashable, stable order in the output).
Labels = tuple[tuple[str, str], ...]


#: One series' points: [(ts, [(sample name, labels, value), …])], in time order.
Series = list[tuple[float, list[tuple[str, Labels, float]]]]


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
        #: Points recorded in all parts, and sample lines in the part being recorded.
        self.points = self.lines = 0
        #: The latest instant recorded (in any part).
        self.until = -math.inf
        self._extra = extra or {}
        self._named: dict[tuple[str, tuple[str, ...]], tuple[Series, Labels]] = {}
        self._cut: Callable[[], None] | None = None
        self._part_lines = 0

    def cut_every(self, lines: int, cut: Callable[[], None]) -> None:
        """Call ``cut`` before a snapshot once the part holds ``lines`` sample lines, if the
        snapshot is at an instant after every one recorded: ``cut`` writes the part and
        ``clear``s it, so no two parts share an instant (nor a point of one series)."""
        self._part_lines, self._cut = lines, cut

    def snapshot(self, families: Iterable[tuple[MetricDef, Iterable[SourceSample]]], ts: float) -> None:
        """Record one source's samples of each family (``collect.source_samples``) at ``ts``.

        A series' samples come together (a histogram's buckets, count and sum), so each run of
        samples of one series is one point; each series is looked up once per snapshot, by the
        sample's name and label values (thousands of snapshots repeat the same series)."""
        if self._cut is not None and self.lines >= self._part_lines and ts > self.until:
            self._cut()
        self.until = max(self.until, ts)
        named, isfinite, lines = self._named, math.isfinite, 0
        for m, samples in families:
            series: list[tuple[float, list[tuple[str, Labels, float]]]] | None = None
            points: list[tuple[str, Labels, float]] = []
            for name, names, values, value in samples:
                if not isfinite(value):
                    continue
                hit = named.get((name, values))
                if hit is None:
                    hit = named[(name, values)] = self._series(m, dict(zip(names, values, strict=True)))
                own, labels = hit
                if own is not series:
                    series, points = own, []
                    if own and own[-1][0] >= ts:
                        own[-1] = (own[-1][0], points)  # same instant: the later state wins
                    else:
                        own.append((ts, points))
                        self.points += 1
                points.append((name, labels, value))
                lines += 1
        self.lines += lines

    def _series(self, m: MetricDef, own: dict[str, str]) -> tuple[Series, Labels]:
        """The point list of a sample's series (its labels without ``le``) and its labels."""
        key, labels = self._labels(own)
        f = self.families.get(m.name)
        if f is None:
            f = self.families[m.name] = Family(m.name, m.type, m.help)
        return f.points.setdefault(key, []), labels

    def _labels(self, own: dict[str, str]) -> tuple[Labels, Labels]:
        """A sample's series key (its labels without ``le``) and its labels, with the extra ones."""
        labels = {**self._extra, **own}
        return tuple(sorted((k, v) for k, v in labels.items() if k != "le")), tuple(sorted(labels.items()))

    def clear(self) -> None:
        """Forget the points of the part written (the series stay known)."""
        for f in self.families.values():
            for series in f.points.values():
                series.clear()
        self.lines = 0

    def write(self, out: IO[str]) -> None:
        """The part recorded since the last ``clear`` as one OpenMetrics document (each family
        with points in it, its TYPE and HELP first)."""
        number = _number
        for f in sorted(self.families.values(), key=lambda f: f.name):
            if not any(f.points.values()):
                continue
            out.write(f"# TYPE {f.name} {_om_type(f.type)}\n")
            out.write(f"# HELP {f.name} {_escape_help(f.help)}\n")
            for key in sorted(f.points):
                heads: dict[tuple[str, Labels], str] = {}  # a series' few sample heads, rendered once
                lines: list[str] = []
                for ts, samples in f.points[key]:
                    at = f" {ts:.3f}\n"
                    for name, labels, value in samples:
                        head = heads.get((name, labels))
                        if head is None:
                            head = heads[(name, labels)] = f"{name}{_labels(labels)} "
                        lines += (head, number(value), at)
                out.write("".join(lines))
        out.write("# EOF\n")


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
