"""Per-run acceptance: the numbers behind `acceptmon runs`, `/api/runs` and the verdict, and their JSON.

A pipeline sink, like the detector: every Decode (or vLLM) interval lands in
its run's summary and in its run's load-stratified histogram, so the verdict
is the detector's comparison on exactly the intervals the table counts.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import reduce
from itertools import repeat
from operator import add, mul
from typing import Any

from acceptmon.detect.measure import adaptive, to_per_token
from acceptmon.detect.series import Hists, Strata, centi, load_bucket
from acceptmon.detect.settings import DetectSettings
from acceptmon.detect.stats import median_ci
from acceptmon.detect.verdict import RunLevel, Verdict, judge
from acceptmon.model import DecodeSample, Record, Run, SpecSample
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch
from acceptmon.runs.summary import describe_change, describe_settings
from acceptmon.runs.sums import exact
from acceptmon.statefiles.strict import WrongShape, as_float, as_int, as_key, as_time

log = logging.getLogger("acceptmon.detect")

#: Intervals the live view draws.
RECENT = 240
#: A run-table cell (load bucket, accept len in hundredths) as one int: bucket × ``_CELL`` + hundredths
#: (accept lengths are at most ``MAX_ACCEPT_LEN``, far below ``_CELL`` hundredths).
_CELL = 1 << 20
#: Runs per source whose stats a checkpoint keeps (the agent keeps as many run snapshots).
KEEP = 50


@dataclass
class RunStats:
    """One run's acceptance as ``acceptmon runs`` reports it."""

    run: Run
    hists: Hists = field(default_factory=Hists)
    rates: list[float] = field(default_factory=list)
    tokens: float = 0.0
    rate_tokens: float = 0.0
    last_ts: datetime | None = None
    #: The latest intervals' accept len, for the live view's sparkline.
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))
    #: Intervals with acceptance counts but no accept len (llama.cpp's old line): the rate only.
    counted: int = 0
    #: Draft positions the engine reported rates for (LMDeploy, vLLM): the steps, when unlogged.
    positions: int = 0
    #: The counts-only intervals' accept rates in per mille: the verdict when no run has accept lens.
    rate_hists: Hists = field(default_factory=Hists)

    @property
    def intervals(self) -> int:
        return self.hists.n

    def median(self) -> tuple[float, float, float] | None:
        """Median accept len and its 95% interval over every interval of the run."""
        pooled: dict[int, int] = {}
        for h in self.hists.strata.values():
            for value, n in h.items():
                pooled[value] = pooled.get(value, 0) + n
        if not pooled:
            return None
        ci = median_ci(pooled)
        return ci.median / 100, ci.low / 100, ci.high / 100

    def accept_rate(self) -> float | None:
        """Accept rate weighted by the requests each interval served (tokens, not intervals)."""
        return self.rate_tokens / self.tokens if self.tokens else None

    def settings(self) -> str:
        top = max((v for h in self.hists.strata.values() for v in h), default=None)
        return describe_settings(
            self.run, top / 100 if top is not None else None, self.counted, self.positions
        )

    def change(self) -> str:
        return describe_change(self.run)

    def changed_keys(self) -> list[str]:
        return self.run.diff.keys() if self.run.diff else []

    def lasted(self) -> float | None:
        """Seconds from the run's start to its latest interval."""
        start, end = self.run.started, self.last_ts
        return (end - start).total_seconds() if start and end else None

    def level(self, rates: bool = False) -> RunLevel:
        """What the verdict compares: accept lens, or (``rates``) the counts-only accept rates."""
        config = self.run.config.hash if self.run.config else f"unknown:{self.run.run_id}"
        if rates:  # counts only (no accept len): rates compare as they are, never in α
            return RunLevel(self.run.run_id, config, self.rate_hists.copy(), self.rate_hists.n)
        spec = self.run.spec
        chain = spec.num_steps if (spec.eagle_topk or 1) == 1 else None
        return RunLevel(self.run.run_id, config, self.hists.copy(), self.intervals, chain)


def levels(stats: list[RunStats]) -> list[RunLevel]:
    """What the verdict judges, oldest first: an adaptive run whole, in α, its step-change
    segments folded into it (the server reacting to acceptance is not a new run)."""
    out: list[RunLevel] = []
    for s in stats:
        level = s.level()
        if s.run.kind == "spec_params" and out and (out[-1].alpha or out[-1].steps is not None):
            if level.steps is None:
                continue  # a segment without steps to convert: left out, never a run of its own
            into = out[-1] if out[-1].alpha else _in_alpha(out[-1])
            out[-1] = replace(
                into,
                strata=_merged(into.strata, to_per_token(level.strata, level.steps)),
                intervals=into.intervals + level.intervals,
            )
        elif adaptive(s.run) and level.steps is not None:
            out.append(_in_alpha(level))
        else:
            out.append(level)
    return out


