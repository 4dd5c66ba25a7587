""" "Is it better now?": the latest run against the run before it with a different config.

The question people ask after every fix. The comparison is the detector's
(load-stratified, van Elteren's test, medians standardised to the latest
run's load mix), asked in both directions at the same strictness: a verdict
of better or worse needs a p-value below ``ALPHA`` *and* a relative change of
at least ``MIN_CHANGE``; otherwise it is "same", or "insufficient" while
either side has fewer than ``MIN_INTERVALS`` comparable intervals. An adaptive run (the
server moving its own draft steps) is judged in per-token acceptance, which the steps do not
move, and so is any run it is compared with (``RunLevel.alpha``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from acceptmon.detect.compare import Comparison, compare
from acceptmon.detect.cost import verdict_cost_words
from acceptmon.detect.measure import ALPHA_SCALE, to_per_token
from acceptmon.detect.series import Strata
from acceptmon.detect.settings import DetectSettings

#: One-sided significance per direction.
ALPHA = 0.01
#: Smallest relative change of the median accept len worth a verdict.
MIN_CHANGE = 0.02
#: Comparable intervals each side needs before anything is said.
MIN_INTERVALS = 30
#: Intervals per load stratum for it to count (the detector's default).
MIN_STRATUM = DetectSettings().min_stratum

State = Literal["better", "worse", "same", "insufficient"]


@dataclass(frozen=True, slots=True)
class RunLevel:
    """What the verdict needs of one run."""

    run_id: str
    config_hash: str
    strata: Strata
    intervals: int
    #: Chain draft steps (None: unknown, or a tree), to turn accept len into α when needed.
    steps: int | None = None
    #: ``strata`` hold per-token acceptance α (ten-thousandths): an adaptive run's.
    alpha: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    state: State
    run_id: str
    against_run_id: str | None
    relative_change: float | None = None
    interval: tuple[float, float] | None = None
    p_value: float | None = None
    #: While insufficient: intervals the latest run still needs (0 when the baseline is short).
    needs_more: int = 0
    #: The last run judged good (not worse than its own baseline), when it is another one.
    good_run_id: str | None = None
    good: Verdict | None = None
    #: What was compared: accept len, per-token acceptance beside an adaptive run, or the
    #: accept rate of runs that log counts only.
    measure: str = "accept len"
    #: Tokens the latest run generated, where the log says gen throughput: a worse verdict's
    #: cost then says the tokens it lost over the run.
    generated: float | None = None

    def words(self) -> str:
        """The verdict in one sentence."""
        if self.against_run_id is None:
            return f"{self.run_id}: the first run with Decode intervals; nothing to compare against yet"
        if self.state == "insufficient":
            more = f"; {self.needs_more} more Decode intervals needed" if self.needs_more else ""
            return f"{self.run_id} vs {self.against_run_id}: not enough data yet{more}"
        assert self.relative_change is not None and self.p_value is not None
        change = f"{self.relative_change:+.1%}"
        ci = f" (95% interval {self.interval[0]:+.1%} to {self.interval[1]:+.1%})" if self.interval else ""
        head = f"{self.run_id} vs {self.against_run_id}: {self.state.upper()}, {self.measure} {change}{ci}"
        if self.state == "same" and self.p_value < ALPHA:  # certain, but too small to matter: say both
            p = "p < 0.001" if self.p_value < 0.001 else f"p = {self.p_value:.3f}"
            return f"{head}, real ({p}) but below the {MIN_CHANGE:.0%} change that matters"
        words = f"{head}, {p_words(self.p_value)}"
        if self.state == "worse" and self.measure != "accept rate":  # the cost reads accept len (or α)
            words += f"; {verdict_cost_words(self.relative_change, self.interval, self.generated)}"
        return words


def p_words(p: float) -> str:
    """A p-value as people read it."""
    if p < 0.001:
        return "p < 0.001: very unlikely to be chance"
    if p < ALPHA:
        return f"p = {p:.3f}: unlikely to be chance"
    if p < 0.05:
        return f"p = {p:.2f}: weak evidence only"
    return f"p = {p:.2f}: could well be chance"


def _relative(c: Comparison) -> tuple[float, tuple[float, float]]:
    """after/before − 1, with a delta-method 95% interval from the two levels' intervals."""
    a, b = c.after, c.before
    ratio = a.value / b.value
    sa, sb = (a.high - a.low) / (2 * 1.96), (b.high - b.low) / (2 * 1.96)
    se = ratio * math.hypot(sa / a.value, sb / b.value) if a.value > 0 else 0.0
    return ratio - 1.0, (ratio - 1.96 * se - 1.0, ratio + 1.96 * se - 1.0)


