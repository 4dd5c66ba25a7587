"""Polling with a deadline: the one way tests wait for something another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable


def poll_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Whether ``predicate`` became true within ``timeout`` seconds (checked once more at the end)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return bool(predicate())
        time.sleep(interval)  # the polling interval of a deadline loop, not synchronisation
    return True


def wait_for(predicate: Callable[[], object], timeout: float, message: str, interval: float = 0.05) -> None:
    if not poll_until(predicate, timeout, interval):
        raise AssertionError(f"timed out after {timeout}s waiting for {message}")
