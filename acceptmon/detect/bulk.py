"""A Decode batch through one source's rules in a few passes instead of one call chain per line.

``observe_batch`` leaves a ``SourceState`` exactly as ``SourceState.observe``
would for each of the batch's lines in turn (the parity test compares the
checkpointed state and the findings). It takes the short way only where the
outcome cannot depend on the order of the work: the windows take the batch in
one loop each; collapse and drift step line by line in tight loops, their
findings fired or resolved in line order (collapse first on a line, as in
``_accept``), each when it happens, so their texts read the state of that
moment. The floor watcher is skipped over while it is quiet and every
interval is good; otherwise (or when a stall would end after the batch's
first interval) the batch takes the line-by-line way.
"""

from __future__ import annotations

from datetime import datetime
from itertools import repeat
from operator import le
from typing import Any, Protocol

from acceptmon.detect.findings import COLLAPSED, DRIFT, STALLED, Book, source_key
from acceptmon.detect.rules import Transition
from acceptmon.detect.series import Point, rate_from_len, seconds
from acceptmon.detect.settings import DetectSettings
from acceptmon.runs.batch import DecodeBatch, strata_of


class SourceState(Protocol):
    """What of ``detect.source.SourceState`` this module touches (it imports this one)."""

    source: str
    cfg: DetectSettings
    book: Book
    current: Any  # RunData
    last: Point | None
    last_ts: datetime | None

    def apply(self, t: Transition, rule: str, point: Point) -> None: ...


def point(state: SourceState, batch: DecodeBatch, i: int) -> Point:
    """Line ``i`` of the batch as the interval ``decode_point`` makes of its record."""
    lens, r = batch.lens, batch.running[i]
    length = lens[i] if lens is not None else None
    rate = batch.rate(length)
    if rate is None:
        rate = rate_from_len(length, state.current.slots)
    return Point(batch.stamp(i)[0], length, float(r), r, batch.queue[i], rate)


def observe_batch(state: SourceState, batch: DecodeBatch) -> bool:
    """Take the whole batch the short way; False (nothing changed) when it must go line by line."""
    n = batch.n
    if n == 0:
        return True
    rd, cfg = state.current, state.cfg
    lens, running, queue = batch.lens, batch.running, batch.queue
    if lens is None:
        accepted: list[int] = []
    elif min(running) > 0:  # the usual case: every line decoded
        accepted = list(range(n))
    else:
        accepted = [i for i, r in enumerate(running) if r > 0]
    every = len(accepted) == n
    if accepted and not _quiet(state, batch, accepted):
        return False
    epochs = batch.epochs
    if state.book.active(source_key(STALLED, state.source)) and epochs[0] is None:
        return False  # the stall would end after some intervals: keep the order of events
    _times(state, batch, epochs)
    state.last = point(state, batch, n - 1)
    if not accepted or lens is None:
        return True
    first = 0 if rd.warm else _warm_at(state, accepted, queue)
    rd.seen += len(accepted)
    max_len = cfg.collapse_max_len
    # Collapse transitions in line order with drift's (each line: collapse first, as _accept).
    flags = list(map(le, lens, repeat(max_len))) if every else [lens[i] <= max_len for i in accepted]
    pending = [(accepted[k], t) for k, t in rd.collapse.steps(flags)][::-1]

    def upto(row: int) -> None:
        while pending and pending[-1][0] <= row:
            at, t = pending.pop()
            state.apply(t, COLLAPSED, point(state, batch, at))

    used = accepted[first:] if first is not None else []
    if used:
        if every and first == 0:  # every line counts: the columns as they are
            values, ats = lens, epochs
            buckets, centis = batch.strata(cfg.load_buckets)  # the run table's too
        else:
            values, ats = [lens[i] for i in used], [epochs[i] for i in used]
            buckets, centis = strata_of(cfg.load_buckets, [running[i] for i in used], values)
        rd.used += len(used)
        rd.head.extend(buckets, centis)
        rd.tail.extend(buckets, centis, ats)
        rd.recent.extend(buckets, centis)
        rd.swing.extend(buckets, centis)
        if rd.floor_cfg:
            rd.floor.skip_good(len(used))

        def moved(k: int, t: Transition) -> None:
            upto(used[k])
            state.apply(t, DRIFT, point(state, batch, used[k]))

        rd.drift.steps(buckets, values, moved)
    upto(n)
    return True


def _quiet(state: SourceState, batch: DecodeBatch, accepted: list[int]) -> bool:
    """Whether no floor transition can come of this batch (the floor watcher is skipped over)."""
    rd = state.current
    lens = batch.lens
    assert lens is not None
    floor = rd.floor_cfg
    if floor:
        if not rd.floor.quiet:
            return False
        if floor.accept_len is not None and any(lens[i] < floor.accept_len for i in accepted):
            return False
        if floor.accept_rate is not None and any(
            (rate := point(state, batch, i).accept_rate) is not None and rate < floor.accept_rate
            for i in accepted
        ):
            return False
    return True


def _times(state: SourceState, batch: DecodeBatch, epochs: list[float | None]) -> None:
    """The newest time seen, and a stall the batch's first timed line ends."""
    timed = [e for e in epochs if e is not None]
    if not timed:
        return
    key = source_key(STALLED, state.source)
    if state.book.active(key):
        first = next(i for i, e in enumerate(epochs) if e is not None)
        p = point(state, batch, first)
        state.book.resolve(key, p.ts, (p.accept_len, p.accept_rate))
    newest = max(timed)
    if state.last_ts is None or newest > (seconds(state.last_ts) or 0.0):
        state.last_ts = batch.stamp(epochs.index(newest))[0]


def _warm_at(state: SourceState, accepted: list[int], queue: list[int]) -> int | None:
    """Index (into ``accepted``) of the interval that ends the warm-up, or None if none does."""
    rd, cfg = state.current, state.cfg
    for k, i in enumerate(accepted):
        seen = rd.seen + k + 1
        if seen > cfg.warmup_intervals and (not queue[i] or seen > cfg.warmup_max_intervals):
            rd.warm = True
            return k
    return None
