"""Snapshots of the store's metrics at log times, written as one OpenMetrics document.

The live agent's metric families, sampled per source whenever that source's
log time has moved ``step`` seconds on; each sample carries the log time of the
line that completed it. OpenMetrics wants each series' points contiguous and in
time order, and a histogram's buckets, count and sum together, so points are
kept per series and written family by family at the end.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

#: Label sets are kept as sorted tuples (hashable, stable order in the output).
Labels = tuple[tuple[str, str], ...]


@dataclass
class Family:
    name: str
    type: str
    help: str
    #: series key (labels without ``le``) → [(ts, [(sample name, labels, value), …])]
    points: dict[Labels, list[tuple[float, list[tuple[str, Labels, float]]]]] = field(default_factory=dict)


class Recorder:
    """Collects time-stamped snapshots of metric families."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        """``extra`` labels go on every sample (``job`` and ``instance``, as a scrape adds them)."""
        self.families: dict[str, Family] = {}
        self.points = 0
        self._extra = extra or {}
        self._named: dict[tuple[Any, ...], tuple[Labels, Labels, str | None]] = {}

    def snapshot(self, families: Iterable[Any], ts: float, source: str) -> None:
        """Record every sample of ``source`` in ``families`` (prometheus-client Metrics) at ``ts``."""
        named = self._named
        for fam in families:
            grouped: dict[Labels, list[tuple[str, Labels, float]]] = {}
            for sample in fam.samples:
                if not math.isfinite(sample.value):
                    continue
                # A series' labels are worked out once: snapshots repeat the same series.
                name = (sample.name, *sample.labels.items())
                hit = named.get(name)
                if hit is None:
                    hit = named[name] = self._labels(sample.labels)
                key, labels, of = hit
                if of == source:
                    grouped.setdefault(key, []).append((sample.name, labels, sample.value))
            if not grouped:
                continue
            f = self.families.get(fam.name)
            if f is None:
                f = self.families[fam.name] = Family(fam.name, fam.type, fam.documentation)
            for key, samples in grouped.items():
                series = f.points.setdefault(key, [])
                if series and series[-1][0] >= ts:
                    series[-1] = (series[-1][0], samples)  # same instant: the later state wins
                else:
                    series.append((ts, samples))
                    self.points += 1

    def _labels(self, own: dict[str, str]) -> tuple[Labels, Labels, str | None]:
        """A sample's series key (its labels without ``le``), its labels with the extra ones,
        and its source."""
        labels = {**self._extra, **own}
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        return key, tuple(sorted(labels.items())), labels.get("source")

    def write(self, out: IO[str]) -> None:
        for f in sorted(self.families.values(), key=lambda f: f.name):
            out.write(f"# TYPE {f.name} {_om_type(f.type)}\n")
            out.write(f"# HELP {f.name} {_escape_help(f.help)}\n")
            for key in sorted(f.points):
                heads: dict[tuple[str, Labels], str] = {}  # a series' few sample heads, rendered once
                for ts, samples in f.points[key]:
                    at = f" {ts:.3f}\n"
                    for name, labels, value in samples:
                        head = heads.get((name, labels))
                        if head is None:
                            head = heads[(name, labels)] = f"{name}{_labels(labels)} "
                        out.write(head + _number(value) + at)
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