def _in_alpha(level: RunLevel) -> RunLevel:
    assert level.steps is not None
    return replace(level, strata=to_per_token(level.strata, level.steps), alpha=True)


def _merged(a: Strata, b: Strata) -> Strata:
    out = {bucket: dict(h) for bucket, h in a.items()}
    for bucket, h in b.items():
        into = out.setdefault(bucket, {})
        for value, n in h.items():
            into[value] = into.get(value, 0) + n
    return out


class RunTable:
    """A pipeline consumer collecting ``RunStats`` per source, in run order."""

    def __init__(self, tracker: RunTracker, config: DetectSettings | None = None) -> None:
        self._tracker = tracker
        self._edges = (config or DetectSettings()).load_buckets
        self.runs: dict[str, dict[str, RunStats]] = {}

    def observe_run_start(self, run: Run) -> None:
        self.runs.setdefault(run.source, {})[run.run_id] = RunStats(run)

    def observe(self, record: Record) -> None:
        if not isinstance(record, DecodeSample | SpecSample):
            return
        run = self._tracker.current(record.meta.source)
        if run is None or (record.accept_len is None and record.accept_rate is None):
            return
        stats = self.runs.setdefault(run.source, {}).get(run.run_id)
        if stats is None:
            stats = self.runs[run.source][run.run_id] = RunStats(run)
        if isinstance(record, SpecSample):
            stats.positions = max(stats.positions, len(record.per_position))
        if record.accept_len is None:
            stats.rate_hists.add(0, round(1000 * (record.accept_rate or 0.0)))
            stats.counted += 1
            stats.tokens += 1.0
            stats.rate_tokens += record.accept_rate or 0.0
            stats.last_ts = record.meta.ts or stats.last_ts
            return
        running = record.running_req if isinstance(record, DecodeSample) else None
        stats.hists.add(load_bucket(running, self._edges), centi(record.accept_len))
        if record.accept_rate is not None:
            weight = float(running or 1)
            stats.tokens += weight
            stats.rate_tokens += weight * record.accept_rate
        stats.recent.append(record.accept_len)
        stats.last_ts = record.meta.ts or stats.last_ts

    def observe_batch(self, batch: DecodeBatch) -> None:
        """A stretch of Decode lines of the current run, column by column (the fast path)."""
        lens = batch.lens
        run = self._tracker.current(batch.source)
        if lens is None or run is None or not batch.n:
            return
        stats = self.runs.setdefault(run.source, {}).get(run.run_id)
        if stats is None:
            stats = self.runs[run.source][run.run_id] = RunStats(run)
        slots, running = batch.spec.slots, batch.running
        # Counted per distinct (load bucket, accept len) pair, a batch holds few of them; each
        # pair as one int (no tuple per line): hundredths stay below ``_CELL``.
        buckets, centis = batch.strata(self._edges)
        cells = Counter(map(add, map(mul, buckets, repeat(_CELL)), centis))
        strata, hists = stats.hists.strata, stats.hists
        for cell, n in cells.items():
            h = strata.setdefault(cell // _CELL, {})
            value = cell % _CELL
            h[value] = h.get(value, 0) + n
        hists.n += len(lens)
        if slots:
            # runs.rate.accept_rate once per distinct length (a batch holds few), the weighted
            # rates added line by line from the running sums as the record path adds them (so
            # any chunking gives the same float sums): ``reduce`` folds left to right. A whole
            # weight times a rate is the same float as the weight as a float times it.
            rate_of = {a: round(min(1.0, max(0.0, (a - 1.0) / slots)), 4) for a in set(lens)}
            weights = running if min(running) > 0 else [r or 1 for r in running]
            total = sum(weights)
            if exact(stats.tokens, total):  # whole numbers: every partial sum exact, as one sum
                stats.tokens = float(int(stats.tokens) + total)
            else:
                stats.tokens = reduce(add, map(float, weights), stats.tokens)
            stats.rate_tokens = reduce(
                add, map(mul, weights, map(rate_of.__getitem__, lens)), stats.rate_tokens
            )
        stats.recent.extend(lens[-RECENT:])
        stats.last_ts = batch.stamp(batch.n - 1)[0] or stats.last_ts

    def sources(self) -> list[str]:
        return sorted(self.runs)

    def of(self, source: str) -> list[RunStats]:
        return list(self.runs.get(source, {}).values())

    def verdict(self, source: str) -> Verdict | None:
        runs = self.of(source)
        if any(s.hists.n for s in runs) or not any(s.counted for s in runs):
            return judge(levels(runs))
        return _measured(judge([s.level(rates=True) for s in runs]), "accept rate")

    def checkpoint(self) -> dict[str, Any]:
        """What survives a restart: each kept run's histograms and rate sums (bounded by ``KEEP``)."""
        out: dict[str, Any] = {}
        for source, runs in self.runs.items():
            out[source] = {
                run_id: {
                    "strata": {str(b): {str(v): n for v, n in h.items()} for b, h in st.hists.strata.items()},
                    "tokens": st.tokens,
                    "rate_tokens": st.rate_tokens,
                    "last_ts": st.last_ts.isoformat() if st.last_ts else None,
                    "rate_strata": {str(v): n for v, n in st.rate_hists.strata.get(0, {}).items()},
                    "counted": st.counted,
                    "positions": st.positions,
                }
                for run_id, st in list(runs.items())[-KEEP:]
            }
        return out

    def restore(self, data: Any, older: Callable[[str], list[Run]] | None = None) -> None:
        """Take back ``checkpoint()`` output for runs still known: the tracker's (its last two)
        and ``older(source)`` (the agent's run snapshots), so every kept run keeps its numbers
        and the verdict its last good run. Anything odd is ignored."""
        if not isinstance(data, dict):
            return
        dropped: list[str] = []
        for source, runs in data.items():
            known = {r.run_id: r for r in (older(str(source)) if older else [])}
            known.update((r.run_id, r) for r in self._tracker.runs(str(source)))
            if not isinstance(runs, dict):
                continue
            for run_id, raw in runs.items():
                run = known.get(str(run_id))
                stats = _stats_from(run, raw) if run is not None else None
                if isinstance(stats, RunStats):
                    self.runs.setdefault(stats.run.source, {})[stats.run.run_id] = stats
                elif stats is not None:
                    dropped.append(stats)
        if dropped:
            log.warning("saved stats of %d run(s) unusable (%s); dropped", len(dropped), dropped[0])


def _stats_from(run: Run, raw: Any) -> RunStats | str:
    """The run's saved stats, every value checked (``acceptmon.statefiles.strict``), or why not."""
    try:
        stats = RunStats(run)
        for bucket, hist in raw["strata"].items():
            for value, n in hist.items():
                if as_int(n, "strata") > 0:
                    stats.hists.strata.setdefault(as_key(bucket), {})[as_key(value)] = n
                    stats.hists.n += n
        stats.tokens, stats.rate_tokens = as_float(raw["tokens"]), as_float(raw["rate_tokens"])
        # Checkpoints written before counts-only runs were kept lack these three.
        for value, n in raw.get("rate_strata", {}).items():
            if as_int(n, "rate_strata") > 0:
                stats.rate_hists.strata.setdefault(0, {})[as_key(value)] = n
                stats.rate_hists.n += n
        stats.counted = as_int(raw.get("counted", 0), "counted", low=0)
        stats.positions = as_int(raw.get("positions", 0), "positions", low=0)
        stats.last_ts = as_time(raw["last_ts"]) if raw.get("last_ts") is not None else None
        started = run.started
        if stats.last_ts and started and (stats.last_ts.tzinfo is None) != (started.tzinfo is None):
            raise WrongShape("last_ts", "naive where the run's start is not, or the other way round")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # The field, never the value (values may be secrets).
        return str(exc) if isinstance(exc, WrongShape) else type(exc).__name__
    return stats


def _measured(v: Verdict | None, measure: str) -> Verdict | None:
    """The verdict (and the one against the last good run) as a comparison of ``measure``."""
    if v is None:
        return None
    return replace(v, measure=measure, good=_measured(v.good, measure))


def run_json(r: RunStats) -> dict[str, Any]:
    m = r.median()
    return {
        "run_id": r.run.run_id,
        "kind": r.run.kind,
        "reason": r.run.reason,
        "started": r.run.started.isoformat() if r.run.started else None,
        "duration_s": r.lasted(),
        "intervals": r.intervals,
        "accept_len_median": m[0] if m else None,
        "accept_len_ci": [m[1], m[2]] if m else None,
        "accept_rate": r.accept_rate(),
        "settings": {
            "algorithm": r.run.spec.algorithm,
            "num_steps": r.run.spec.num_steps,
            "eagle_topk": r.run.spec.eagle_topk,
            "num_draft_tokens": r.run.spec.num_draft_tokens,
            "draft_model_path": r.run.spec.draft_model_path,
        },
        "changed_keys": r.changed_keys(),
        "change": r.change(),
    }


def verdict_json(v: Verdict | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "state": v.state,
        "run_id": v.run_id,
        "against_run_id": v.against_run_id,
        "relative_change": v.relative_change,
        "relative_change_ci": list(v.interval) if v.interval else None,
        "p_value": v.p_value,
        "needs_more_intervals": v.needs_more,
        "words": v.words(),
        "against_last_good": verdict_json(v.good),
    }
