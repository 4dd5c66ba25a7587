"""Small per-interval state machines behind the fast rules, each O(1) per interval."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from itertools import islice, repeat
from operator import gt, sub, truediv
from typing import Literal

from acceptmon.detect.series import Point
from acceptmon.detect.stats import median

Transition = Literal["fire", "resolve"] | None


class Persistence:
    """Fires once ≥ ``fraction`` of the last ``n`` intervals were bad, resolves once ≤ 1 − fraction were.

    The gap between the two thresholds is hysteresis, so a level hovering at a
    threshold does not flap. ``active`` may start true so that a condition
    carried over a restart resolves only when the new run shows it is gone.
    """

    __slots__ = ("_bad", "_clear", "_fire", "_flags", "active")

    def __init__(self, n: int, fraction: float, active: bool = False) -> None:
        self._flags: deque[bool] = deque(maxlen=n)
        self._bad = 0
        self._fire = max(1, math.ceil(fraction * n - 1e-9))
        self._clear = n - self._fire
        self.active = active

    @property
    def bad(self) -> int:
        return self._bad

    @property
    def flags(self) -> tuple[bool, ...]:
        return tuple(self._flags)

    def load(self, flags: Iterable[bool]) -> None:
        """Refill the window from a checkpoint; nothing fires (``active`` comes with the checkpoint)."""
        self._flags.clear()
        self._flags.extend(bool(f) for f in flags)
        self._bad = sum(self._flags)

    @property
    def breaching(self) -> bool:
        """Active, or the last interval bad and half of what fires it bad: a breach under way."""
        return self.active or (bool(self._flags) and self._flags[-1] and 2 * self._bad >= self._fire)

    @property
    def quiet(self) -> bool:
        """Inactive with no bad interval in the window: good intervals cannot change anything."""
        return not self.active and self._bad == 0

    def skip_good(self, n: int) -> None:
        """``step(False)`` ``n`` times, when ``quiet`` (no transition can come of it)."""
        self._flags.extend(repeat(False, min(n, self._flags.maxlen or 0)))

    def steps(self, flags: list[bool]) -> list[tuple[int, Transition]]:
        """``step`` for each flag in turn, in one loop; the (index, transition) of those that moved."""
        if self.quiet and not any(flags):
            self.skip_good(len(flags))
            return []
        out: list[tuple[int, Transition]] = []
        window, size, fire, clear = self._flags, self._flags.maxlen or 0, self._fire, self._clear
        bad, active, k, n = self._bad, self.active, 0, len(flags)
        while k < n:
            if not active and not bad:  # nothing can happen until the next bad interval
                j = _next_bad(flags, k)
                window.extend(repeat(False, min(j - k, size)))
                if j == n:
                    break
                k = j
            flag = flags[k]
            if len(window) == size:
                bad -= window[0]
            window.append(flag)
            bad += flag
            if len(window) == size:
                if not active and bad >= fire:
                    active = True
                    out.append((k, "fire"))
                elif active and bad <= clear:
                    active = False
                    out.append((k, "resolve"))
            k += 1
        self._bad, self.active = bad, active
        return out

    def step(self, bad: bool) -> Transition:
        if len(self._flags) == self._flags.maxlen:
            self._bad -= self._flags[0]
        self._flags.append(bad)
        self._bad += bad
        if len(self._flags) < (self._flags.maxlen or 0):
            return None
        if not self.active and self._bad >= self._fire:
            self.active = True
            return "fire"
        if self.active and self._bad <= self._clear:
            self.active = False
            return "resolve"
        return None


def _smoothed(level: float, xs: list[float], lo: int, hi: int) -> float:
    """``level`` after ``step``'s smoothing of the clipped shortfalls ``xs[lo:hi]``."""
    for x in islice(xs, lo, hi):
        level += 0.05 * (((x if x < 0.5 else 0.5) if x > -0.5 else -0.5) - level)
    return level


def _next_bad(flags: list[bool], k: int) -> int:
    """Index of the first true flag from ``k`` on, else ``len(flags)``."""
    try:
        return flags.index(True, k)
    except ValueError:
        return len(flags)


