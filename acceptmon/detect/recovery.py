"""Whether an open drop has recovered, cheaply enough to ask every few intervals for days.

While a drop is open the recovery check runs every ``RECHECK`` intervals, for as long as it
stays open (the seed incident sat at 19% for days). Its answer needs only the drop of the
load-standardised medians, not the rank test or the confidence intervals ``compare`` also
computes, and the baseline side is frozen: its medians (in the chosen measure) are taken once
per baseline and run. The arithmetic is ``compare``'s own, in the same order, so the answer and
the level are exactly the ones ``compare`` would give.
"""

from __future__ import annotations

from collections.abc import Mapping

from acceptmon.detect.measure import ALPHA_SCALE, Measure, to_per_token
from acceptmon.detect.series import Strata
from acceptmon.detect.stats import median_ci, order_stats


def _median(h: Mapping[int, int], n: int) -> float:
    """``median_ci(h).median`` without the interval."""
    a, b = order_stats(h, [(n + 1) // 2, n // 2 + 1])
    return (a + b) / 2


class Reference:
    """One open drop's baseline in the measure it is judged in, ready for repeated checks."""

    __slots__ = ("_k_after", "_medians", "_scale", "_sizes")

    def __init__(self, strata: Strata, measure: Measure) -> None:
        self._k_after: int | None = None
        self._scale = 100.0
        if measure.per_token:
            k_before, self._k_after = measure.steps
            assert k_before is not None and self._k_after is not None
            strata, self._scale = to_per_token(strata, k_before), ALPHA_SCALE
        self._sizes = {b: sum(h.values()) for b, h in strata.items()}
        self._medians = {b: median_ci(h).median for b, h in strata.items()}

    def drop(self, recent: Strata, min_stratum: int) -> tuple[int, float] | None:
        """(intervals compared, relative drop) of ``recent`` against the baseline, as
        ``compare(...).after_n`` and ``.drop``; None where ``compare`` gives None."""
        after = recent if self._k_after is None else to_per_token(recent, self._k_after)
        sizes, counts = self._sizes, {b: sum(h.values()) for b, h in after.items()}
        buckets = sorted(b for b, n in counts.items() if n >= min_stratum and sizes.get(b, 0) >= min_stratum)
        if not buckets:
            return None
        n_after = [counts[b] for b in buckets]
        total = sum(n_after)
        weights = [n / total for n in n_after]
        before = sum(w * m for w, m in zip(weights, [self._medians[b] for b in buckets], strict=True))
        now = sum(
            w * m for w, m in zip(weights, [_median(after[b], counts[b]) for b in buckets], strict=True)
        )
        b_value, a_value = before / self._scale, now / self._scale
        return total, 1.0 - a_value / b_value if b_value > 0 else 0.0
