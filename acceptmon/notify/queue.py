"""A persistent, bounded, rate-limited retry queue for one webhook.

``step()`` does at most one HTTP request and never sleeps: it returns how
long until calling it again is useful, so tests drive it with a ManualClock
and production runs it from ``worker.NotifyWorker``. Messages leave the queue
only after a 2xx (sent), a permanent error, or an overflow drop — so delivery
is exactly-once except when a 2xx is lost in transit, which HTTP cannot tell
apart from a failure (the retry then duplicates; ``Idempotency-Key`` lets a
receiver that cares drop it).

Order is strict FIFO: a resolved message never overtakes its firing one, and
a 429 ``Retry-After`` or a backoff on the head holds back the whole webhook,
which is what Slack's per-webhook rate limit wants anyway.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from acceptmon.clock import Clock
from acceptmon.notify.dedupe import Decision, Ledger, State
from acceptmon.notify.statuslog import StatusLog
from acceptmon.notify.store import Message, MessageStore
from acceptmon.notify.transport import Response, Transport, classify, parse_retry_after
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.notify")

OUTCOMES = ("sent", "retried", "failed_permanent", "dropped", "deduped")
MAX_RETRY_AFTER_S = 3600.0


@dataclass(frozen=True, slots=True)
class Policy:
    min_interval_s: float = 1.0
    renotify_s: float = 14400.0
    max_queue: int = 1000
    retry_base_s: float = 2.0
    retry_max_s: float = 300.0


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Counters since start, and the backlog now (for /metrics)."""

    notifier: str
    counts: tuple[tuple[str, int], ...]
    depth: int
    oldest_pending_s: float
    #: Changes not sent yet because the finding flaps (``dedupe.FLAP_S``): no outcome yet.
    held: int = 0

    def count(self, outcome: str) -> int:
        return dict(self.counts)[outcome]


