"""Which findings become messages: a repeat of what the channel shows once per re-notify window.

A finding that fires again after the channel was told it resolved is news and
is sent at once. Only a flapping source (firing/resolved every few seconds)
is held: a state announced less than the flap window (``FLAP_S``, at most the
re-notify window) ago is not announced again yet, which bounds a flap to two
messages per flap window. A held change is not lost: if it still holds when
the window ends it is announced then, so the channel always ends up showing
the truth. A resolved finding nobody was told about stays silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

State = Literal["firing", "resolved"]
#: ``hold``: a change the channel is not told yet (a flap), sent when the flap window ends.
Decision = Literal["send", "dedupe", "hold"]

#: A state announced this recently is a flap when it comes back: held, not sent.
FLAP_S = 300.0


@dataclass(slots=True)
class Entry:
    """What the channel was last told about one finding key."""

    shown: State
    sent_at: dict[str, float] = field(default_factory=dict)
    held: dict[str, Any] | None = None  # {"state": State, "body": payload}
    seen_at: float = 0.0


class Ledger:
    """Pure dedupe bookkeeping; the queue persists ``to_json()`` after changes."""

    def __init__(self, renotify_s: float, max_entries: int = 10000, flap_s: float = FLAP_S) -> None:
        self.renotify_s = renotify_s
        self.hold_s = min(renotify_s, flap_s)
        self.max_entries = max_entries
        self.entries: dict[str, Entry] = {}
        self.dirty = False  # set when something worth persisting changed

    def offer(self, key: str, state: State, body: dict[str, Any], now: float) -> Decision:
        """Record a finding; "send" means it should be queued now."""
        entry = self.entries.get(key)
        if entry is None:
            if state == "resolved":
                return "dedupe"
            self.entries[key] = Entry("firing", {"firing": now}, None, now)
            self._prune(now)
            self.dirty = True
            return "send"
        entry.seen_at = now
        if state == entry.shown:
            if entry.held is not None:
                entry.held = None  # back to what the channel shows: nothing to correct
                self.dirty = True
            if state == "resolved" or now - entry.sent_at.get(state, -1e18) < self.renotify_s:
                return "dedupe"
        elif now - entry.sent_at.get(state, -1e18) < self.hold_s:
            entry.held = {"state": state, "body": body}
            self.dirty = True
            return "hold"
        entry.shown = state
        entry.sent_at[state] = now
        entry.held = None
        self.dirty = True
        return "send"

    def release(self, now: float) -> list[tuple[str, State, dict[str, Any]]]:
        """Held state changes whose window has ended: they are to be sent now."""
        due = []
        for key, entry in self.entries.items():
            held = entry.held
            if held is not None and now - entry.sent_at.get(held["state"], -1e18) >= self.hold_s:
                entry.shown = held["state"]
                entry.sent_at[held["state"]] = now
                entry.held = None
                self.dirty = True
                due.append((key, entry.shown, held["body"]))
        return due

    def observe(self, key: str, state: State, at: float) -> None:
        """A message found queued on disk counts as announced (crash after enqueue)."""
        entry = self.entries.setdefault(key, Entry(state, {}, None, at))
        if at >= max(entry.sent_at.values(), default=-1e18):
            entry.shown = state
        entry.sent_at[state] = max(entry.sent_at.get(state, -1e18), at)
        self.dirty = True

    def to_json(self) -> dict[str, Any]:
        return {
            key: {"shown": e.shown, "sent_at": e.sent_at, "held": e.held, "seen_at": e.seen_at}
            for key, e in self.entries.items()
        }

    def load_json(self, data: dict[str, Any]) -> None:
        """Restore; malformed entries are skipped (a repeat alert beats a crash)."""
        for key, raw in data.items():
            try:
                shown = raw["shown"]
                if shown not in ("firing", "resolved"):
                    continue
                sent = {str(s): float(t) for s, t in raw["sent_at"].items()}
                self.entries[str(key)] = Entry(shown, sent, raw.get("held"), float(raw.get("seen_at", 0)))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue

    def _prune(self, now: float) -> None:
        """Forget settled keys first; only then the least recently seen."""
        if len(self.entries) <= self.max_entries:
            return
        for key, entry in list(self.entries.items()):
            settled = entry.shown == "resolved" and entry.held is None
            if settled and now - max(entry.sent_at.values(), default=0.0) >= self.renotify_s:
                del self.entries[key]
        excess = len(self.entries) - self.max_entries
        for key in sorted(self.entries, key=lambda k: self.entries[k].seen_at)[: max(excess, 0)]:
            del self.entries[key]
