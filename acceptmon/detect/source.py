"""The detector's state for one source: current run, baseline, rule watchers, findings.

Memory is bounded per source: three windows (the first ``head`` intervals of
the current run, its last ``window`` within ``baseline_s``, which becomes the
next run's baseline, and its last ``recent``), one frozen baseline, the baselines of at most
``MAX_OPEN_DROPS`` open drop findings, and the capped finding book.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from acceptmon.detect import bulk
from acceptmon.detect.compare import Comparison, compare
from acceptmon.detect.findings import (
    COLLAPSED,
    DRIFT,
    FLOOR,
    STALLED,
    Book,
    began_before,
    compose,
    drop_finding,
    simple_finding,
    source_key,
    without_secrets,
)
from acceptmon.detect.measure import (
    ALPHA_SCALE,
    Measure,
    adaptive,
    chain_comparison,
    chain_len,
    choose,
    per_token,
    to_per_token,
    tree_explains,
)
from acceptmon.detect.positions import Positions
from acceptmon.detect.recovery import RECHECK, Ordered, Reference, Stretch
from acceptmon.detect.rules import Drift, Persistence, Transition, stall_reason
from acceptmon.detect.series import (
    Head,
    Point,
    Sliding,
    Strata,
    centi,
    decode_point,
    load_bucket,
    rate_from_len,
    seconds,
    spec_point,
)
from acceptmon.detect.settings import DetectSettings, Floor
from acceptmon.detect.swing import Swing
from acceptmon.model import ConfigDiff, DecodeSample, Finding, Run, SpecConfig, SpecSample
from acceptmon.runs.batch import DecodeBatch

#: Open drop findings whose baselines are kept for the recovery check; the oldest beyond it is closed.
MAX_OPEN_DROPS = 8
#: Diffs kept since the baseline run before they are folded into one.
MAX_PENDING = 16
#: Batches of at most this many lines (a live agent's) go line by line: the shorter way for them.
SHORT = 4


@dataclass(frozen=True, slots=True)
class Baseline:
    """The last window of a finished run, frozen: what later runs are judged against; ``swing``
    is the low/high ratio of the levels the run sustained (≤ 1: see ``detect.swing``); ``alpha``:
    its histograms hold per-token acceptance (an adaptive run's), not accept len."""

    run: Run
    strata: Strata
    slots: int | None
    swing: float = 1.0
    alpha: bool = False


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """How far the detector has got with a source's current run (for metrics and the bench)."""

    run_id: str
    intervals: int
    used: int
    baseline_run_id: str | None
    decided: bool


def regressed(c: Comparison | None, cfg: DetectSettings, low: float = 1.0) -> bool:
    """Significant (one-sided, alpha) and large enough on enough data.

    Large enough twice over: the medians differ by ≥ ``min_drop``, and even the
    95% bounds differ by ≥ ``min_drop_ci``. The second guards the first test of
    a quiet run (20 noisy intervals at night), where a modest real shift (a
    prompt-mix change at the restart) plus an unlucky median could otherwise
    pass for a regression. With ``low`` < 1 both are measured from the lowest
    level the baseline sustained (``low`` × its level) instead of its level.
    """
    if c is None:
        return False
    b, a = c.before, c.after
    drop = 1.0 - a.value / (b.value * low) if b.value > 0 else 0.0
    sure = 1.0 - a.high / (b.low * low) if b.low > 0 else 0.0
    return (
        c.after_n >= cfg.min_after
        and c.before_n >= cfg.min_before
        and c.p_value < cfg.alpha
        and drop >= cfg.min_drop
        and sure >= cfg.min_drop_ci
    )


def measured(base: Baseline, after: Strata, measure: Measure, min_stratum: int) -> Comparison | None:
    """``compare`` in the measure chosen for this baseline and run (None: not comparable)."""
    a_before, a_after = measure.alpha
    if not measure.per_token:
        return None if a_before or a_after else compare(base.strata, after, min_stratum)
    k_before, k_after = measure.steps
    assert (a_before or k_before is not None) and (a_after or k_after is not None)
    before = base.strata if a_before or k_before is None else to_per_token(base.strata, k_before)
    return compare(
        before,
        after if a_after or k_after is None else to_per_token(after, k_after),
        min_stratum,
        ALPHA_SCALE,
    )


def below(point: Point, floor: Floor) -> bool:
    length, rate = point.accept_len, point.accept_rate
    return (floor.accept_len is not None and length is not None and length < floor.accept_len) or (
        floor.accept_rate is not None and rate is not None and rate < floor.accept_rate
    )


class RunData:
    """What the current run has shown so far, and its per-run watchers."""

    def __init__(self, run: Run, cfg: DetectSettings, collapsed: bool, floored: bool) -> None:
        self.run = run
        self.seen = 0  # busy intervals with an accept len
        self.used = 0  # of those, after the warm-up
        self.warm = False
        self.head, self.tail, self.recent = (
            Head(cfg.head),
            Sliding(cfg.window, cfg.baseline_s, cfg.baseline_min),
            Sliding(cfg.recent),
        )
        self.decided = False
        self.tested_at = 0
        self.checked_at = 0
        self.slots = run.spec.draft_slots()
        #: Adaptive speculation: the active chain steps, and the windows hold α (ten-thousandths)
        #: instead of accept len, so the server's own step changes move nothing they compare.
        self.steps = run.spec.num_steps if adaptive(run) else None
        self.floor_cfg = cfg.floor_for(run.source, run.spec)
        self.collapse = Persistence(cfg.collapse_intervals, 1.0, collapsed)
        self.floor = Persistence(cfg.floor_intervals, cfg.floor_fraction, floored)
        #: The earlier run a breach of the floor began in, when the last one ended below it:
        #: a floor finding fired here is not caused by the change that opened this run.
        self.floor_from: Run | None = None
        self.drift = Drift(cfg.drift_min_drop, cfg.drift_threshold, cfg.drift_ref_intervals)
        self.swing = Swing(cfg.swing_block)


def _now(point: Point) -> tuple[float | None, float | None]:
    """The acceptance a finding resolves at: this interval's."""
    return point.accept_len, point.accept_rate


def duration_words(seconds: float) -> str:
    """``7500`` → ``2 h 5 min``: how long, as a person would say it in an alert."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


class SourceState:
    """Feeds one source's runs and samples to the rules and keeps their findings."""

    def __init__(
        self, source: str, cfg: DetectSettings, on_change: Callable[[Finding], object] | None = None
    ) -> None:
        """``on_change`` is told of every finding the book fires or resolves, as it does."""
        self.source, self.cfg = source, cfg
        self.book = Book(cfg.max_resolved, on_change)
        self.current = RunData(Run(source, "unknown", None, 0, None, SpecConfig()), cfg, False, False)
        self.baseline: Baseline | None = None
        self.pending: list[ConfigDiff | None] = []  # diffs since the baseline run, current included
        self.refs: dict[str, Baseline] = {}  # open drop finding → the baseline it is judged against
        self._references: dict[str, tuple[Baseline, Run, Reference]] = {}  # refs' recovery checks
        self._sorted: tuple[Sliding, int, Ordered] | None = None  # the recent window, for them
        self.last: Point | None = None
        self.last_ts: datetime | None = None
        #: The first outside "now" (the agent's clock) this source was evaluated at: a stall is
        #: silence since then at most, so an agent started on a log written hours ago does not
        #: page it at once. None while only the log's own time has been "now" (one-shot, backlog).
        self.watching_since: datetime | None = None
        self.spec_prev: dict[int | None, SpecSample] = {}
        self.positions = Positions()  # vLLM's per-position acceptance per run, for drop findings

    def status(self) -> SourceStatus:
        c, b = self.current, self.baseline
        return SourceStatus(c.run.run_id, c.seen, c.used, b.run.run_id if b else None, c.decided)

    def start_run(self, run: Run) -> None:
        """A new run: the old one becomes the baseline if it has enough data after warm-up.
        An adaptive step change is the server reacting to acceptance, not a new run: ``_adapt``."""
        if run.kind == "spec_params" and self._adapt(run):
            return
        old = self.current
        if old.tail.n >= self.cfg.min_before:
            tail = old.tail.copy()
            self.baseline = Baseline(old.run, tail, old.slots, old.swing.ratio(), old.steps is not None)
            self.pending = []
        if run.previous_run_id is None:
            self.baseline, self.pending = None, []
        self.pending.append(without_secrets(run.diff))
        if len(self.pending) > MAX_PENDING:  # a crash loop: fold, composing is associative
            self.pending = [compose(self.pending)]
        self.book.resolve(source_key(DRIFT, self.source, old.run.run_id), self.last_ts)
        self.book.resolve(source_key(STALLED, self.source), run.started or self.last_ts)
        collapsed = self.book.active(source_key(COLLAPSED, self.source))
        floored = self.book.active(source_key(FLOOR, self.source))
        below = bool(old.floor_cfg) and old.floor.breaching
        self.current = RunData(run, self.cfg, collapsed, floored)
        self.current.floor_from = (old.floor_from or old.run) if below else None
        if floored and not self.current.floor_cfg:  # the new model has no floor to be below
            self.book.resolve(source_key(FLOOR, self.source), run.started or self.last_ts)
        self.spec_prev.clear()
        self.last = None

    def settle_settings(self) -> None:
        """Settings read anew (a reload, a restart): a floor finding whose floor went away resolves,
        for there is nothing left to be below."""
        key = source_key(FLOOR, self.source)
        if not self.current.floor_cfg and self.book.active(key):
            self.book.resolve(key, self.last_ts)

    def _adapt(self, segment: Run) -> bool:
        """Adaptive speculation moved the steps: the run goes on in per-token acceptance, which the
        step count does not move, so the step change is never what a drop is blamed on. A run not
        yet known to be adaptive starts its windows afresh in α (its baseline and decision kept).
        False for a segment that cannot continue a chain run: it is then treated as any other."""
        rd, steps = self.current, segment.spec.num_steps
        if (
            not adaptive(segment)
            or steps is None
            or rd.run.source != segment.source
            or rd.run.run_id == "unknown"
        ):
            return False
        if rd.steps is None:
            fresh = RunData(rd.run, self.cfg, rd.collapse.active, rd.floor.active)
            fresh.decided, fresh.tested_at, fresh.floor_from = rd.decided, 0, rd.floor_from
            self.current = rd = fresh
        rd.steps, rd.slots = steps, segment.spec.draft_slots()
        return True

    def stop(self, ts: datetime | None) -> None:
        """A graceful shutdown: silence until the next run is expected, not a stall."""
        self.last = None
        self.book.resolve(source_key(STALLED, self.source), ts or self.last_ts)

    def observe(self, sample: DecodeSample | SpecSample) -> None:
        point = self._point(sample)
        if point is not None:
            self.observe_point(point)

    def observe_batch(self, batch: DecodeBatch, evaluate: bool = False) -> None:
        """A batch's Decode lines, one interval each, exactly as ``observe`` takes their records;
        with ``evaluate``, as if the source were evaluated after every interval (one-shot
        findings, as live): see ``_evaluated``."""
        if evaluate:
            self._evaluated(batch)
        elif batch.n <= SHORT or not bulk.observe_batch(self, batch, 0, batch.n):
            self._lines(batch, 0, batch.n, False)

    def _lines(self, batch: DecodeBatch, lo: int, hi: int, evaluate: bool) -> None:
        """Lines ``lo``..``hi`` - 1 one by one (the source evaluated after each with ``evaluate``)."""
        stamps, running, queue, lens = batch.stamps, batch.running, batch.queue, batch.lens
        slots, rate, observe = self.current.slots, batch.rate, self.observe_point
        for i in range(lo, hi):
            r = running[i]
            length = lens[i] if lens is not None else None
            printed = rate(length)
            observe(
                Point(
                    stamps[i][0],
                    length,
                    float(r),
                    r,
                    queue[i],
                    printed if printed is not None else rate_from_len(length, slots),
                )
            )
            if evaluate:
                self.evaluate(self.last_ts)

    def _evaluated(self, batch: DecodeBatch) -> None:
        """The batch as if evaluated after every interval, in stretches that stay bulk.

        An evaluation by the source's own clock changes something only where the change test
        is due (the stretches end there) or a recovery check is (the bulk path runs those in
        line order among the other rules' events, with the time of their line): between them
        it is a no-op, so each stretch is taken whole and evaluated once, at its end.
        """
        i, n = 0, batch.n
        while i < n:
            end = self._stretch(batch, i)
            if end - i <= SHORT or not bulk.observe_batch(self, batch, i, end, self._stretch_checks):
                self._lines(batch, i, end, True)
            else:
                self.evaluate(self.last_ts)
            i = end

    def _stretch(self, batch: DecodeBatch, i: int) -> int:
        """End (exclusive) of the lines from ``i`` after which only the last needs an evaluation."""
        rd, cfg, n = self.current, self.cfg, batch.n
        clock_quiet = cfg.stall_s >= 0 and (cfg.silent_s is None or cfg.silent_s >= 0)
        checks = bool(self.refs) and (rd.recent.aged or rd.used - rd.checked_at >= RECHECK)
        if not rd.warm or not clock_quiet or checks:
            return i + 1  # warming up (used intervals not known ahead), a check due now or not bulk
        need = self._test_need()
        if need is None or batch.lens is None:
            return n
        if need == 0:
            return i + 1
        running = batch.running
        for k in range(i, n):
            if running[k] > 0:
                need -= 1
                if need == 0:
                    return k + 1
        return n

    def _test_need(self) -> int | None:
        """More used intervals after which ``_test_change`` is due (0: now), None if never."""
        rd, base, cfg = self.current, self.baseline, self.cfg
        if base is None or rd.decided:
            return None
        h, size, tested = rd.head.n, rd.head.size, rd.tested_at
        for n in range(h, max(h, size) + 1):
            if n >= cfg.min_after and (n - tested >= max(1, n // 32) or (n >= size and tested != n)):
                return n - h
        return None

    def observe_point(self, point: Point) -> None:
        if point.ts is not None:
            if self.last_ts is None or (seconds(point.ts) or 0.0) > (seconds(self.last_ts) or 0.0):
                self.last_ts = point.ts  # by epoch: naive (old state) and aware times may meet
            self.book.resolve(source_key(STALLED, self.source), point.ts, _now(point))
        self.last = point
        if point.accept_len is not None and point.busy:
            self._accept(point, point.accept_len)

    def _point(self, sample: DecodeSample | SpecSample) -> Point | None:
        if isinstance(sample, DecodeSample):
            return decode_point(sample, self.current.slots)
        self.positions.add(self.current.run.run_id, sample)
        prev = self.spec_prev.get(sample.engine)
        if sample.cumulative:
            self.spec_prev[sample.engine] = sample
        if self.current.slots is None and sample.num_spec_tokens:
            self.current.slots = sample.num_spec_tokens
        return spec_point(sample, prev, self.current.slots)

    def _accept(self, point: Point, length: float) -> None:
        rd, cfg = self.current, self.cfg
        rd.seen += 1
        self.apply(rd.collapse.step(length <= cfg.collapse_max_len), COLLAPSED, point)
        if not rd.warm:
            rd.warm = rd.seen > cfg.warmup_intervals and (
                not point.queued or rd.seen > cfg.warmup_max_intervals
            )
            if not rd.warm:
                return
        bucket, value = load_bucket(point.running, cfg.load_buckets), centi(length)
        if rd.steps is not None:  # adaptive: α, and drift sees accept len at the run's first steps
            value = per_token(value, rd.steps)
            length = chain_len(value / ALPHA_SCALE, rd.run.spec.num_steps or rd.steps)
        rd.used += 1
        rd.head.add(bucket, value)
        rd.tail.add(bucket, value, seconds(point.ts))
        rd.recent.add(bucket, value)
        rd.swing.add(bucket, value)
        if rd.floor_cfg:
            self.apply(rd.floor.step(below(point, rd.floor_cfg)), FLOOR, point)
        self.apply(rd.drift.step(bucket, length), DRIFT, point)

    def apply(self, t: Transition, rule: str, point: Point) -> None:
        key = source_key(rule, self.source, self.current.run.run_id if rule == DRIFT else None)
        if t == "fire":
            rd = self.current
            finding = simple_finding(rule, rd.run, self._say(rule, point), key, point.accept_len)
            if rule == FLOOR and rd.floor_from is not None:
                finding = began_before(finding, rd.floor_from, rd.run)
            self.book.fire(finding, point.ts)
        elif t == "resolve":
            self.book.resolve(key, point.ts, _now(point))

    def _say(self, rule: str, point: Point) -> str:
        rd, cfg, src = self.current, self.cfg, self.source
        if rule == COLLAPSED:
            return (
                f"speculative decoding on {src} is effectively off: accept len ≤ {cfg.collapse_max_len:.2f} "
                f"for {cfg.collapse_intervals} intervals in a row while requests were running"
            )
        if rule == FLOOR:
            f = rd.floor_cfg
            parts = [
                f"accept len {f.accept_len:.2f}" if f.accept_len is not None else "",
                f"accept rate {f.accept_rate:.2f}" if f.accept_rate is not None else "",
            ]
            return (
                f"acceptance on {src} was below its floor ({' / '.join(p for p in parts if p)}) in "
                f"{rd.floor.bad} of the last {cfg.floor_intervals} intervals (last accept len {point.accept_len:.2f})"
            )
        ref = rd.drift.reference() or 0.0
        return (
            f"accept len on {src} drifted about {rd.drift.level:.0%} below its level at the start of run "
            f"{rd.run.run_id} (reference {ref:.2f}, last {point.accept_len:.2f})"
        )

    def watch(self, now: datetime) -> None:
        """An outside clock evaluates this source: the stall clock starts now, if not yet."""
        if self.watching_since is None:
            self.watching_since = now

    def evaluate(self, now: datetime | None) -> list[Finding]:
        self._stall(now)
        self._test_change()
        self._check_recovery()
        return self.book.all()

    def _stall(self, now: datetime | None) -> None:
        key = source_key(STALLED, self.source)
        last, cfg = self.last, self.cfg
        if now is None or last is None or self.last_ts is None or self.book.active(key):
            return
        gap = (seconds(now) or 0.0) - (seconds(self.last_ts) or 0.0)
        since = self.watching_since
        watched = gap if since is None else (seconds(now) or 0.0) - (seconds(since) or 0.0)
        reason = stall_reason(last, min(gap, watched), cfg.stall_s, cfg.stall_min_running, cfg.silent_s)
        if not reason:
            return
        silent, run = duration_words(gap), self.current.run
        if reason == "silent":
            text = f"{self.source} silent for {silent}: no Decode line"
        else:
            text = (
                f"{self.source} silent for {silent}: stopped writing Decode lines while {last.running} "
                f"requests were running and {last.queued} queued"
            )
        text += f" (run {run.run_id}, model {run.spec.model_path or 'unknown'}, draft model " + (
            f"{run.spec.draft_model_path or 'none'})"
        )
        self.book.fire(simple_finding(STALLED, self.current.run, text, key), now)

    def _test_change(self) -> None:
        """Test the head of the run against the baseline, often early, then every n/32 intervals."""
        rd, base, cfg = self.current, self.baseline, self.cfg
        if base is None or rd.decided:
            return
        n = rd.head.n
        due = n - rd.tested_at >= max(1, n // 32) or (rd.head.full and rd.tested_at != n)
        if n < cfg.min_after or not due:
            return
        rd.tested_at = n
        measure = self._measure(base, rd)
        cmp = measured(base, rd.head.strata, measure, cfg.min_stratum)
        diff = compose(self.pending)
        # A plain restart: the prompt mix may swing as it did in the baseline run.
        low = base.swing if diff is None and (not measure.per_token or all(measure.alpha)) else 1.0
        if cmp is not None and regressed(cmp, cfg, low):
            lens = self._lens(base, rd, measure, cmp)
            finding = drop_finding(rd.run, base.run, cmp, diff, (base.slots, rd.slots), measure, lens, low)
            fell = self.positions.words(base.run.run_id, rd.run.run_id)
            if fell:
                finding = replace(finding, summary=finding.summary + fell)
            why = tree_explains(base.run.spec, rd.run.spec, diff, (lens or cmp).drop)
            if why:  # a smaller tree accepts fewer: said, not paged
                finding = replace(finding, severity="warning", summary=f"{finding.summary}; {why}")
            self.book.fire(finding, self.last_ts)
            self.refs[finding.key] = base
            if len(self.refs) > MAX_OPEN_DROPS:
                self.book.resolve(next(iter(self.refs)), self.last_ts)
                del self.refs[next(iter(self.refs))]
            rd.decided = True
        elif rd.head.full:
            rd.decided = True

    @staticmethod
    def _measure(base: Baseline, rd: RunData) -> Measure:
        """The measure of ``rd`` against ``base``, the current steps standing for an adaptive run's."""
        spec = (
            rd.run.spec
            if rd.steps is None
            else replace(rd.run.spec, num_steps=rd.steps, num_draft_tokens=None)
        )
        return choose(base.run.spec, spec, (base.alpha, rd.steps is not None))

    def _lens(self, base: Baseline, rd: RunData, measure: Measure, cmp: Comparison) -> Comparison | None:
        """The accept-len comparison beside an α one: measured where both sides hold accept len,
        else α turned back into accept len at each side's chain length."""
        if not measure.per_token:
            return None
        if not any(measure.alpha):
            return compare(base.strata, rd.head.strata, self.cfg.min_stratum)
        return chain_comparison(cmp, base.slots, rd.run.spec.num_steps or rd.steps)

    def _check_recovery(self) -> None:
        """An open drop resolves once the recent intervals are back near its baseline, in any run."""
        rd = self.current
        if not self.refs or rd.used - rd.checked_at < RECHECK:
            return
        rd.checked_at = rd.used
        window = self._ordered()
        for key, ref in self.references():
            if ref.recovered(window, self.cfg):
                self.resolve_drop(key, self.last_ts, rd.recent.strata)

    def references(self) -> list[tuple[str, Reference]]:
        """``recovery.Judged``: the open drops with their baselines in the current run's measure."""
        rd, out = self.current, []
        for key, base in self.refs.items():
            cached = self._references.get(key)
            if cached is None or cached[0] is not base or cached[1] is not rd.run:
                measure = self._measure(base, rd)
                cached = self._references[key] = (base, rd.run, Reference(base.strata, measure))
            out.append((key, cached[2]))
        return out

    def resolve_drop(self, key: str, at: datetime | None, strata: Strata) -> None:
        """``recovery.Judged``: the finding's "now" is an accept len, whatever the measure."""
        rd = self.current
        cmp = compare(self.refs[key].strata, strata, self.cfg.min_stratum)
        level = cmp.after.value if cmp is not None else None  # the recent window's, in its own units
        if level is not None and rd.steps is not None:  # α: as accept len at the active steps
            level = chain_len(level * 100 / ALPHA_SCALE, rd.steps)
        self.book.resolve(key, at, (level, rate_from_len(level, rd.slots)))
        del self.refs[key], self._references[key]

    def checked(self, used: int) -> None:
        """``recovery.Judged``."""
        self.current.checked_at = used

    def keep(self, window: Ordered) -> None:
        """``recovery.Judged``."""
        recent = self.current.recent
        self._sorted = (recent, recent.added, window)

    def _ordered(self) -> Ordered:
        """The recent window sorted per bucket: the copy kept in step with it, or a new one."""
        recent, kept = self.current.recent, self._sorted
        if kept is None or kept[0] is not recent or kept[1] != recent.added:
            held = recent.columns()  # sorted off the intervals: the histograms may wait (``Sliding``)
            kept = (recent, recent.added, Ordered(recent.strata) if held is None else Ordered.of(*held))
            self._sorted = kept
        return kept[2]

    def _stretch_checks(
        self,
        buckets: list[int],
        centis: list[int],
        rows: list[int],
        last: int,
        at: Callable[[int], datetime | None],
    ) -> Stretch | None:
        """``bulk.CheckFactory``: the recovery checks of a stretch while a drop is open."""
        rd = self.current
        held = rd.recent.columns() if self.refs else None
        if held is None:
            return None
        return Stretch(
            self, self.cfg, (rd.recent, held), (buckets, centis, rows), (rd.used, rd.checked_at, last), at
        )
