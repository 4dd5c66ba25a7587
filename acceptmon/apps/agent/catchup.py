"""A scrape asks the ingestion loop to catch up and waits, briefly, for it.

File events no longer wake the loop for every appended line (at 10 lines/s
the wakes alone cost more CPU than the ingestion). Instead a request for
/metrics or /api/* asks for a pass and waits until a pass that *began after
the ask* has finished (read, and evaluated by the detector), so it shows
every line written before it and the findings they raise. The HTTP worker
never ingests itself (the loop owns the stages), and never waits longer than
its deadline: a busy loop (a backlog, a slow step) costs a scrape at most
that, then it serves what is there.
"""

from __future__ import annotations

import threading

from acceptmon.clock import Waker

#: How long a scrape waits for the loop to catch up before serving what it has.
DEADLINE = 0.2


class CatchUp:
    """Asks are numbered; a pass answers every ask made before it began."""

    def __init__(self, waker: Waker, deadline: float = DEADLINE) -> None:
        self._waker = waker
        #: Seconds an ask waits at most (tests on a loaded machine raise it).
        self.deadline = deadline
        self._cond = threading.Condition()
        self._asked = 0
        self._answered = 0

    def ask(self) -> bool:
        """Ask for a pass and wait for it up to ``deadline`` seconds; whether it came in time."""
        deadline = self.deadline
        with self._cond:
            self._asked += 1
            ticket = self._asked
        self._waker.wake()
        with self._cond:
            return self._cond.wait_for(lambda: self._answered >= ticket, deadline)

    def pending(self) -> bool:
        """Asks wait for a pass (then the loop does not sleep)."""
        with self._cond:
            return self._asked > self._answered

    def begin(self) -> int | None:
        """The loop, before a pass: the last ask this pass answers (None: no ask waits)."""
        with self._cond:
            return self._asked if self._asked > self._answered else None

    def answered(self, ticket: int) -> None:
        """The loop, after the pass ``begin`` returned ``ticket`` for: release those asks."""
        with self._cond:
            if ticket > self._answered:
                self._answered = ticket
                self._cond.notify_all()
