"""Time and waiting, passed in rather than read from globals.

Stages take a ``Clock`` for "now" and a ``Waker`` for "wait until something
may have changed", so unit tests drive time by hand and never sleep.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall clock)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when a test says so."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._t = start

    def now(self) -> float:
        return self._t

    def monotonic(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        self._t += seconds


class Waker(Protocol):
    def wait(self, timeout: float) -> bool:
        """Block until woken or ``timeout`` passes; True if woken."""
        ...

    def wake(self) -> None: ...


class EventWaker:
    """A waker backed by a ``threading.Event`` (watchdog callbacks call wake)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def wait(self, timeout: float) -> bool:
        woken = self._event.wait(timeout)
        self._event.clear()
        return woken

    def wake(self) -> None:
        self._event.set()