class DeliveryQueue:
    def __init__(
        self,
        name: str,
        transport: Transport,
        state_dir: Path,
        clock: Clock,
        *,
        policy: Policy | None = None,
        rng: random.Random | None = None,
        id_field: str | None = None,
    ) -> None:
        self.name = name
        self._transport = transport
        self._clock = clock
        self._policy = policy or Policy()
        self._rng = rng or random.Random()
        self._id_field = id_field
        self._store = MessageStore(state_dir)
        self._ledger = Ledger(self._policy.renotify_s)
        self._pending: dict[int, Message] = {}
        self._counts = dict.fromkeys(OUTCOMES, 0)
        self._held = 0
        self._last_attempt: float | None = None  # monotonic
        self._in_flight: int | None = None
        self._lock = threading.Lock()
        self._status = StatusLog(log, f"notify {name}")
        self._disk = StatusLog(log, f"notify {name}")
        self._render = StatusLog(log, f"notify {name}")
        self._room = StatusLog(log, f"notify {name}")
        self._seq = 1
        self._restore()

    def offer(self, key: str, state: State, body: dict[str, Any]) -> Decision:
        """Queue a rendered message unless dedupe says the channel already knows."""
        with self._lock:
            now = self._clock.now()
            decision = self._ledger.offer(key, state, body, now)
            if decision == "send":
                self._enqueue(key, state, body, now)
            elif decision == "hold":
                self._held += 1
                log.info(
                    "notify %s: %s %s again within %.0f s of saying so: held (flapping); "
                    "sent when that window ends if it still holds",
                    self.name,
                    printable(key),
                    state,
                    self._ledger.hold_s,
                )
            else:
                self._counts["deduped"] += 1
            self._save_ledger()
            return decision

    def drop(self, reason: str) -> None:
        """Count a finding that could not even be rendered (a bug, never fatal)."""
        with self._lock:
            self._counts["dropped"] += 1
            self._render.problem(f"drop:{reason}", f"finding dropped ({reason})", logging.ERROR)

    def step(self) -> float | None:
        """Send the head message if due; seconds until the next useful step, None if empty."""
        with self._lock:
            self._release_held()
            message, wait = self._next_due()
            if message is None:
                return wait
            self._in_flight = message.seq
            self._last_attempt = self._clock.monotonic()
        body = json.dumps(message.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        response = self._transport.post(body, message.delivery_id)
        with self._lock:
            self._in_flight = None
            self._settle(message, response)
            return self._next_due()[1]

    def pending_ids(self) -> list[str]:
        """The delivery ids waiting, oldest first."""
        with self._lock:
            return [self._pending[seq].delivery_id for seq in sorted(self._pending)]

    def stats(self) -> QueueStats:
        with self._lock:
            oldest = min((m.enqueued_at for m in self._pending.values()), default=None)
            age = 0.0 if oldest is None else max(self._clock.now() - oldest, 0.0)
            return QueueStats(self.name, tuple(self._counts.items()), len(self._pending), age, self._held)

    def _restore(self) -> None:
        messages, bad = self._store.load()
        self._ledger.load_json(self._store.load_ledger())
        for message in messages:
            self._pending[message.seq] = message
            state: State = "resolved" if message.state == "resolved" else "firing"
            self._ledger.observe(message.key, state, message.enqueued_at)
        self._seq = max(self._pending, default=0) + 1
        if bad:
            log.warning("notify %s: %d unreadable queue files renamed to *.corrupt", self.name, bad)
        if messages:
            log.info("notify %s: %d pending messages restored", self.name, len(messages))
        self._save_ledger()

    def _enqueue(self, key: str, state: str, body: dict[str, Any], now: float) -> None:
        self._make_room()
        delivery_id = uuid.uuid4().hex
        if self._id_field:
            body = {**body, self._id_field: delivery_id}
        message = Message(self._seq, delivery_id, key, state, body, now, 0, now)
        self._seq += 1
        self._pending[message.seq] = message
        self._persist(self._store.put, message)

    def _make_room(self) -> None:
        """Full: drop the oldest resolved message (least harm), else the oldest of all."""
        if len(self._pending) < self._policy.max_queue:
            self._room.clear("queue has room again")
            return
        self._room.problem("full", f"queue full ({self._policy.max_queue}); dropping the oldest messages")
        while len(self._pending) >= self._policy.max_queue:
            seqs = sorted(s for s in self._pending if s != self._in_flight) or sorted(self._pending)
            victim = next((s for s in seqs if self._pending[s].state == "resolved"), seqs[0])
            del self._pending[victim]
            self._persist(self._store.remove, victim)
            self._counts["dropped"] += 1

    def _next_due(self) -> tuple[Message | None, float | None]:
        if not self._pending:
            return None, None
        head = self._pending[min(self._pending)]
        cap = max(self._policy.retry_max_s, MAX_RETRY_AFTER_S)  # a wall-clock jump cannot stall us
        wait = min(head.next_at - self._clock.now(), cap)
        if self._last_attempt is not None:
            next_slot = self._last_attempt + self._policy.min_interval_s
            wait = max(wait, next_slot - self._clock.monotonic())
        return (head, 0.0) if wait <= 0 else (None, wait)

    def _settle(self, message: Message, response: Response) -> None:
        verdict = classify(response)
        what = f"HTTP {response.status}" if response.status is not None else "no response"
        detail = f"{what}: {response.detail}" if response.detail else what
        if verdict == "retry":
            self._counts["retried"] += 1
            self._status.problem(f"retry:{response.status}", f"delivery failing ({detail}); will retry")
            self._reschedule(message, response)
            return
        if message.seq in self._pending:
            del self._pending[message.seq]
            self._persist(self._store.remove, message.seq)
        if verdict == "sent":
            self._counts["sent"] += 1
            self._status.clear("delivering again")
        else:
            self._counts["failed_permanent"] += 1
            self._status.problem(
                f"permanent:{response.status}:{response.detail}",
                f"message rejected ({detail}); not retrying — check the webhook and channel",
                logging.ERROR,
            )

    def _reschedule(self, message: Message, response: Response) -> None:
        if message.seq not in self._pending:
            return  # dropped for room while in flight
        now = self._clock.now()
        attempts = message.attempts + 1
        delay = parse_retry_after(response.retry_after, now)
        if delay is None:
            base = min(self._policy.retry_max_s, self._policy.retry_base_s * 2 ** min(attempts - 1, 30))
            delay = base / 2 + self._rng.uniform(0, base / 2)
        updated = replace(message, attempts=attempts, next_at=now + min(delay, MAX_RETRY_AFTER_S))
        self._pending[message.seq] = updated
        self._persist(self._store.put, updated)

    def _release_held(self) -> None:
        now = self._clock.now()
        for key, state, body in self._ledger.release(now):
            self._enqueue(key, state, body, now)
        self._save_ledger()

    def _save_ledger(self) -> None:
        if self._ledger.dirty:
            self._ledger.dirty = False
            self._persist(self._store.save_ledger, self._ledger.to_json())

    def _persist(self, write: Callable[..., None], *args: Any) -> None:
        """Disk trouble degrades to in-memory delivery rather than losing the alert."""
        try:
            write(*args)
            self._disk.clear("queue state writable again", kind=write.__name__)
        except OSError as exc:
            self._disk.problem(
                write.__name__, f"cannot write queue state in {self._store.dir} ({exc.strerror})"
            )
