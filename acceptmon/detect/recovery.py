"""Whether an open drop has recovered, cheaply enough to ask every few intervals for days.

While a drop is open the recovery check runs every ``RECHECK`` intervals, for as long as it
stays open (the seed incident sat at 19% for days). Its answer needs only the drop of the
load-standardised medians, not the rank test or the confidence intervals ``compare`` also
computes, and the baseline side is frozen: its medians (in the chosen measure) are taken once
per baseline and run. The arithmetic is ``compare``'s own, in the same order, so the answer and
the level are exactly the ones ``compare`` would give.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from functools import partial
from itertools import compress, repeat
from operator import add, eq, ge
from typing import Protocol

from acceptmon.detect.measure import ALPHA_SCALE, Measure, per_token, to_per_token
from acceptmon.detect.series import Sliding, Strata
from acceptmon.detect.settings import DetectSettings
from acceptmon.detect.stats import hist_median

#: Re-check recovery every this many new intervals (the comparison is the costly part).
RECHECK = 5

#: The stretches ahead the bound tries to rule out at once, as fractions (1/n) of the window: a
#: long one spares the most checks deep in a drop, a short one still spares some near its end.
SPANS = (2, 8)


class Ordered:
    """A window's values per load bucket, sorted: its medians at a glance, moved along a few
    intervals at a time while a drop is open (cheaper than sorting its histograms per check)."""

    __slots__ = ("lists",)

    def __init__(self, strata: Strata) -> None:
        self.lists: dict[int, list[int]] = {}
        for bucket, h in strata.items():
            values = self.lists[bucket] = []
            for value in sorted(h):
                values += [value] * h[value]

    @classmethod
    def of(cls, buckets: list[int], values: list[int]) -> Ordered:
        """A window given as columns (bucket, hundredths), sorted per bucket at C speed."""
        window = cls({})
        for bucket in dict.fromkeys(buckets):
            window.lists[bucket] = sorted(compress(values, map(eq, buckets, repeat(bucket))))
        return window


class Reference:
    """One open drop's baseline in the measure it is judged in, ready for repeated checks."""

    __slots__ = ("_k_after", "_medians", "_scale", "_sizes")

    def __init__(self, strata: Strata, measure: Measure) -> None:
        self._k_after: int | None = None
        self._scale = 100.0
        if measure.per_token:  # a side already in α (an adaptive run's) is taken as it is
            (k_before, k_after), (a_before, a_after) = measure.steps, measure.alpha
            if not a_before:
                assert k_before is not None
                strata = to_per_token(strata, k_before)
            self._k_after = None if a_after else k_after
            assert a_after or self._k_after is not None
            self._scale = ALPHA_SCALE
        elif any(measure.alpha):  # α beside accept len with no chain to convert: never comparable
            strata = {}
        self._sizes = {b: sum(h.values()) for b, h in strata.items()}
        self._medians = {b: hist_median(h) for b, h in strata.items()}

    def drop(self, recent: Ordered, min_stratum: int) -> tuple[int, float] | None:
        """(intervals compared, relative drop) of the ``recent`` window against the baseline, as
        ``compare(...).after_n`` and ``.drop``; None where ``compare`` gives None."""
        sizes, medians, k = self._sizes, self._medians, self._k_after
        picked = sorted(
            (b, v)
            for b, v in recent.lists.items()
            if len(v) >= min_stratum and sizes.get(b, 0) >= min_stratum
        )
        if not picked:
            return None
        n_after = [len(v) for _, v in picked]
        total = sum(n_after)
        weights = [n / total for n in n_after]
        before = sum([w * medians[b] for w, (b, _) in zip(weights, picked, strict=True)])
        if k is None:  # ``median_ci``'s median, off the sorted values
            mids = [(v[(n + 1) // 2 - 1] + v[n // 2]) / 2 for n, (_, v) in zip(n_after, picked, strict=True)]
        else:  # per-token acceptance rises with accept len: the order statistics, converted
            mids = [
                (per_token(v[(n + 1) // 2 - 1], k) + per_token(v[n // 2], k)) / 2
                for n, (_, v) in zip(n_after, picked, strict=True)
            ]
        now = sum([w * m for w, m in zip(weights, mids, strict=True)])
        b_value, a_value = before / self._scale, now / self._scale
        return total, 1.0 - a_value / b_value if b_value > 0 else 0.0

    def recovered(self, recent: Ordered, cfg: DetectSettings) -> bool:
        """Enough recent intervals, back within ``resolve_drop`` of the baseline."""
        got = self.drop(recent, cfg.min_stratum)
        return got is not None and got[0] >= cfg.min_after and got[1] <= cfg.resolve_drop

    def keys(self, buckets: list[int], values: list[int], cfg: DetectSettings) -> list[int]:
        """Each interval as ``2 × bucket + high`` (for ``may_recover``'s counts): high where its
        value, in this measure, is within ``resolve_drop`` of its bucket's baseline median, so
        that a bucket's median can be back there. A bucket too small in the baseline to be
        compared has no high values; one whose median is not above 0 (where no bound can say)
        has only high ones."""
        sizes, medians, k = self._sizes, self._medians, self._k_after
        keep, least = 1.0 - cfg.resolve_drop, cfg.min_stratum
        distinct = sorted(set(values)) if k is not None else []
        lowest: dict[int, float] = {}  # bucket → the least high value (hundredths of accept len)
        for bucket, size in sizes.items():
            if size < least:
                continue
            base = medians[bucket]
            bar = keep * base * (1 - 1e-9)
            if base <= 0:
                lowest[bucket] = -math.inf
            elif k is None:
                lowest[bucket] = bar
            else:  # ``per_token`` keeps the order: the least value that converts to the bar
                at = bisect_left(distinct, bar, key=partial(per_token, k=k))
                lowest[bucket] = distinct[at] if at < len(distinct) else math.inf
        high = map(ge, values, map(lowest.get, buckets, repeat(math.inf)))
        return list(map(add, map(add, buckets, buckets), high))

    @staticmethod
    def may_recover(union: Counter[int], inner: Counter[int], least: int) -> bool:
        """Whether a window can be back near the baseline while it holds only intervals whose
        ``keys`` ``union`` counts, and at least the intervals per bucket ``inner`` counts: a
        bound that spares the exact check at most points of a drop that stays open.

        The weighted drop is below ``resolve_drop`` only if some picked bucket's median is
        within it of its baseline median (a weighted mean of ratios is at most their largest);
        a median is at most the upper middle value, which is high only if the ``n - n // 2``
        largest are, and a bucket of the window holds at least ``inner``'s (and ``least``) of
        it, at most ``union``'s values, of which at most ``union``'s are high."""
        for key, count in union.items():
            if key % 2:  # a bucket with high values
                bucket = key // 2
                n = max(least, inner[bucket])
                if count >= n - n // 2 and count + union[key - 1] >= n:
                    return True
        return False


class Judged(Protocol):
    """What a stretch's checks need of the source (``detect.source.SourceState``)."""

    def references(self) -> list[tuple[str, Reference]]:
        """The open drops, oldest first, each with its baseline ready for checks."""
        ...

    def resolve_drop(self, key: str, at: datetime | None, strata: Strata) -> None:
        """Resolve a recovered drop at ``at``, the recent window then being ``strata``."""
        ...

    def checked(self, used: int) -> None:
        """The last check followed the run's ``used``-th used interval."""
        ...

    def keep(self, window: Ordered) -> None:
        """``window`` is the recent window's sorted copy, in step with it."""
        ...


def _strata_of(buckets: list[int], values: list[int]) -> Strata:
    """(bucket, value) columns as per-bucket histograms."""
    out: Strata = {}
    for (bucket, value), count in Counter(zip(buckets, values, strict=True)).items():
        out.setdefault(bucket, {})[value] = count
    return out


class Stretch:
    """The recovery checks due inside a stretch the bulk path takes, one every ``RECHECK`` used
    intervals, run in line order (``until``) among the other rules' events.

    Each sees the recent window as it stood after its line: the last ``size`` of the held
    intervals and the stretch's, as columns. A check runs exactly (the window sorted per
    bucket) only where ``Reference.may_recover`` cannot rule it out; the bound is tried first
    on the checks of the next ``size // span`` intervals at once (``SPANS``), with counts taken
    at C speed, so that deep in a drop most checks cost nothing. The window itself takes the
    stretch in one go at the end (``finish``).
    """

    __slots__ = (
        "_at",
        "_buckets",
        "_cfg",
        "_held",
        "_k",
        "_keys",
        "_last",
        "_new",
        "_recent",
        "_refs",
        "_rows",
        "_safe",
        "_start",
        "_state",
        "_values",
    )

    def __init__(
        self,
        state: Judged,
        cfg: DetectSettings,
        window: tuple[Sliding, tuple[list[int], list[int]]],
        new: tuple[list[int], list[int], list[int]],
        schedule: tuple[int, int, int],
        at: Callable[[int], datetime | None],
    ) -> None:
        """``window``: the recent window and its held intervals as (bucket, hundredths)
        columns; ``new``: the stretch's used intervals (buckets, hundredths, rows);
        ``schedule``: (used intervals before the stretch, the last check's, the stretch's last
        row); ``at(row)``: the source's newest time after a row."""
        self._recent, (held_b, held_v) = window
        buckets, centis, self._rows = new
        self._state, self._cfg, self._at, self._new = state, cfg, at, (buckets, centis)
        self._refs = state.references()
        self._buckets, self._values = held_b + buckets, held_v + centis
        self._keys = [ref.keys(self._buckets, self._values, cfg) for _, ref in self._refs]
        self._held, self._safe = len(held_b), 0
        self._start, checked, self._last = schedule
        self._k = checked + RECHECK - self._start  # the next check follows the k-th interval

    def until(self, row: int) -> None:
        """Every check due after a line before ``row``."""
        rows, k, refs, cfg = self._rows, self._k, self._refs, self._cfg
        limit = bisect_left(rows, row)  # checks after the lines before ``row``, not the last
        if limit == len(rows) and rows and rows[-1] == self._last:
            limit -= 1
        checked = None
        while refs and k <= limit:
            if k <= self._safe:  # checks up to ``_safe`` are known to find no recovery
                checked = k + (min(self._safe, limit) - k) // RECHECK * RECHECK
                k = checked + RECHECK
                continue
            checked = k
            self._safe = self._clear(k)
            if k > self._safe:
                lo, hi = max(0, self._held + k - self._recent.size), self._held + k
                window = Ordered.of(self._buckets[lo:hi], self._values[lo:hi])
                for key, ref in [(key, ref) for key, ref in refs if ref.recovered(window, cfg)]:
                    strata = _strata_of(self._buckets[lo:hi], self._values[lo:hi])
                    self._state.resolve_drop(key, self._at(rows[k - 1]), strata)
                    at = refs.index((key, ref))
                    del refs[at], self._keys[at]
            k += RECHECK
        self._k = k
        if checked is not None:
            self._state.checked(self._start + checked)

    def finish(self) -> None:
        """Extend the window with the stretch, and keep its sorted copy."""
        self._recent.extend(*self._new)
        lo = max(0, len(self._buckets) - self._recent.size)
        self._state.keep(Ordered.of(self._buckets[lo:], self._values[lo:]))

    def _clear(self, k: int) -> int:
        """The furthest used interval (from ``k`` on) up to which no check can find a recovery;
        ``k`` - 1 where the bound cannot rule out the check after the ``k``-th."""
        size, held, n = self._recent.size, self._held, len(self._rows)
        least, buckets = self._cfg.min_stratum, self._buckets
        for span in (*SPANS, None):
            end = k if span is None else min(k + max(RECHECK, size // span // RECHECK * RECHECK), n)
            first, inner = max(0, held + k - size), Counter(buckets[max(0, held + end - size) : held + k])
            if not any(
                Reference.may_recover(Counter(keys[first : held + end]), inner, least) for keys in self._keys
            ):
                return end
        return k - 1