class Drift:
    """One-sided CUSUM of the relative shortfall of accept len below its reference.

    The reference of each load bucket is the median of the run's first
    ``ref_n`` intervals in that bucket, so load swings compare like with like.
    Each interval adds (shortfall − ``min_drop``): a level that sits less than
    ``min_drop`` below the reference (prompt-mix shifts of ±5–8%) drifts the
    sum back to zero, while a sustained larger drop accumulates to
    ``threshold``. Shortfalls are clipped so a single freak interval cannot
    fire it, and the sum is capped so a recovery resolves in bounded time.
    """

    __slots__ = ("_learning", "_refs", "active", "level", "min_drop", "ref_n", "sum", "threshold")

    def __init__(self, min_drop: float, threshold: float, ref_n: int) -> None:
        self.min_drop, self.threshold, self.ref_n = min_drop, threshold, ref_n
        self._refs: dict[int, float] = {}
        self._learning: dict[int, list[float]] = {}
        self.sum = 0.0
        self.level = 0.0  # smoothed recent shortfall, for the summary
        self.active = False

    @property
    def refs(self) -> dict[int, float]:
        """Reference level per load bucket (read-only by convention)."""
        return self._refs

    @property
    def learning(self) -> dict[int, list[float]]:
        """Values seen per bucket that has no reference yet (read-only by convention)."""
        return self._learning

    def load(self, refs: dict[int, float], learning: dict[int, list[float]]) -> None:
        """Restore the references from a checkpoint (``sum``, ``level``, ``active`` are plain fields)."""
        self._refs, self._learning = refs, learning

    def reference(self) -> float | None:
        """The mean reference over buckets seen, for reporting."""
        return sum(self._refs.values()) / len(self._refs) if self._refs else None

    def steps(
        self, buckets: list[int], values: list[float], moved: Callable[[int, Transition], None]
    ) -> None:
        """``step`` for each pair in turn; ``moved(index, transition)`` right when one fires or
        resolves (its text reads ``level`` and ``sum`` as they are then). Between the lines
        that learn a reference, the shortfalls are a column (``step``'s arithmetic, at C speed)."""
        refs, n, k = self._refs, len(buckets), 0
        if 0.0 in refs.values() or not self.threshold > 0.0 or not -0.5 <= self.min_drop < 0.5:
            for k, (bucket, value) in enumerate(zip(buckets, values, strict=True)):
                t = self.step(bucket, value)
                if t is not None:
                    moved(k, t)
            return
        known = list(map(refs.get, buckets))
        while k < n:
            try:
                j = known.index(None, k)
            except ValueError:
                j = n
            if j > k:
                ref, mine = (known, values) if j - k == n else (known[k:j], values[k:j])
                self._shortfalls(list(map(truediv, map(sub, ref, mine), ref)), k, moved)
            if j < n:
                had = len(refs)
                self._learn(buckets[j], values[j])
                if len(refs) != had:  # the rest of the column sees the new reference
                    known[j + 1 :] = map(refs.get, buckets[j + 1 :])
            k = j + 1

    def _shortfalls(self, xs: list[float], at: int, moved: Callable[[int, Transition], None]) -> None:
        """``step``'s sums for relative shortfalls ``xs`` (the ``at``-th line first), each
        clipped to ±0.5 where it is used (``step``'s min/max written out: the same argument
        each would return, NaN included). While the sum is 0 and nothing is active, a shortfall
        up to ``min_drop`` leaves it 0 (``step`` adds ``short - min_drop``, clipped at 0): such
        stretches are skipped at C speed (a clipped shortfall is above ``min_drop``, which is
        within ±0.5, where the unclipped one is), and the smoothed ``level`` is then taken in
        one tight loop up to each transition."""
        min_drop, threshold = self.min_drop, self.threshold
        cap, total, active = 2 * threshold, self.sum, self.active
        over = list(map(gt, xs, repeat(min_drop)))
        i, n, done = 0, len(xs), 0
        while i < n:
            if not active and total == 0.0:
                try:
                    i = over.index(True, i)
                except ValueError:
                    break
            x = xs[i]
            y = total + ((x if x < 0.5 else 0.5) if x > -0.5 else -0.5) - min_drop
            y = y if y > 0.0 else 0.0
            total = y if y < cap else cap
            i += 1
            if not active and total >= threshold:
                active = True
            elif active and total == 0.0:
                active = False
            else:
                continue
            self.level, self.sum, self.active, done = _smoothed(self.level, xs, done, i), total, active, i
            moved(at + i - 1, "fire" if active else "resolve")
        self.level, self.sum, self.active = _smoothed(self.level, xs, done, n), total, active

    def _learn(self, bucket: int, value: float) -> None:
        seen = self._learning.setdefault(bucket, [])
        seen.append(value)
        if len(seen) >= self.ref_n:
            self._refs[bucket] = median(seen)
            del self._learning[bucket]

    def step(self, bucket: int, value: float) -> Transition:
        ref = self._refs.get(bucket)
        if ref is None:
            self._learn(bucket, value)
            return None
        short = min(0.5, max(-0.5, (ref - value) / ref))
        self.level += 0.05 * (short - self.level)
        self.sum = min(2 * self.threshold, max(0.0, self.sum + short - self.min_drop))
        if not self.active and self.sum >= self.threshold:
            self.active = True
            return "fire"
        if self.active and self.sum == 0.0:
            self.active = False
            return "resolve"
        return None


def stall_reason(last: Point, gap_s: float, stall_s: float, min_running: int, silent_s: float | None) -> str:
    """Why the silence since ``last`` is alarming, or "" when it is not.

    SGLang prints a Decode line only while decoding, so the last line before a
    server goes idle nearly always shows a request or two still running: a
    silence after ``running < min_running`` and an empty queue is most likely
    idleness, not a hang. A queued request, or a full batch, cannot just vanish.
    """
    if silent_s is not None and gap_s > silent_s:
        return "silent"
    if gap_s <= stall_s:
        return ""
    if (last.queued or 0) > 0 or (last.running or 0) >= min_running:
        return "busy"
    return ""
