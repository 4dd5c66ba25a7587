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
first interval) the batch takes the line-by-line way. One-shot's evaluation
after every interval comes as a stretch of a batch (``lo``..``hi``) and the
recovery checks due inside it (``recovery.Stretch``), run in the same line order
after each line's collapse and drift events.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from datetime import datetime
from itertools import repeat
from operator import le
from typing import Any, Protocol, TypeVar, cast

from acceptmon.detect.findings import COLLAPSED, DRIFT, STALLED, Book, source_key
from acceptmon.detect.rules import Transition
from acceptmon.detect.series import Point, rate_from_len, seconds
from acceptmon.detect.settings import DetectSettings
from acceptmon.runs.batch import DecodeBatch, strata_of

T = TypeVar("T")


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
    return Point(batch.stamp(i)[0], length, float(r), r, batch.queued(i), rate)


def observe_batch(
    state: SourceState, batch: DecodeBatch, lo: int, hi: int, checks: CheckFactory | None = None
) -> bool:
    """Take lines ``lo``..``hi`` - 1 of the batch the short way; False (nothing changed) when they
    must go line by line. ``checks`` (one-shot's evaluation after every interval) gives the
    recovery checks due among them, run in line order after that line's other events."""
    n = hi - lo
    if n <= 0:
        return True
    rd, cfg = state.current, state.cfg
    if rd.steps is not None:  # an adaptive run's windows hold α, converted line by line
        return False
    whole = lo == 0 and hi == batch.n
    running, lens = _part(batch.running, lo, hi, whole), batch.lens
    lens = lens if lens is None else _part(lens, lo, hi, whole)
    if lens is None:
        accepted: list[int] = []
    elif min(running) > 0:  # the usual case: every line decoded
        accepted = list(range(n))
    else:
        accepted = [i for i, r in enumerate(running) if r > 0]
    if accepted and not _quiet(state, batch, lo, accepted):
        return False
    epochs = _part(batch.epochs, lo, hi, whole)
    if state.book.active(source_key(STALLED, state.source)) and epochs[0] is None:
        return False  # the stall would end after some intervals: keep the order of events
    before = state.last_ts
    _times(state, batch, lo, epochs)
    state.last = point(state, batch, hi - 1)
    if not accepted or lens is None:
        return True
    first = 0 if rd.warm else _warm_at(state, accepted, _part(batch.queue, lo, hi, whole))
    rd.seen += len(accepted)
    max_len = cfg.collapse_max_len
    # Collapse transitions, recovery checks and drift's, in line order (each line: collapse,
    # drift, then the checks after it, as ``_accept`` and an evaluation after each line).
    every = len(accepted) == n
    flags = list(map(le, lens, repeat(max_len))) if every else [lens[i] <= max_len for i in accepted]
    pending: list[tuple[int, int, Callable[[], None]]] = [
        (accepted[k], 0, _applied(state, COLLAPSED, t, batch, lo + accepted[k]))
        for k, t in rd.collapse.steps(flags)
    ]
    used = accepted[first:] if first is not None else []
    due: Checks | None = None
    if used:
        if every and first == 0:  # every line counts: the columns as they are
            values, ats = lens, epochs
            buckets, centis = (_part(c, lo, hi, whole) for c in batch.strata(cfg.load_buckets))
        else:
            values, ats = [lens[i] for i in used], [epochs[i] for i in used]
            buckets, centis = strata_of(cfg.load_buckets, [running[i] for i in used], values)
        due = checks(buckets, centis, used, n - 1, _clock(before, batch, lo)) if checks else None
        _windows(state, buckets, centis, ats, batch.times_in_order(), recent=due is None)
    upto = _in_order(pending, due)

    if used:

        def moved(k: int, t: Transition) -> None:
            upto(used[k], 1)
            state.apply(t, DRIFT, point(state, batch, lo + used[k]))

        rd.drift.steps(buckets, values, moved)
    upto(n, 0)
    if due is not None:
        due.finish()
    return True


def _in_order(
    pending: list[tuple[int, int, Callable[[], None]]], due: Checks | None
) -> Callable[[int, int], None]:
    """``upto(row, kind)``: every collapse event (``pending``, in line order) before (``row``,
    ``kind``), and every check after a line before ``row``; a line's collapse event first."""
    pending.reverse()

    def upto(row: int, kind: int) -> None:
        while pending and pending[-1][:2] < (row, kind):
            if due is not None:
                due.until(pending[-1][0])
            pending.pop()[2]()
        if due is not None:
            due.until(row)

    return upto


