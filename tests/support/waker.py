"""A Waker that counts wakes and never blocks: tests read how often something woke the loop."""

from __future__ import annotations


class CountingWaker:
    def __init__(self) -> None:
        self.woken = 0

    def wait(self, timeout: float) -> bool:
        return False

    def wake(self) -> None:
        self.woken += 1