def judge_pair(latest: RunLevel, against: RunLevel) -> Verdict:
    """The latest run against one earlier run."""
    if min(latest.intervals, against.intervals) < MIN_INTERVALS:
        return Verdict(
            "insufficient", latest.run_id, against.run_id, needs_more=max(0, MIN_INTERVALS - latest.intervals)
        )
    sides = _one_measure(against, latest)
    if sides is None:  # α beside a run whose accept len cannot be turned into α
        return Verdict("insufficient", latest.run_id, against.run_id)
    before, after, scale, measure = sides
    worse = compare(before, after, MIN_STRATUM, scale)
    better = compare(after, before, MIN_STRATUM, scale)
    if worse is None or better is None or min(worse.before_n, worse.after_n) < MIN_INTERVALS:
        have = 0 if worse is None else worse.after_n
        return Verdict("insufficient", latest.run_id, against.run_id, needs_more=max(0, MIN_INTERVALS - have))
    change, interval = _relative(worse)
    if worse.p_value < ALPHA and change <= -MIN_CHANGE:
        return Verdict(
            "worse", latest.run_id, against.run_id, change, interval, worse.p_value, measure=measure
        )
    if better.p_value < ALPHA and change >= MIN_CHANGE:
        return Verdict(
            "better", latest.run_id, against.run_id, change, interval, better.p_value, measure=measure
        )
    p = min(worse.p_value, better.p_value)
    return Verdict("same", latest.run_id, against.run_id, change, interval, p, measure=measure)


PER_TOKEN_WORDS = "per-token acceptance"


def _one_measure(against: RunLevel, latest: RunLevel) -> tuple[Strata, Strata, float, str] | None:
    """Both sides in one measure: accept len, or α when either is an adaptive run's."""
    if not (against.alpha or latest.alpha):
        return against.strata, latest.strata, 100.0, "accept len"
    sides = []
    for level in (against, latest):
        if level.alpha:
            sides.append(level.strata)
        elif level.steps is None:
            return None
        else:
            sides.append(to_per_token(level.strata, level.steps))
    return sides[0], sides[1], ALPHA_SCALE, PER_TOKEN_WORDS


def judge(runs: Sequence[RunLevel]) -> Verdict | None:
    """The verdict for the last of ``runs`` (oldest first); None when there is no run.

    Runs without Decode intervals (a start that never served) are skipped. The
    baseline is the newest earlier run with another config (the previous run
    when none differs); when the last run judged good is a different one, it is
    compared too.
    """
    served = [r for r in runs if r.intervals]
    if not served:
        return None
    latest = served[-1]
    if len(served) == 1:
        return Verdict("insufficient", latest.run_id, None, needs_more=0)
    against = _baseline(served, len(served) - 1)
    assert against is not None
    verdict = judge_pair(latest, against)
    good = _last_good(served[:-1])
    if good is None or good.run_id == against.run_id:
        return verdict
    return Verdict(
        verdict.state,
        verdict.run_id,
        verdict.against_run_id,
        verdict.relative_change,
        verdict.interval,
        verdict.p_value,
        verdict.needs_more,
        good.run_id,
        judge_pair(latest, good),
        verdict.measure,
    )


def _baseline(runs: Sequence[RunLevel], i: int) -> RunLevel | None:
    """What run ``i`` is judged against: the newest earlier run with another config, or,
    when none differs visibly (e.g. the draft config.json was unreadable), the previous run."""
    if i == 0:
        return None
    return next((r for r in reversed(runs[:i]) if r.config_hash != runs[i].config_hash), runs[i - 1])


def _last_good(runs: Sequence[RunLevel]) -> RunLevel | None:
    """The newest run that was not worse than its own baseline."""
    for i in range(len(runs) - 1, -1, -1):
        before = _baseline(runs, i)
        if before is None or judge_pair(runs[i], before).state != "worse":
            return runs[i]
    return None
