"""No paging for history: what a backlog already settled is recorded, not sent.

When the agent starts (first deployment on an old log, or back after
downtime) it reads the backlog in one go. Findings raised and resolved within
it — a drop that a later revert fixed, a stall that ended days ago — are
history: they are logged and kept in /api/findings, but notifiers never see
them. A finding still open when the backlog is read is sent (a drop still
active is news). Two exceptions keep that honest: a finding already paged
when the agent stopped is not history (its RESOLVED must follow its firing),
and a log that has been silent since long before the agent started does not
page as a stall (nobody is running there any more).

Which episodes were paged is checkpointed (``paged``), so a restart tells a
finding the last run paged from one it held back as history (or never got
to decide on): only the first is open news; the others are judged afresh,
and a stall held as history stays held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from acceptmon.detect.findings import STALLED
from acceptmon.detect.series import seconds
from acceptmon.model import Finding

log = logging.getLogger("acceptmon.agent")

#: A stall whose silence began this long before the agent started is history.
STALE_S = 3600.0

Episode = tuple[str, str | None]


def episode(f: Finding) -> Episode:
    """One firing of a finding: a re-fire after resolution has a new ``first_seen``."""
    return f.key, f.first_seen.isoformat() if f.first_seen else None


class HistoryFilter:
    """Decides which findings go to notifiers while and after a backlog is read."""

    def __init__(self, started: float, stale_s: float = STALE_S) -> None:
        self.started = started
        self.stale_s = stale_s
        self.catching_up = True
        self._open: set[str] = set()
        self._history: set[Episode] = set()
        #: Episodes handed to the notifiers (checkpointed: a restart must know them).
        self._paged: set[Episode] = set()
        self._last_time: Callable[[str], datetime | None] | None = None

    def open_at_start(self, findings: Iterable[Finding], paged: Iterable[Episode] | None = None) -> None:
        """Findings open in the checkpoint that were paged before the restart: never history.

        ``paged`` is the checkpoint's record of what was paged; without one (an older
        checkpoint) every open finding counts as paged.
        """
        active = [f for f in findings if f.active]
        if paged is None:
            self._open = {f.key for f in active}
            return
        self._paged = set(paged)
        self._open = {f.key for f in active if episode(f) in self._paged}

    def paged(self, findings: Iterable[Finding]) -> list[Episode]:
        """The episodes of ``findings`` (those still held) that were paged, for the checkpoint;
        the others are forgotten (the detector no longer holds them), which bounds the set."""
        self._paged = {ep for f in findings if (ep := episode(f)) in self._paged}
        return sorted(self._paged, key=str)

    def caught_up(self, findings: Iterable[Finding], last_time: Callable[[str], datetime | None]) -> None:
        """The backlog is read: what it resolved is history; everything later is news."""
        self.catching_up = False
        for f in findings:
            if not f.active and f.key not in self._open:
                self._history.add(episode(f))
                log.info("history, not sent: %s on %s (resolved within the backlog)", f.rule, f.source)
        self._last_time = last_time

    def pageable(self, f: Finding) -> bool:
        """Whether ``f`` (in its current state) may be handed to the notifiers."""
        if self.catching_up:
            return False  # held: offered again at every evaluation once caught up
        ep = episode(f)
        if ep in self._history:
            return False
        if f.rule == STALLED and f.key not in self._open and self._stale(f.source):
            self._history.add(ep)
            log.info("history, not sent: %s on %s (silent since before the agent started)", f.rule, f.source)
            return False
        self._paged.add(ep)
        return True

    def _stale(self, source: str) -> bool:
        last = seconds(self._last_time(source)) if self._last_time else None
        return last is not None and last < self.started - self.stale_s
