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
from operator import add, itemgetter
from typing import IO

from acceptmon.metrics.collect import MetricDef, SourceSample

#: Label sets are kept as sorted tuples (hashable, stable order in the output).
Labels = tuple[tuple[str, str], ...]


#: One series' points: [(ts, heads, values)], in time order; a sample's head is its name and
#: labels as written (``name{labels} ``), rendered once per series and shared by its points
#: while its samples stay the same; ``heads[i]`` goes with ``values[i]``.
Series = list[tuple[float, tuple[str, ...], list[float]]]

#: A snapshot's series, run by run in sample order: (its points, its heads, its samples' slice).
Layout = tuple[tuple[Series, tuple[str, ...], int, int], ...]

#: Layouts kept (``Recorder._layouts``): one per source and set of series seen; past this
#: many (label values that keep changing) they are forgotten and found again.
LAYOUTS = 4096

_key = itemgetter(0, 2)  # a sample's name and label values: what names its series
_value = itemgetter(3)
_start = itemgetter(1)


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
        #: A snapshot's (where each family starts, its samples' names and label values) → its
        #: layout and whether its series are distinct (``_layout``). The family does not count:
        #: a series, once known, is found by its name and label values alone.
        self._layouts: dict[
            tuple[tuple[int, ...], tuple[tuple[str, tuple[str, ...]], ...]], tuple[Layout, bool]
        ] = {}
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
        samples of one series is one point. Thousands of snapshots repeat the same series in the
        same order, so the snapshot's sequence of series names is looked up whole (hashed and
        compared in C, not sample by sample) and, once known, each series takes its slice of the
        values; only a new sequence is walked sample by sample (``_layout``)."""
        fresh = ts > self.until  # no series has a point at ts or later
        if fresh:
            if self._cut is not None and self.part >= self._part_points:
                self._cut()
            self.until = ts
        rows: list[SourceSample] = []
        spans: list[tuple[MetricDef, int]] = []
        for m, samples in families:
            spans.append((m, len(rows)))
            rows += samples
        values = list(map(_value, rows))
        if not all(map(math.isfinite, values)):  # not written: as if they were not there
            rows, spans = _finite(spans, rows)
            values = list(map(_value, rows))
        key = (tuple(map(_start, spans)), tuple(map(_key, rows)))
        known = self._layouts.get(key)
        if known is None:
            if len(self._layouts) >= LAYOUTS:
                self._layouts.clear()
            known = self._layouts[key] = self._layout(spans, rows)
        layout, distinct = known
        if fresh and distinct:  # the usual case: one new point per series
            for own, heads, start, end in layout:
                own.append((ts, heads, values[start:end]))
            added = len(layout)
        else:
            added = 0
            for own, heads, start, end in layout:
                points = values[start:end]
                if own and own[-1][0] >= ts:
                    own[-1] = (own[-1][0], heads, points)  # same instant: the later state wins
                else:
                    own.append((ts, heads, points))
                    added += 1
        self.points += added
        self.part += added

    def _layout(self, spans: list[tuple[MetricDef, int]], rows: list[SourceSample]) -> tuple[Layout, bool]:
        """The runs of samples of one series, family by family (a family starts a run), each
        series looked up by its sample's name and label values (made known if new); and whether
        the runs' series are distinct (else a later run of a series replaces its earlier one)."""
        named, out = self._named, []
        for (m, start), end in zip(spans, _ends(spans, len(rows)), strict=True):
            series: Series | None = None
            heads: list[str] = []
            for i in range(start, end):
                name, names, values, _ = rows[i]
                hit = named.get((name, values))
                if hit is None:
                    hit = named[(name, values)] = self._series(m, name, dict(zip(names, values, strict=True)))
                own, head = hit
                if own is not series:
                    if series is not None:
                        out.append((series, tuple(heads), i - len(heads), i))
                    series, heads = own, []
                heads.append(head)
            if series is not None:
                out.append((series, tuple(heads), end - len(heads), end))
        return tuple(out), len({id(run[0]) for run in out}) == len(out)

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
                for ts, names, values in series:
                    for head, value in zip(names, values, strict=True):
                        yield (ts, *heads[head], value)

    def clear(self) -> None:
        """Forget the points of the part written (the series stay known)."""
        for f in self.families.values():
            for series in f.points.values():
                series.clear()
        self.part = 0

    def write(self, out: IO[str]) -> None:
        """The part recorded since the last ``clear`` as one OpenMetrics document (each family
        with points in it, its TYPE and HELP first), in one write. Values and times repeat within
        a part, so each text is made once (``_Texts``, ``_Times``); a point of several samples
        (a histogram's) is joined in C."""
        text, at_of = _Texts().__getitem__, _Times().__getitem__
        lines: list[str] = []
        for f in sorted(self.families.values(), key=lambda f: f.name):
            if not any(f.points.values()):
                continue
            lines += (f"# TYPE {f.name} {_om_type(f.type)}\n", f"# HELP {f.name} {_escape_help(f.help)}\n")
            for key in sorted(f.points):
                for ts, heads, values in f.points[key]:
                    at = at_of(ts)
                    if len(heads) == 1:
                        lines += (heads[0], text(values[0]), at)
                    else:
                        lines += (at.join(map(add, heads, map(text, values))), at)
        lines.append("# EOF\n")
        out.write("".join(lines))


def _finite(
    spans: list[tuple[MetricDef, int]], rows: list[SourceSample]
) -> tuple[list[SourceSample], list[tuple[MetricDef, int]]]:
    """The samples with finite values, and where each family's begin among them."""
    kept: list[SourceSample] = []
    out: list[tuple[MetricDef, int]] = []
    for (m, start), end in zip(spans, _ends(spans, len(rows)), strict=True):
        out.append((m, len(kept)))
        kept += (row for row in rows[start:end] if math.isfinite(row[3]))
    return kept, out


def _ends(spans: list[tuple[MetricDef, int]], n: int) -> list[int]:
    """Where each family's samples end, of ``n`` (the next one's start)."""
    return [start for _, start in spans[1:]] + [n] if spans else []


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


class _Times(dict[float, str]):
    """Sample times' texts (`` ts\n``, as each sample line ends), each made once."""

    def __missing__(self, ts: float) -> str:
        at = self[ts] = f" {ts:.3f}\n"
        return at


class _Texts(dict[float, str]):
    """Values' texts as ``_number`` writes them, each made once: equal values (1 and 1.0, 0.0
    and -0.0) get the same text from ``_number``, so a value's equals may share its entry."""

    def __missing__(self, value: float) -> str:
        text = self[value] = _number(value)
        return text


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))
