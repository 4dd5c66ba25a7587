"""Who gets a worker: lanes that keep scrapes served under floods, and a per-client auth throttle.

A request head is classified by the reactor before it reaches a worker:
``trusted`` (credentials already verified, or no basic auth configured),
``probe`` (an open path such as /healthz) or ``untrusted`` (credentials that
still need a bcrypt check, or are known to be wrong). Each lane has its own
bounded queue, so a flood fills only its own; trusted work is taken first,
probes may hold one worker and untrusted work half of them, and one worker is
always left for trusted work. A flood of wrong passwords or of probes
therefore never makes a verified scrape wait for more than the request a
worker already has in hand.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from typing import Generic, Literal, TypeVar

Lane = Literal["trusted", "probe", "untrusted"]
LANES: tuple[Lane, ...] = ("trusted", "probe", "untrusted")
T = TypeVar("T")


class Lanes(Generic[T]):
    """Three bounded queues feeding one worker pool, trusted first."""

    def __init__(self, workers: int, capacity: int) -> None:
        self._capacity = capacity
        reserve = 1 if workers > 1 else 0  # a worker only trusted work may take
        self._others = workers - reserve
        self._caps: dict[Lane, int] = {
            "trusted": workers,
            "probe": 1,
            "untrusted": max(1, workers // 2),
        }
        self._queues: dict[Lane, deque[T]] = {lane: deque() for lane in LANES}
        self._busy: dict[Lane, int] = dict.fromkeys(LANES, 0)
        self._closed = False
        self._cond = threading.Condition()

    def offer(self, item: T, lane: Lane) -> bool:
        """Queue ``item``; False when its lane is full (the caller answers 503)."""
        with self._cond:
            q = self._queues[lane]
            if len(q) >= self._capacity:
                return False
            q.append(item)
            self._cond.notify_all()
            return True

    def take(self) -> tuple[T, Lane] | None:
        """The next item a worker may serve (blocks), or None once closed."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                lane = self._ready()
                if lane is not None:
                    self._busy[lane] += 1
                    return self._queues[lane].popleft(), lane
                self._cond.wait()

    def done(self, lane: Lane) -> None:
        with self._cond:
            self._busy[lane] -= 1
            self._cond.notify_all()

    def close(self) -> list[T]:
        """Stop every worker; returns the items still queued, never to be served."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            left = [item for q in self._queues.values() for item in q]
            for q in self._queues.values():
                q.clear()
            return left

    def qsize(self) -> int:
        with self._cond:
            return sum(len(q) for q in self._queues.values())

    def _ready(self) -> Lane | None:
        if self._queues["trusted"]:
            return "trusted"
        if self._busy["probe"] + self._busy["untrusted"] >= self._others:
            return None
        for lane in ("probe", "untrusted"):
            if self._queues[lane] and self._busy[lane] < self._caps[lane]:
                return lane
        return None


class Throttle:
    """A token bucket per client address for bcrypt checks (``rate`` a second, ``burst`` at once).

    Only credentials not yet known good or bad cost a check, so a client with
    verified credentials is never throttled; a guessing client is answered 429
    without one. The table keeps the ``size`` most recently seen clients.
    """

    def __init__(self, rate: float, burst: float, size: int = 4096) -> None:
        self._rate, self._burst, self._size = rate, burst, size
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, client: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, then = self._buckets.pop(client, (self._burst, now))
            tokens = min(self._burst, tokens + (now - then) * self._rate)
            ok = tokens >= 1
            self._buckets[client] = (tokens - 1 if ok else tokens, now)
            while len(self._buckets) > self._size:
                self._buckets.popitem(last=False)
            return ok
