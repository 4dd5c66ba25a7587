"""The production driver: a daemon thread stepping the queues.

All delivery logic lives in ``DeliveryQueue.step``; this only waits for the
time it asks for, or until ``notify`` wakes it.
"""

from __future__ import annotations

import logging
import threading

from acceptmon.clock import EventWaker, Waker
from acceptmon.model import Finding
from acceptmon.notify.notifier import Notifier

log = logging.getLogger("acceptmon.notify")


class NotifyWorker:
    def __init__(self, notifier: Notifier, waker: Waker | None = None, idle_s: float = 5.0) -> None:
        self.notifier = notifier
        self._waker = waker or EventWaker()
        self._idle_s = idle_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="acceptmon-notify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def notify(self, finding: Finding) -> None:
        """Queue and wake the sender; returns after a local disk write."""
        self.notifier.notify(finding)
        self._waker.wake()

    def stop(self, timeout: float = 15.0) -> None:
        """Stop after the request in flight (bounded by the HTTP timeout); pending stay on disk."""
        self._stop.set()
        self._waker.wake()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                wait = self.notifier.step()
            except Exception as exc:  # keep sending whatever happens; log without the URL
                log.error(
                    "notify: worker step failed: %s", self.notifier.scrub(f"{type(exc).__name__}: {exc}")
                )
                wait = self._idle_s
            if wait is None or wait > 0:
                self._waker.wait(self._idle_s if wait is None else min(wait, self._idle_s))
