"""Load-stratified comparison of two windows of accept len.

Acceptance falls slightly as the batch grows, so a run that merely sees more
traffic than its baseline would look like a regression if both were pooled.
Intervals are therefore stratified by #running-req, and only strata that both
windows cover are compared (stratifying beats regressing load out: it assumes
no shape for the load effect and cannot extrapolate to loads one side never
saw). Within strata the test is van Elteren's stratified Mann–Whitney; the
effect size is the relative drop of the medians, both standardised to the
current window's load mix ("what would the baseline have shown under today's
traffic").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from acceptmon.detect.series import Strata
from acceptmon.detect.stats import Z95, MedianCI, median_ci, rank_sum, stratified_less


@dataclass(frozen=True, slots=True)
class Level:
    """A load-standardised median accept len with its 95% CI."""

    value: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Comparison:
    before: Level
    after: Level
    p_value: float
    before_n: int
    after_n: int
    strata: int

    @property
    def drop(self) -> float:
        """Relative drop of the standardised median (positive when acceptance fell)."""
        return 1.0 - self.after.value / self.before.value if self.before.value > 0 else 0.0


def _standardise(medians: list[MedianCI], weights: list[float], scale: float) -> Level:
    """Weighted sum of medians; the CI combines per-stratum order-statistic CIs as if normal."""
    value = sum(w * m.median for w, m in zip(weights, medians, strict=True))
    var = sum((w * (m.high - m.low) / (2 * Z95)) ** 2 for w, m in zip(weights, medians, strict=True))
    half = Z95 * math.sqrt(var)
    return Level(value / scale, (value - half) / scale, (value + half) / scale)


def overlap(before: Strata, after: Strata, min_stratum: int) -> list[int]:
    """Load buckets with at least ``min_stratum`` intervals on both sides."""
    return sorted(
        b
        for b, h in after.items()
        if sum(h.values()) >= min_stratum and sum(before.get(b, {}).values()) >= min_stratum
    )


def compare(before: Strata, after: Strata, min_stratum: int, scale: float = 100.0) -> Comparison | None:
    """Compare accept len of ``after`` against ``before``; None when no stratum overlaps.
    ``scale`` is what the histograms' values are multiples of (accept len: hundredths)."""
    buckets = overlap(before, after, min_stratum)
    if not buckets:
        return None
    n_after = [sum(after[b].values()) for b in buckets]
    total = sum(n_after)
    weights = [n / total for n in n_after]
    p = stratified_less(rank_sum(after[b], before[b]) for b in buckets)
    return Comparison(
        before=_standardise([median_ci(before[b]) for b in buckets], weights, scale),
        after=_standardise([median_ci(after[b]) for b in buckets], weights, scale),
        p_value=p,
        before_n=sum(sum(before[b].values()) for b in buckets),
        after_n=total,
        strata=len(buckets),
    )
