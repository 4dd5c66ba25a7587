"""The production driver: one daemon thread per channel, stepping its queue.

All delivery logic lives in ``DeliveryQueue.step``; this only waits for the
time it asks for, or until ``notify`` wakes it. One thread per channel so a
stalled receiver (bounded by the transport's whole-request deadline) delays
only its own channel, never the others.
"""

from __future__ import annotations

import logging
import threading
import time

from acceptmon.clock import EventWaker, Waker
from acceptmon.model import Finding, Run
from acceptmon.notify.notifier import Notifier
from acceptmon.notify.queue import DeliveryQueue

log = logging.getLogger("acceptmon.notify")


class NotifyWorker:
    def __init__(self, notifier: Notifier, waker: Waker | None = None, idle_s: float = 5.0) -> None:
        self.notifier = notifier
        self._idle_s = idle_s
        self._stop = threading.Event()
        queues = [c.queue for c in notifier.channels]
        self._wakers: list[Waker] = [EventWaker() for _ in queues]
        if waker is not None and queues:
            self._wakers[0] = waker
        self._threads = [
            threading.Thread(target=self._run, args=(q, w), name=f"acceptmon-notify-{q.name}", daemon=True)
            for q, w in zip(queues, self._wakers, strict=True)
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def notify(self, finding: Finding) -> None:
        """Queue and wake the senders; returns after a local disk write."""
        self.notifier.notify(finding)
        for w in self._wakers:
            w.wake()

    def note_run(self, run: Run) -> None:
        """A run start for channels that record them (Grafana annotations)."""
        self.notifier.note_run(run)
        for w in self._wakers:
            w.wake()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop within ``timeout`` in all (pending messages stay on disk).

        A thread still in a request is a daemon thread, cut off by its deadline or
        at exit; the unit's stop timeout (``TimeoutStopSec``) is never overrun here.
        """
        self._stop.set()
        for w in self._wakers:
            w.wake()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            if t.is_alive():
                t.join(max(0.0, deadline - time.monotonic()))

    def _run(self, queue: DeliveryQueue, waker: Waker) -> None:
        while not self._stop.is_set():
            try:
                wait = queue.step()
            except Exception as exc:  # keep sending whatever happens; log without the URL
                log.error(
                    "notify: worker step failed: %s", self.notifier.scrub(f"{type(exc).__name__}: {exc}")
                )
                wait = self._idle_s
            if wait is None or wait > 0:
                waker.wait(self._idle_s if wait is None else min(wait, self._idle_s))
