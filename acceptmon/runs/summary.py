"""Per-run summaries of a log: what acceptance each server lifetime had.

Kept free of pandas on the default path so one-shot runs stay small; the
numbers are medians and request-weighted means, the two that an operator
compares across restarts.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime

from acceptmon.model import DecodeSample, Record, Run, SpecSample
from acceptmon.runs import SEGMENT_KINDS, RunTracker


@dataclass
class RunSummary:
    source: str
    run_id: str
    started: datetime | None
    settings: str
    change: str
    accept_lens: list[float] = field(default_factory=list)
    weights: list[int] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    last_ts: datetime | None = None

    @property
    def intervals(self) -> int:
        return len(self.accept_lens)

    def median_len(self) -> float | None:
        return statistics.median(self.accept_lens) if self.accept_lens else None

    def mean_rate(self) -> float | None:
        return statistics.fmean(self.rates) if self.rates else None


def describe_segment(run: Run) -> str | None:
    """``an online weight update (no restart; segment r3 at line 120)``, or None for a start."""
    words = SEGMENT_KINDS.get(run.kind)
    if words is None:
        return None
    detail = f"{run.reason}; " if run.reason and run.kind != "weight_update" else ""
    return f"{words} ({detail}no restart; segment {run.run_id} at line {run.started_lineno})"


def describe_change(run: Run) -> str:
    segment = describe_segment(run)
    if segment is not None:
        return segment
    if run.previous_run_id is None:
        return "first run seen"
    if run.diff is None:
        return "unknown (no config on one side)"
    if not run.diff:
        return "no change visible in server_args or draft config"
    parts = [f"{k}: {_short(a)} → {_short(b)}" for k, a, b in run.diff.changed[:3]]
    parts += [f"+{k}" for k, _ in run.diff.added[: 3 - len(parts)]]
    parts += [f"-{k}" for k, _ in run.diff.removed[: max(0, 3 - len(parts))]]
    extra = len(run.diff.keys()) - len(parts)
    return "; ".join(parts) + (f" (+{extra} more)" if extra > 0 else "")


def _short(value: object, limit: int = 40) -> str:
    text = repr(value) if not isinstance(value, list) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_settings(run: Run) -> str:
    s = run.spec
    if not s.algorithm:
        return "no speculative decoding"
    return f"{s.algorithm} steps={s.num_steps} topk={s.eagle_topk} draft_tokens={s.num_draft_tokens}"


class RunSummaries:
    """A pipeline sink that builds one ``RunSummary`` per run."""

    def __init__(self, tracker: RunTracker) -> None:
        self._tracker = tracker
        self.runs: dict[tuple[str, str], RunSummary] = {}

    def __call__(self, record: Record) -> None:
        if not isinstance(record, DecodeSample | SpecSample) or record.accept_len is None:
            return
        run = self._tracker.current(record.meta.source)
        if run is None:
            return
        key = (run.source, run.run_id)
        summary = self.runs.get(key)
        if summary is None:
            summary = self.runs[key] = RunSummary(
                run.source, run.run_id, run.started, describe_settings(run), describe_change(run)
            )
        summary.accept_lens.append(record.accept_len)
        summary.weights.append(record.running_req if isinstance(record, DecodeSample) else 1)
        if record.accept_rate is not None:
            summary.rates.append(record.accept_rate)
        summary.last_ts = record.meta.ts or summary.last_ts
