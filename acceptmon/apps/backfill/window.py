"""Which log times backfill may write samples at: never after now, never an isolated outlier.

One corrupted timestamp (year 9999) written into a TSDB block makes Prometheus's
time retention, which counts back from the newest block, delete every other
block. So a time after ``now`` (when backfill started) is never a sample's
time, and a time far from both of its neighbours in the log (more than ``gap``
from each, and not between them: a bad RTC, one garbled line) is not either.
Rejecting a time costs little: the line's values are still in the store, so
they show at the next sample taken at a trusted time.

A time that jumps more than ``gap`` from the last trusted one is held until the
next line of its source: if that line is near it (or farther on, as when a
server restarts days later), the jump was real and the time is trusted; if the
next line returns near the last trusted time, it was an outlier. A source's
first time has no trusted neighbour before it: when it is far from the next
one, the two after it decide. At the end, a held time with one neighbour only is
refused if it is more than ``one_sided`` from it (a lone line a week after the
rest), so that a sparse log keeps its last line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import sub

#: Times this far from both neighbours (and not between them) are outliers.
GAP_S = 3600.0
#: A time judged by one neighbour only (a source's last) is refused beyond this from it.
ONE_SIDED_S = 7 * 86400.0


def isolated(t: float, before: float | None, after: float | None, gap: float) -> bool:
    """Whether ``t`` is farther than ``gap`` from each neighbour, and not between them."""
    near = [abs(t - n) for n in (before, after) if n is not None]
    if not near:
        return False
    span = abs(before - after) if before is not None and after is not None else 0.0
    return min(near) > max(gap, span)


@dataclass
class TimeWindow:
    """Per source, which line times are trusted (see the module doc); counts what it refused."""

    now: float
    gap: float = GAP_S
    one_sided: float = ONE_SIDED_S
    #: Times refused because they are after ``now``.
    future: int = 0
    #: Times refused because they are isolated from their neighbours.
    outliers: int = 0
    _last: dict[str, float] = field(default_factory=dict)
    _held: dict[str, list[float]] = field(default_factory=dict)

    def admit(self, source: str, t: float) -> list[float]:
        """The times of ``source`` trusted now, oldest first (``t`` last if it is one of them)."""
        if t > self.now:
            self.future += 1
            return []
        held = self._held.setdefault(source, [])
        held.append(t)
        return self._settle(source, held, final=False)

    def plain(self, source: str, t: float) -> bool:
        """Trust ``t`` at once if it is the usual case, nothing held and at most ``gap`` after
        the last trusted time (not after now): what ``admit`` answers then ([t]), for less."""
        last = self._last.get(source)
        if last is None or t > self.now or not last <= t <= last + self.gap or self._held.get(source):
            return False
        self._last[source] = t
        return True

    def steady(self, source: str, since: float, times: list[float]) -> bool:
        """Whether ``plain`` trusts each of ``times`` after ``since`` (the last trusted time) in
        turn: they are in order, none more than ``gap`` after the one before nor after now, and
        nothing is held. If so, the last of them is now the last trusted time."""
        if self._last.get(source) != since or self._held.get(source) or times[-1] > self.now:
            return False
        steps = list(map(sub, times, [since, *times[:-1]]))
        if min(steps) < 0 or max(steps) > self.gap:
            return False
        self._last[source] = times[-1]
        return True

    def finish(self) -> dict[str, list[float]]:
        """Judge the times still held (a source's last lines) by the neighbours they have."""
        return {s: self._settle(s, held, final=True) for s, held in self._held.items() if held}

    def _settle(self, source: str, held: list[float], final: bool) -> list[float]:
        out: list[float] = []
        gap = self.gap
        while held:
            h, last = held[0], self._last.get(source)
            if last is not None:
                if abs(h - last) <= gap:
                    trust = True
                elif len(held) < 2 and not final:
                    break
                elif len(held) < 2:
                    trust = abs(h - last) <= self.one_sided
                else:
                    trust = not isolated(h, last, held[1], gap)
            elif len(held) < 2:
                if not final:
                    break
                trust = True  # a source's one and only time
            elif abs(h - held[1]) <= gap:
                trust = True
            elif len(held) < 3 and not final:
                break
            else:  # the first time, far from the next: the two after it decide
                trust = len(held) < 3 or not isolated(h, held[1], held[2], gap)
            held.pop(0)
            if trust:
                self._last[source] = h
                out.append(h)
            else:
                self.outliers += 1
        return out

    def refused(self, ahead: int = 0) -> str | None:
        """The stderr note on refused times (``ahead``: lines the pipeline's guard already
        retimed, ``runs.ahead``), or None if there were none."""
        future = self.future + ahead
        if not (future or self.outliers):
            return None
        return (
            f"acceptmon: {future + self.outliers} line time(s) not used as sample times: "
            f"{future} after now, {self.outliers} far from their neighbouring lines' times (a "
            "corrupted timestamp); those lines' values are in the next sample"
        )
