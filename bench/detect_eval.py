"""Recall, false alarms and time-to-detect of acceptmon's detector on labelled synthetic data.

    .venv/bin/python bench/detect_eval.py [--server-days N] [--seed S] [--events N] [--workers W]

Change events (a restart whose draft config lowers accept len by 5–60%),
collapses, floor breaches, in-run drifts and log stalls are each replayed
through a fresh ``Detector``, calling ``evaluate`` after every Decode line
and every 15 s of log time in between, as the pipeline does. False alarms
come from ``--server-days`` of data with no real change. Time to detect is in
Decode intervals after warm-up (drift: after the slide began; collapse: since
the run started; stall: seconds since the last line).

The rows below the fleet's are the harder cases of issue 12, each its own
labelled generator in ``bench/detect_sim.py``: a quiet server (a line every few
minutes) whose draft change lowers accept len 35%; draft-length changes with the
same draft model (not a regression); a worse draft hidden behind a longer one
(accept len flat, per-token acceptance down); restarts without a config change
on a server whose prompt mix swings ±15% for hours (and one such restart that
also lowers acceptance 35%). Issue 23 adds SGLang's adaptive speculation (the
server moving its draft steps 3 ↔ 1 through hard stretches of prompts: no change;
and a restart with a worse draft under it) and tree drafts (topk 4) verifying 8 → 6
tokens with the same draft (the change explains the fall: a warning at most) and
with a worse draft too. In these, every critical finding that is not the labelled
one is a false alarm, per server-day of the case's streams.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from acceptmon.detect import COLLAPSED, DRIFT, DROP, FLOOR, RULES, STALLED, Detector, DetectSettings, Floor
from acceptmon.model import DecodeSample, Finding, Run, Shutdown
from bench.detect_sim import (
    T0,
    Item,
    Truth,
    adaptive_clean,
    adaptive_drop,
    change,
    clean,
    drift,
    hidden_drop,
    quiet_clean,
    quiet_drop,
    stall,
    steps_change,
    swing_drop,
    swinging,
    tree_change,
)

DROP_BUCKETS = ((0.05, 0.10), (0.10, 0.20), (0.20, 0.40), (0.40, 0.60))
TICK = timedelta(seconds=15)
FLOOR_FRACTION = 0.7  # each simulated server's floor, relative to its normal level
CRITICAL = (DROP, COLLAPSED)
FLEET = "fleet"
#: The harder cases: kind → (case label, what its drop column says).
CASES = {
    "quiet": ("quiet server", "35%"),
    "quiet-clean": ("quiet server", "no change"),
    "steps": ("draft length", "same draft"),
    "hidden": ("draft length", "hidden α"),  # a worse draft behind a longer one; a row per α drop size
    "swing": ("mix swings ±15%", "no change"),
    "swing-drop": ("mix swings ±15%", "35%, no change"),
    "adaptive": ("adaptive steps", "no change"),
    "adaptive-drop": ("adaptive steps", "worse draft 35%"),
    "tree": ("tree 8 → 6 tokens", "same draft"),
    "tree-drop": ("tree 8 → 6 tokens", "worse draft 35%"),
}


@dataclass
class Outcome:
    """What one replayed stream produced."""

    events: list[tuple[str, str, float | None]] = field(default_factory=list)  # rule, bucket, ttd
    alarms: Counter[str] = field(default_factory=Counter)
    kind: str = ""
    restarts: int = 0
    server_days: float = 0.0
    samples: int = 0
    detector_s: float = 0.0
    span: float = 0.0  # seconds of log time the stream covered


def units(args: argparse.Namespace) -> list[tuple[str, int, float]]:
    """(kind, seed, parameter) work items; seeds derive from --seed so a run is reproducible."""
    seed = args.seed * 1_000_003
    out = hard_units(args, seed) if args.cases != FLEET else []
    if args.cases == "issue12":
        return out
    out += [("clean", seed + i, min(5.0, args.server_days - 5 * i)) for i in range(-(-args.server_days // 5))]
    for b, (lo, hi) in enumerate(DROP_BUCKETS):
        out += [
            ("drop", seed + 10_000 * (b + 1) + i, random.Random(seed + 10_000 * (b + 1) + i).uniform(lo, hi))
            for i in range(args.events)
        ]
    extra = max(1, args.events // 2)
    for k, kind in enumerate(("collapse", "floor", "drift", "stall")):
        out += [
            (kind, seed + 100_000 * (k + 1) + i, random.Random(-seed - i).uniform(0.3, 0.5))
            for i in range(extra)
        ]
    return out


def hard_units(args: argparse.Namespace, seed: int) -> list[tuple[str, int, float]]:
    """The harder cases: as many events as a fleet drop bucket; streams of two server-days for the others."""
    out: list[tuple[str, int, float]] = []
    for k, kind in enumerate(("quiet", "steps", "hidden", "adaptive-drop", "tree", "tree-drop")):
        out += [(kind, seed + 1_000_000 * (k + 1) + i, 0.35) for i in range(args.events)]
    out += [("swing-drop", seed + 4_000_000 + i, 0.35) for i in range(max(1, args.events // 2))]
    # Half as many server-days as the fleet's clean ones, in streams of two days.
    for k, (kind, days) in enumerate(
        (
            ("quiet-clean", args.server_days / 2),
            ("swing", args.server_days / 2),
            ("adaptive", args.server_days / 2),
        )
    ):
        out += [(kind, seed + 5_000_000 + 100_000 * k + i, 2.0) for i in range(max(1, round(days / 2)))]
    return out


def stream(kind: str, seed: int, param: float, source: str, level: float) -> Iterable[Item]:
    if kind == "quiet":
        return quiet_drop(seed, source, level, param)
    if kind == "quiet-clean":
        return quiet_clean(seed, source, level, param)
    if kind == "steps":
        return steps_change(seed, source, level, param)
    if kind == "hidden":
        return hidden_drop(seed, source, level, param)
    if kind == "swing":
        return swinging(seed, source, level, param)
    if kind == "swing-drop":
        return swing_drop(seed, source, level, param)
    if kind == "adaptive":
        return adaptive_clean(seed, source, level, param)
    if kind == "adaptive-drop":
        return adaptive_drop(seed, source, level, param)
    if kind in ("tree", "tree-drop"):
        return tree_change(seed, source, level, param, kind == "tree-drop")
    if kind == "clean":
        return clean(seed, source, level, param)
    if kind == "drop":
        return change(seed, source, level, param, DROP)
    if kind == "collapse":
        return change(seed, source, level, 0.0, COLLAPSED)
    if kind == "floor":
        return change(seed, source, level, param, FLOOR)
    if kind == "drift":
        return drift(seed, source, level, param)
    return stall(seed, source, level)


def bucket_of(rule: str, size: float) -> str:
    if rule != DROP:
        return ""
    lo, hi = next(b for b in DROP_BUCKETS if b[0] <= size < b[1] or b[1] == DROP_BUCKETS[-1][1])
    return f"{lo:.0%}–{hi:.0%}"


class Replay:
    """Feeds one stream to a detector and matches new alarms against the truth markers."""

    def __init__(self, detector: Detector, source: str, is_clean: bool) -> None:
        self.det, self.source, self.is_clean = detector, source, is_clean
        self.out = Outcome()
        self.truths: list[tuple[Truth, int]] = []  # with the sample count at onset
        self.found: dict[int, float] = {}
        self.seen: set[tuple[str, datetime | None]] = set()

    def feed(self, items: Iterable[Item]) -> Outcome:
        last = first = None
        for item in items:
            if isinstance(item, Truth):
                self.truths.append((item, self.out.samples))
            elif isinstance(item, Run):
                self.det.observe_run_start(item)
                self.out.restarts += item.previous_run_id is not None and item.kind != "spec_params"
            elif isinstance(item, Shutdown):
                self.det.observe(item)
            elif isinstance(item, DecodeSample) and item.meta.ts is not None:
                while last is not None and item.meta.ts - last > TICK:
                    last += TICK
                    self._check(self.det.evaluate(last), last)
                t0 = time.perf_counter()
                self.det.observe(item)
                found = self.det.evaluate(item.meta.ts)
                self.out.detector_s += time.perf_counter() - t0
                self.out.samples += 1
                self._check(found, item.meta.ts)
                last = item.meta.ts
                first = first or last
        if first is not None and last is not None:
            self.out.span = (last - first).total_seconds()
        for i, (truth, _) in enumerate(self.truths):
            self.out.events.append((truth.rule, bucket_of(truth.rule, truth.size), self.found.get(i)))
        return self.out

    def _check(self, findings: list[Finding], now: datetime) -> None:
        for f in findings:
            if not f.active or (f.key, f.first_seen) in self.seen:
                continue
            self.seen.add((f.key, f.first_seen))
            hit = next(
                (i for i, (t, _) in enumerate(self.truths) if t.rule == f.rule and t.run_id == f.run_id),
                None,
            )
            if hit is not None and hit not in self.found:
                self.found[hit] = self._ttd(*self.truths[hit], now)
            elif self.is_clean:  # a change rule's warning is no page: counted apart
                page = f.severity == "critical" or f.rule not in CRITICAL
                self.out.alarms[f.rule if page else f"{f.rule} ({f.severity})"] += 1

    def _ttd(self, truth: Truth, at_sample: int, now: datetime) -> float:
        status = self.det.status(self.source)
        assert status is not None
        if truth.rule == STALLED:
            return (now - (T0 + timedelta(seconds=truth.onset))).total_seconds()
        if truth.rule == DRIFT:
            return float(self.out.samples - at_sample)
        return float(status.intervals if truth.rule == COLLAPSED else status.used)


def run_unit(unit: tuple[str, int, float]) -> Outcome:
    kind, seed, param = unit
    source = f"{kind}-{seed}"
    level = random.Random(seed ^ 0x5EED).uniform(2.0, 3.0)
    hard = kind in CASES  # no floor there: the cases are about the change rule
    floors = () if hard else ((source, Floor(accept_len=round(FLOOR_FRACTION * level, 2))),)
    cfg = DetectSettings(source_floors=floors)
    out = Replay(Detector(cfg), source, kind == "clean" or hard).feed(
        stream(kind, seed, param, source, level)
    )
    out.kind = kind
    if kind == "clean":
        out.server_days = param
    elif hard:
        out.server_days = out.span / 86_400
    return out


def _row(rule: str, bucket: str, ttds: list[float | None], alarms: int, days: float) -> list[str]:
    hit = sorted(x for x in ttds if x is not None)
    unit = " s" if rule == STALLED else ""
    within = sum(1 for x in hit if x <= 50)
    return [
        rule,
        bucket or "–",
        str(len(ttds)),
        f"{len(hit) / len(ttds):.3f}",
        f"{within / len(ttds):.3f}" if rule in (DROP, COLLAPSED, FLOOR) else "–",
        f"{statistics.median(hit):.0f}{unit}" if hit else "–",
        f"{hit[min(len(hit) - 1, int(0.9 * len(hit)))]:.0f}{unit}" if hit else "–",
        f"{alarms / days:.3f} ({alarms})" if days else "–",
    ]


COLUMNS = (
    "case",
    "rule",
    "drop",
    "events",
    "recall",
    "≤50 int.",
    "TTD median",
    "TTD p90",
    "false alarms/server-day",
)


def table(outcomes: list[Outcome]) -> Table:
    """One row per rule (and per drop-size bucket for the change rule), then one per harder case."""
    fleet = [o for o in outcomes if o.kind not in CASES]
    days = sum(o.server_days for o in fleet)
    alarms: Counter[str] = sum((o.alarms for o in fleet), Counter())
    groups: dict[tuple[str, str], list[float | None]] = {}
    for o in fleet:
        for rule, bucket, ttd in o.events:
            groups.setdefault((rule, bucket), []).append(ttd)
    buckets = ["", *(bucket_of(DROP, lo) for lo, _ in DROP_BUCKETS)]
    t = Table(title=f"acceptmon detector on synthetic data ({days:.0f} clean server-days)")
    for col in COLUMNS:
        t.add_column(col, justify="left" if col in ("case", "rule", "drop") else "right")
    shown: set[str] = set()
    rows: list[list[str]] = []
    for rule, bucket in sorted(groups, key=lambda k: (RULES.index(k[0]), buckets.index(k[1]))):
        row = _row(rule, bucket, groups[rule, bucket], alarms[rule], days)
        if rule in shown:
            row[-1] = "〃"  # false alarms are per rule, not per drop size
        shown.add(rule)
        rows.append(row)
    for rule in RULES:
        if fleet and not any(r == rule for r, _ in groups):
            rows.append(_row(rule, "", [], alarms[rule], days))
    for i, row in enumerate(rows):
        t.add_row(FLEET, *row, end_section=i == len(rows) - 1)
    warnings = _hard_rows(t, [o for o in outcomes if o.kind in CASES])
    t.caption = f"critical false alarms: {sum(alarms[r] for r in CRITICAL)} in {days:.0f} server-days"
    if warnings:
        t.caption += f"\nharder cases' false alarms are critical ones (pages); warnings there: {warnings}"
    return t


def _hard_rows(t: Table, outcomes: list[Outcome]) -> str:
    """A row per harder case; returns the warnings they raised, in words."""
    warned: list[str] = []
    for kind, (case, label) in CASES.items():
        mine = [o for o in outcomes if o.kind == kind]
        if not mine:
            continue
        days = sum(o.server_days for o in mine)
        alarms: Counter[str] = sum((o.alarms for o in mine), Counter())
        by_size: dict[str, list[float | None]] = {}
        for o in mine:
            for _rule, bucket, ttd in o.events:
                by_size.setdefault(bucket if kind == "hidden" else "", []).append(ttd)
        critical = sum(alarms[r] for r in CRITICAL)
        if by_size:
            order = ["", *(bucket_of(DROP, lo) for lo, _ in DROP_BUCKETS)]
            for i, size in enumerate(sorted(by_size, key=order.index)):
                row = _row(DROP, f"{label} {size}".strip(), by_size[size], critical, days)
                t.add_row(case, *row[:-1], row[-1] if i == 0 else "〃")
        else:  # nothing to find: the restarts that were judged, and what fired
            events = f"{sum(o.restarts for o in mine)} restarts, {days:.0f} d"
            t.add_row(
                case, DROP, label, events, "–", "–", "–", "–", _row(DROP, "", [None], critical, days)[-1]
            )
        others = {r: n for r, n in alarms.items() if r not in CRITICAL}
        if others:
            warned.append(f"{case}/{label}: " + ", ".join(f"{r} {n}" for r, n in sorted(others.items())))
    return "; ".join(warned)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server-days", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--events", type=int, default=100, help="change events per drop bucket")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--cases",
        choices=("all", FLEET, "issue12"),
        default="all",
        help="the fleet, the harder cases, or both",
    )
    args = p.parse_args()
    console = Console() if sys.stdout.isatty() else Console(width=180)
    console.print(
        f"command: .venv/bin/python bench/detect_eval.py --server-days {args.server_days} "
        f"--seed {args.seed} --events {args.events} --workers {args.workers} --cases {args.cases}"
    )
    work = units(args)
    started = time.perf_counter()
    outcomes: list[Outcome] = []
    with Pool(args.workers) as pool, Progress(console=console, disable=not sys.stdout.isatty()) as bar:
        task = bar.add_task("replaying", total=len(work))
        for out in pool.imap_unordered(run_unit, work, chunksize=2):
            outcomes.append(out)
            bar.advance(task)
    console.print(table(outcomes))
    samples = sum(o.samples for o in outcomes)
    console.print(
        f"{samples:,} Decode intervals replayed in {time.perf_counter() - started:.0f} s wall "
        f"({args.workers} workers); detector observe+evaluate: "
        f"{1e6 * sum(o.detector_s for o in outcomes) / samples:.1f} µs per interval"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
