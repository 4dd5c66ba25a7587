"""Log times ahead of the host clock: counted, never trusted.

A line stamped in the future (a bad RTC, an NTP step back, one corrupted
timestamp) must not become its source's newest time: the stall rule would stay
quiet until that date, and findings would be stamped with it. The live agent
asks this guard about every record and Decode batch before anything else sees
them: a time more than ``AHEAD_S`` after the host clock is replaced by the
source's last trusted time (None before the source has one), so the line's
values still count and the run goes on, but its time is never used. The
pipeline counts each such line as ``acceptmon_parse_errors_total{kind="time_ahead"}``.

Five minutes leave room for NTP-synced hosts writing a line while the agent
reads it, and for an SSH host a little ahead of this one. A host whose clock
runs ahead for good gives its source no trusted time: its values still count,
and ``log_stalled`` may fire while its lines arrive, with the ``time_ahead``
count saying why (fix that host's clock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from acceptmon.model import Record
from acceptmon.parse.prefix import epoch
from acceptmon.runs.batch import DecodeBatch, Stamp

#: Seconds a log time may be ahead of the host clock and still be trusted.
AHEAD_S = 300.0


class AheadGuard:
    """Per source, the last trusted time; ``now`` is the host clock (epoch seconds)."""

    def __init__(self, now: Callable[[], float], ahead_s: float = AHEAD_S) -> None:
        self._now, self.ahead_s = now, ahead_s
        self._trusted: dict[str, tuple[datetime, float]] = {}

    def limit(self) -> float:
        """The latest epoch trusted now."""
        return self._now() + self.ahead_s

    def record(self, record: Record) -> tuple[Record, bool]:
        """``record``, with its time replaced if it is ahead; whether it was."""
        meta = record.meta
        t = epoch(meta.ts)
        if t is None or meta.ts is None:
            return record, False
        if t <= self.limit():
            self._trust(meta.source, meta.ts, t)
            return record, False
        last = self._trusted.get(meta.source)
        return replace(record, meta=replace(meta, ts=last[0] if last else None)), True

    def batch(self, batch: DecodeBatch) -> int:
        """Replace the times of ``batch`` that are ahead (in its columns); how many were."""
        epochs = batch.epochs
        limit = self.limit()
        # At C speed: a batch is thousands of lines, and almost never has a time ahead.
        if not any(map(limit.__lt__, filter(None, epochs))):
            self._trust_last(batch, epochs)
            return 0
        stamps = batch.stamps
        new_stamps: list[Stamp] = []
        new_epochs: list[float | None] = []
        last = self._trusted.get(batch.source)
        ahead = 0
        for (ts, ranks), e in zip(stamps, epochs, strict=True):
            if e is not None and e > limit:
                ahead += 1
                new_stamps.append((last[0] if last else None, ranks))
                new_epochs.append(last[1] if last else None)
                continue
            if e is not None and ts is not None:
                last = (ts, e)
            new_stamps.append((ts, ranks))
            new_epochs.append(e)
        if last is not None:
            self._trusted[batch.source] = last
        batch.retime(new_stamps, new_epochs)
        return ahead

    def _trust_last(self, batch: DecodeBatch, epochs: list[float | None]) -> None:
        for i in range(len(epochs) - 1, -1, -1):
            e = epochs[i]
            if e is not None:
                ts = batch.stamp(i)[0]
                if ts is not None:
                    self._trust(batch.source, ts, e)
                return

    def _trust(self, source: str, ts: datetime, t: float) -> None:
        self._trusted[source] = (ts, t)
