"""Rank statistics on histograms, so the detector never needs scipy or numpy.

SGLang prints accept len with two decimals, so a window of thousands of
intervals holds only a few hundred distinct values. Every statistic here works
on a histogram ``{value: count}``: adding or evicting an interval is O(1) and a
test costs O(distinct values), which keeps a per-sample evaluation cheap.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

K = TypeVar("K", int, float)

#: Two-sided 95% normal quantile, used for every confidence interval here.
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class RankSum:
    """Mann–Whitney U of the first sample against the second, with its null moments."""

    u: float
    mean: float
    var: float
    m: int
    n: int


def rank_sum(x: Mapping[K, int], y: Mapping[K, int]) -> RankSum:
    """U statistic of ``x`` with mid-ranks for ties and the tie-corrected variance."""
    m, n = sum(x.values()), sum(y.values())
    total = m + n
    pos = 0
    r_x = 0.0
    ties = 0
    for v in sorted(x.keys() | y.keys()):
        cx = x.get(v, 0)
        t = cx + y.get(v, 0)
        r_x += cx * (pos + (t + 1) / 2)
        ties += t * t * t - t
        pos += t
    u = r_x - m * (m + 1) / 2
    var = m * n / 12 * ((total + 1) - ties / (total * (total - 1))) if total > 1 else 0.0
    return RankSum(u=u, mean=m * n / 2, var=var, m=m, n=n)


def norm_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def stratified_less(strata: Iterable[RankSum], continuity: bool = True) -> float:
    """One-sided p-value that the first samples are stochastically smaller (van Elteren).

    Each stratum is weighted by 1/(N+1), the locally most powerful choice when
    the shift is the same in every stratum. The continuity correction is half
    the largest weight: for a single stratum that is exactly the usual +0.5 of
    the normal approximation (what scipy does); with several it errs on the
    conservative side.
    """
    num = 0.0
    var = 0.0
    w_max = 0.0
    for s in strata:
        if s.var <= 0.0:
            continue
        w = 1.0 / (s.m + s.n + 1)
        num += w * (s.u - s.mean)
        var += w * w * s.var
        w_max = max(w_max, w)
    if var <= 0.0:
        return 1.0
    if continuity:
        num += 0.5 * w_max
    return norm_cdf(num / math.sqrt(var))


def mann_whitney_less(x: Sequence[float], y: Sequence[float], continuity: bool = True) -> float:
    """One-sided Mann–Whitney p-value for "x < y" (normal approximation, tie-corrected)."""
    return stratified_less([rank_sum(Counter(x), Counter(y))], continuity)


def order_stats(h: Mapping[K, int], ranks: Sequence[int]) -> list[K]:
    """Values at the given 1-based ranks of the histogram (ranks clamped to 1..n)."""
    n = sum(h.values())
    if n == 0:
        raise ValueError("empty histogram")
    wanted = sorted((min(max(r, 1), n), i) for i, r in enumerate(ranks))
    out: list[K | None] = [None] * len(ranks)
    j = 0
    seen = 0
    for v in sorted(h):
        seen += h[v]
        while j < len(wanted) and wanted[j][0] <= seen:
            out[wanted[j][1]] = v
            j += 1
        if j == len(wanted):
            break
    return [v for v in out if v is not None]


@dataclass(frozen=True, slots=True)
class MedianCI:
    """A sample median with its distribution-free 95% confidence interval."""

    median: float
    low: float
    high: float
    n: int


def median_ci(h: Mapping[K, int]) -> MedianCI:
    """Median and the order-statistic 95% CI (binomial ranks, normal approximation).

    Distribution-free and deterministic: no bootstrap, no random numbers, and
    robust to the heavy tails of per-interval accept len.
    """
    n = sum(h.values())
    half = Z95 * math.sqrt(n) / 2
    lo_rank = math.floor(n / 2 - half)
    hi_rank = math.ceil(n / 2 + 1 + half)
    a, b, lo, hi = order_stats(h, [(n + 1) // 2, n // 2 + 1, lo_rank, hi_rank])
    return MedianCI(median=(a + b) / 2, low=float(lo), high=float(hi), n=n)


def hist_median(h: Mapping[K, int]) -> float:
    """``median_ci(h).median`` without the interval (half the order statistics)."""
    n = sum(h.values())
    a, b = order_stats(h, [(n + 1) // 2, n // 2 + 1])
    return (a + b) / 2


def median(values: Sequence[float]) -> float:
    return median_ci(Counter(values)).median
