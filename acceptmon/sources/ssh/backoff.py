"""Reconnect delays: exponential with jitter, capped (pure; random is passed in).

Jitter keeps many agents (or many hosts behind one bastion) from reconnecting
in lockstep after a network blip; the cap bounds how stale a source gets once
the host is back.
"""

from __future__ import annotations

from collections.abc import Callable


class Backoff:
    """Delay before the next attempt: ``base * 2**n`` scaled into [½, 1], at most ``cap``."""

    def __init__(self, base: float = 0.5, cap: float = 30.0, rand: Callable[[], float] | None = None) -> None:
        import random

        self.base = base
        self.cap = cap
        self._rand = rand or random.random
        self.failures = 0

    def next_delay(self) -> float:
        """Count a failure and return how long to wait before trying again."""
        ceiling = min(self.cap, self.base * (2**self.failures))
        self.failures = min(self.failures + 1, 32)
        return float(ceiling * (0.5 + 0.5 * self._rand()))

    def reset(self) -> None:
        """A success: the next failure waits ``base`` again."""
        self.failures = 0
