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
from operator import itemgetter
from typing import Protocol

from acceptmon.detect.measure import ALPHA_SCALE, Measure, per_token, to_per_token
from acceptmon.detect.series import Sliding, Strata
from acceptmon.detect.settings import DetectSettings
from acceptmon.detect.stats import hist_median

#: Re-check recovery every this many new intervals (the comparison is the costly part).
RECHECK = 5

#: The stretches ahead an exact check tries to rule out, as fractions (1/n) of the window: a
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

    def cannot_recover(
        self, window: Ordered, gone: Counter[int], added: dict[int, list[int]], cfg: DetectSettings
    ) -> bool:
        """Whether no window between ``window`` and it having lost ``gone`` (buckets) and gained
        ``added`` (values per bucket), one interval at a time, can be ``recovered``: a bound
        that spares the exact check at most points of a drop that stays open.

        The weighted drop is below ``resolve_drop`` only if some picked bucket's median is within
        it of its baseline median (a weighted mean of ratios is at most their largest). Each
        window of the stretch holds at least ``len - gone`` of a bucket's values and only values
        from ``window`` and ``added``, so its median is at most the ``c``-th largest of those
        (``c`` half that least size); ``per_token`` keeps the order. False where the bound
        cannot say (a baseline median not above 0)."""
        sizes, medians, k, lists = self._sizes, self._medians, self._k_after, window.lists
        least, keep = cfg.min_stratum, 1.0 - cfg.resolve_drop
        for bucket in lists.keys() | added.keys():
            if sizes.get(bucket, 0) < least:
                continue
            values, more = lists.get(bucket, []), added.get(bucket, [])
            n = max(least, len(values) - gone[bucket])
            if len(values) + len(more) < n:  # never enough values to be picked
                continue
            c = n - n // 2
            top = sorted(values[-c:] + more)[-c]
            high = top if k is None else per_token(top, k)
            base = medians[bucket]
            if base <= 0 or high >= keep * base * (1 - 1e-9):
                return False
        return True


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
        "_cfg",
        "_done",
        "_held",
        "_k",
        "_last",
        "_new",
        "_recent",
        "_refs",
        "_rows",
        "_safe",
        "_seq",
        "_start",
        "_state",
        "window",
    )

    def __init__(
        self,
        state: Judged,
        cfg: DetectSettings,
        window: tuple[Sliding, list[tuple[int, int]], Ordered],
        new: tuple[list[int], list[int], list[int]],
        schedule: tuple[int, int, int],
        at: Callable[[int], datetime | None],
    ) -> None:
        """``window``: the recent window, its (bucket, value) pairs and its sorted copy; ``new``: the stretch's used
        intervals (buckets, hundredths, rows); ``schedule``: (used intervals before the
        stretch, the last check's, the stretch's last row); ``at(row)``: the source's newest
        time after a row."""
        self._recent, held, self.window = window
        buckets, centis, self._rows = new
        self._state, self._cfg, self._at, self._new = state, cfg, at, (buckets, centis)
        self._refs = state.references()
        self._seq = held + list(zip(buckets, centis, strict=True))
        self._held, self._done, self._safe = len(held), 0, 0
        self._start, checked, self._last = schedule
        self._k = checked + RECHECK - self._start  # the next check follows the k-th interval

    def until(self, row: int) -> None:
        """Every check due after a line before ``row``."""
        rows, k, refs, cfg = self._rows, self._k, self._refs, self._cfg
        checked = None
        while refs and k <= len(rows) and (line := rows[k - 1]) < row and line != self._last:
            checked = k
            if k > self._safe:  # checks up to ``_safe`` are known to find no recovery
                self._move(k)
                window = self.window
                for key, ref in [(key, ref) for key, ref in refs if ref.recovered(window, cfg)]:
                    hi = self._held + k
                    strata = _strata_of(self._seq, max(0, hi - self._recent.size), hi)
                    self._state.resolve_drop(key, self._at(line), strata)
                    refs.remove((key, ref))
                self._safe = self._clear(k)
            k += RECHECK
        self._k = k
        if checked is not None:
            self._state.checked(self._start + checked)

    def finish(self) -> None:
        """Move to the stretch's end and extend the window with it."""
        self._move(len(self._rows))
        self._recent.extend(*self._new)
        self._state.keep(self.window)

    def _clear(self, k: int) -> int:
        """The furthest used interval (after ``k``, the window moved there) up to which no check
        can find a recovery; ``k`` where the bound cannot say."""
        size, held, seq, refs = self._recent.size, self._held + k, self._seq, self._refs
        for span in SPANS:
            end = min(k + max(RECHECK, size // span // RECHECK * RECHECK), len(self._rows))
            if end <= k or not refs:
                return k
            gone = Counter(map(itemgetter(0), seq[max(0, held - size) : max(0, held + end - k - size)]))
            added: dict[int, list[int]] = {}
            for b, v in seq[held : held + end - k]:
                added.setdefault(b, []).append(v)
            if all(ref.cannot_recover(self.window, gone, added, self._cfg) for _, ref in refs):
                return end
        return k

    def _move(self, k: int) -> None:
        """The sorted copy to the window after the stretch's ``k``-th used interval."""
        held, done, size, seq = self._held, self._done, self._recent.size, self._seq
        first, gone = max(0, held + done - size), max(0, held + k - size)
        if gone > held + done:  # moved by more than the window's size: anew
            self.window = Ordered(_strata_of(seq, gone, held + k))
        else:
            self.window.move(seq[first:gone], seq[held + done : held + k])
        self._done = k
