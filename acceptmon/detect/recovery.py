"""Whether an open drop has recovered, cheaply enough to ask every few intervals for days.

While a drop is open the recovery check runs every ``RECHECK`` intervals, for as long as it
stays open (the seed incident sat at 19% for days). Its answer needs only the drop of the
load-standardised medians, not the rank test or the confidence intervals ``compare`` also
computes, and the baseline side is frozen: its medians (in the chosen measure) are taken once
per baseline and run. The arithmetic is ``compare``'s own, in the same order, so the answer and
the level are exactly the ones ``compare`` would give.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial

from acceptmon.detect.measure import ALPHA_SCALE, Measure, per_token, to_per_token
from acceptmon.detect.series import Sliding, Strata
from acceptmon.detect.stats import median_ci


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

    def move(self, gone: Iterable[tuple[int, int]], added: Iterable[tuple[int, int]]) -> None:
        """The window lost ``gone`` and gained ``added`` (bucket, value pairs)."""
        lists = self.lists
        for bucket, value in gone:
            values = lists[bucket]
            del values[bisect_left(values, value)]
            if not values:
                del lists[bucket]
        for bucket, value in added:
            insort(lists.setdefault(bucket, []), value)


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

    def drop(self, recent: Ordered, min_stratum: int) -> tuple[int, float] | None:
        """(intervals compared, relative drop) of the ``recent`` window against the baseline, as
        ``compare(...).after_n`` and ``.drop``; None where ``compare`` gives None."""
        lists, sizes, medians, median = recent.lists, self._sizes, self._medians, self._median
        buckets = sorted(
            b for b, v in lists.items() if len(v) >= min_stratum and sizes.get(b, 0) >= min_stratum
        )
        if not buckets:
            return None
        after = [lists[b] for b in buckets]
        n_after = list(map(len, after))
        total = sum(n_after)
        weights = [n / total for n in n_after]
        before = sum(w * m for w, m in zip(weights, [medians[b] for b in buckets], strict=True))
        now = sum(w * m for w, m in zip(weights, map(median, after), strict=True))
        b_value, a_value = before / self._scale, now / self._scale
        return total, 1.0 - a_value / b_value if b_value > 0 else 0.0

    def _median(self, values: list[int]) -> float:
        """``median_ci``'s median of the sorted ``values`` in the measure: per-token acceptance
        rises with accept len, so the order statistics are those of accept len, converted."""
        n, k = len(values), self._k_after
        a, b = values[(n + 1) // 2 - 1], values[n // 2]
        if k is not None:
            a, b = per_token(a, k), per_token(b, k)
        return (a + b) / 2


#: ``SourceState._recover``: the check after the run's ``used``-th used interval, on the window
#: then (sorted, and as histograms on demand), logged at ``at()``; whether a drop is still open.
Recover = Callable[[int, Callable[[], datetime | None], Ordered, Callable[[], Strata]], bool]


def _strata_of(pairs: list[tuple[int, int]], lo: int, hi: int) -> Strata:
    """(bucket, value) pairs ``lo``..``hi`` - 1 as per-bucket histograms."""
    out: Strata = {}
    for (bucket, value), count in Counter(pairs[lo:hi]).items():
        out.setdefault(bucket, {})[value] = count
    return out


class Stretch:
    """The recovery checks due inside a stretch the bulk path takes, one every ``every`` used
    intervals, run in line order (``until``) among the other rules' events.

    Each sees the recent window as it stood after its line: the sorted copy moves along the
    held intervals and the stretch's (the window is the last ``size`` of them); the window
    itself takes the stretch in one go at the end (``finish``).
    """

    __slots__ = (
        "_at",
        "_done",
        "_every",
        "_held",
        "_k",
        "_kept",
        "_last",
        "_new",
        "_recent",
        "_recover",
        "_rows",
        "_seq",
        "_start",
        "window",
    )

    def __init__(
        self,
        recent: Sliding,
        window: Ordered,
        new: tuple[list[int], list[int], list[int]],
        schedule: tuple[int, int, int, int],
        recover: Recover,
        at: Callable[[int], datetime | None],
        kept: Callable[[Ordered], None],
    ) -> None:
        """``new``: the stretch's used intervals (buckets, hundredths, rows); ``schedule``:
        (used intervals before the stretch, the last check's, every, the stretch's last row);
        ``at(row)``: the source's newest time after a row; ``kept``: told of the sorted copy,
        in step with the window, at the end."""
        held = recent.pairs()
        assert held is not None
        buckets, centis, self._rows = new
        self._new = (buckets, centis)
        self._recent, self.window, self._recover, self._at, self._kept = recent, window, recover, at, kept
        self._seq = held + list(zip(buckets, centis, strict=True))
        self._held, self._done = len(held), 0
        self._start, checked, self._every, self._last = schedule
        self._k = checked + self._every - self._start  # the next check follows the k-th interval

    def until(self, row: int) -> None:
        """Every check due after a line before ``row``."""
        rows, k = self._rows, self._k
        while k <= len(rows) and rows[k - 1] < row and rows[k - 1] != self._last:
            self._move(k)
            hi = self._held + k
            strata = partial(_strata_of, self._seq, max(0, hi - self._recent.size), hi)
            if not self._recover(self._start + k, partial(self._at, rows[k - 1]), self.window, strata):
                k = len(rows) + 1  # no drop open: no more checks
                break
            k += self._every
        self._k = k

    def finish(self) -> None:
        """Move to the stretch's end and extend the window with it."""
        self._move(len(self._rows))
        self._recent.extend(*self._new)
        self._kept(self.window)

    def _move(self, k: int) -> None:
        """The sorted copy to the window after the stretch's ``k``-th used interval."""
        held, done, size, seq = self._held, self._done, self._recent.size, self._seq
        first, gone = max(0, held + done - size), max(0, held + k - size)
        if gone > held + done:  # moved by more than the window's size: anew
            self.window = Ordered(_strata_of(seq, gone, held + k))
        else:
            self.window.move(seq[first:gone], seq[held + done : held + k])
        self._done = k