def _part(col: list[T], lo: int, hi: int, whole: bool) -> list[T]:
    """A column's lines ``lo``..``hi`` - 1 (itself when that is all of it)."""
    return col if whole else col[lo:hi]


def _windows(
    state: SourceState,
    buckets: list[int],
    centis: list[int],
    ats: list[float | None],
    in_order: bool,
    recent: bool,
) -> None:
    """The used intervals into the run's windows (the recent one too unless recovery checks
    extend it, each to its line); ``in_order``: ``ats`` are known all there and in order."""
    rd = state.current
    rd.used += len(buckets)
    rd.head.extend(buckets, centis)
    rd.tail.extend(buckets, centis, ats, in_order)
    rd.swing.extend(buckets, centis)
    if recent:
        rd.recent.extend(buckets, centis)
    if rd.floor_cfg:
        rd.floor.skip_good(len(buckets))


class Checks(Protocol):
    """Recovery checks inside a stretch (``recovery.Stretch``), run in line order."""

    def until(self, row: int) -> None: ...

    def finish(self) -> None: ...


#: What makes a stretch's ``Checks`` (None: none), given its used intervals' buckets and
#: hundredths (not yet counted in ``used``), their rows (relative to ``lo``), the last row, and
#: the source's newest time as of a row; the checks then extend the recent window themselves.
CheckFactory = Callable[
    [list[int], list[int], list[int], int, Callable[[int], datetime | None]], Checks | None
]


def _applied(state: SourceState, rule: str, t: Transition, batch: DecodeBatch, i: int) -> Callable[[], None]:
    return lambda: state.apply(t, rule, point(state, batch, i))


def _clock(before: datetime | None, batch: DecodeBatch, lo: int) -> Callable[[int], datetime | None]:
    """The source's newest time as it stood after row ``row`` (asked in increasing order)."""
    epochs, newest, seen = batch.epochs, seconds(before), lo
    ts = before

    def at(row: int) -> datetime | None:
        nonlocal newest, seen, ts
        for i in range(seen, lo + row + 1):
            e = epochs[i]
            if e is not None and (newest is None or e > newest):
                newest, ts = e, batch.stamp(i)[0]
        seen = max(seen, lo + row + 1)
        return ts

    return at


def _quiet(state: SourceState, batch: DecodeBatch, lo: int, accepted: list[int]) -> bool:
    """Whether no floor transition can come of these lines (the floor watcher is skipped over)."""
    rd = state.current
    lens = batch.lens
    assert lens is not None
    floor = rd.floor_cfg
    if floor:
        if not rd.floor.quiet:
            return False
        if floor.accept_len is not None and any(lens[lo + i] < floor.accept_len for i in accepted):
            return False
        if floor.accept_rate is not None and any(
            (rate := point(state, batch, lo + i).accept_rate) is not None and rate < floor.accept_rate
            for i in accepted
        ):
            return False
    return True


def _times(state: SourceState, batch: DecodeBatch, lo: int, epochs: list[float | None]) -> None:
    """The newest time seen, and a stall the first timed line ends (``epochs`` from row ``lo``)."""
    in_order = batch.times_in_order()
    timed = cast(
        list[float], epochs if in_order or None not in epochs else [e for e in epochs if e is not None]
    )
    if not timed:
        return
    key = source_key(STALLED, state.source)
    if state.book.active(key):
        first = next(i for i, e in enumerate(epochs) if e is not None)
        p = point(state, batch, lo + first)
        state.book.resolve(key, p.ts, (p.accept_len, p.accept_rate))
    newest = timed[-1] if in_order else max(timed)
    if state.last_ts is None or newest > (seconds(state.last_ts) or 0.0):
        # In order, the first line with the newest time is found by bisection.
        at = bisect_left(timed, newest) if in_order else epochs.index(newest)
        state.last_ts = batch.stamp(lo + at)[0]


def _warm_at(state: SourceState, accepted: list[int], queue: list[int]) -> int | None:
    """Index (into ``accepted``) of the interval that ends the warm-up, or None if none does."""
    rd, cfg = state.current, state.cfg
    for k, i in enumerate(accepted):
        seen = rd.seen + k + 1
        if seen > cfg.warmup_intervals and (not queue[i] or seen > cfg.warmup_max_intervals):
            rd.warm = True
            return k
    return None
