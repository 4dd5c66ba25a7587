"""Decode and vLLM spec samples → one series of points, and bounded windows of them.

Both servers end up as ``Point(ts, accept_len, weight, …)``. The windows keep
per-load-bucket histograms of accept len in hundredths (SGLang's printed
precision), so their memory is bounded by the window length and their
statistics by the number of distinct values.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice, repeat, starmap
from operator import itemgetter, le
from typing import cast

from acceptmon.model import DecodeSample, SpecSample
from acceptmon.runs.rate import accept_rate

#: load bucket → {accept len in hundredths: count}
Strata = dict[int, dict[int, int]]

#: Batches at least this long take ``Sliding``'s bulk way (shorter ones the plain loop).
_BULK = 64

#: The bucket of intervals whose load is unknown (vLLM spec lines).
UNKNOWN_LOAD = -1

#: The (bucket, value) and the time of a window entry (time, bucket, value), taken at C speed.
_PAIR = itemgetter(1, 2)
_TIME, _BUCKET, _VALUE = itemgetter(0), itemgetter(1), itemgetter(2)


def _held_time(item: tuple[float | None, int, int]) -> float:
    """A held interval's time where all are known to be there."""
    return item[0] or 0.0


@dataclass(frozen=True, slots=True)
class Point:
    """One logging interval. ``weight`` is the number of request-rounds it averages
    (SGLang: running requests; vLLM: drafts), ``running`` is None when unknown."""

    ts: datetime | None
    accept_len: float | None
    weight: float
    running: int | None
    queued: int | None
    accept_rate: float | None = None

    @property
    def busy(self) -> bool:
        """Whether requests were decoding: only then does accept len mean anything."""
        return self.running > 0 if self.running is not None else self.weight > 0


def rate_from_len(accept_len: float | None, slots: int | None) -> float | None:
    """``runs.rate.accept_rate`` where the length may be unknown."""
    return None if accept_len is None else accept_rate(accept_len, slots)


def decode_point(s: DecodeSample, slots: int | None) -> Point:
    rate = s.accept_rate if s.accept_rate is not None else rate_from_len(s.accept_len, slots)
    return Point(s.meta.ts, s.accept_len, float(s.running_req), s.running_req, s.queue_req, rate)


def spec_counts(s: SpecSample, prev: SpecSample | None) -> tuple[int, int] | None:
    """(accepted, drafted) tokens of this interval; v0 lines are cumulative since start."""
    if s.accepted_tokens is None or s.drafted_tokens is None:
        return None
    if not s.cumulative:
        return s.accepted_tokens, s.drafted_tokens
    if prev is None or prev.accepted_tokens is None or prev.drafted_tokens is None:
        return None
    acc, dra = s.accepted_tokens - prev.accepted_tokens, s.drafted_tokens - prev.drafted_tokens
    return (acc, dra) if acc >= 0 and dra >= 0 else None


def spec_point(s: SpecSample, prev: SpecSample | None, slots: int | None) -> Point | None:
    """accept len = 1 + k·accepted/drafted: each draft proposes k tokens (vLLM's definition)."""
    k = s.num_spec_tokens or slots
    counts = spec_counts(s, prev)
    if counts is None:
        if s.cumulative or s.accept_len is None:
            return None
        rate = s.accept_rate if s.accept_rate is not None else rate_from_len(s.accept_len, k)
        return Point(s.meta.ts, s.accept_len, 1.0, None, None, rate)
    acc, drafted = counts
    if drafted == 0:
        return Point(s.meta.ts, None, 0.0, None, None)
    rate = acc / drafted
    if s.accept_len is not None and not s.cumulative:
        length: float | None = s.accept_len
    else:
        length = 1.0 + k * rate if k else None
    return Point(s.meta.ts, length, drafted / k if k else float(drafted), None, None, rate)


def load_bucket(running: int | None, edges: Sequence[int]) -> int:
    """Index of the load stratum: buckets split at ``edges`` (e.g. 1–3, 4–15, 16–63, 64+)."""
    return UNKNOWN_LOAD if running is None else bisect_right(edges, running)


def centi(accept_len: float) -> int:
    return round(accept_len * 100)


def seconds(ts: datetime | None) -> float | None:
    """Epoch seconds of a record time: aware from the parser; a naive one (hand-built
    records, old state) is read as UTC, the same rule as ``parse.prefix.epoch``."""
    if ts is None:
        return None
    return ts.timestamp() if ts.tzinfo is not None else ts.replace(tzinfo=UTC).timestamp()


def _counted(pairs: Iterable[tuple[int, int]]) -> Strata:
    """(bucket, value) pairs as per-bucket histograms, counted at C speed."""
    out: Strata = {}
    for (bucket, value), count in Counter(pairs).items():
        into = out.get(bucket)
        if into is None:
            into = out[bucket] = {}
        into[value] = count
    return out


class Hists:
    """Per-bucket histograms of accept len (hundredths) with a running count."""

    __slots__ = ("n", "strata")

    def __init__(self) -> None:
        self.strata: Strata = {}
        self.n = 0

    def add(self, bucket: int, value: int) -> None:
        h = self.strata.setdefault(bucket, {})
        h[value] = h.get(value, 0) + 1
        self.n += 1

    def remove(self, bucket: int, value: int) -> None:
        h = self.strata[bucket]
        if h[value] == 1:
            del h[value]
            if not h:
                del self.strata[bucket]
        else:
            h[value] -= 1
        self.n -= 1

    def copy(self) -> Strata:
        return {b: dict(h) for b, h in self.strata.items()}


class Sliding(Hists):
    """The last ``size`` intervals, preferably none older than ``max_age`` seconds before the
    newest: the baseline a run leaves behind, or its recent state.

    Age is a preference only: the window never drops below ``keep`` intervals for age, so a
    quiet server (a Decode line every few minutes) still leaves a baseline that can be tested.
    """

    __slots__ = (
        "_chunks",
        "_floor",
        "_hists",
        "_items",
        "_max_age",
        "_ordered",
        "_size",
        "_stale",
        "added",
    )

    def __init__(self, size: int, max_age: float | None = None, keep: int = 0) -> None:
        self._stale = False
        super().__init__()
        self._items: deque[tuple[float | None, int, int]] = deque()
        self._size, self._max_age = size, max_age
        self._floor = max(1, keep)  # evict for age only while at least this many are held
        #: The held times are known to be in order, none missing: a long batch then need not
        #: read them all again (backfill extends the tail window in thousands of parts).
        self._ordered = True
        #: Held intervals after ``_items``: parts' columns as handed in, not yet made entries of
        #: it (``_defer``); only while the histograms are stale, moved in when the window is read.
        self._chunks: deque[_Chunk] = deque()
        self.added = 0  # intervals ever added: a copy kept in step knows it still is

    @property
    def strata(self) -> Strata:
        """The held intervals' histograms, counted again from them if a long batch left them
        behind (``extend``): the baseline a run leaves is read once, at its end, and the recent
        window only while a drop is open, so backfill's thousands of parts a run need not count
        what leaves the window again."""
        self._settle()
        return self._hists

    @strata.setter
    def strata(self, strata: Strata) -> None:
        self._stale, self._hists = False, strata

    @property
    def size(self) -> int:
        return self._size

    @property
    def aged(self) -> bool:
        """Whether intervals also leave for age (then ``columns`` is None)."""
        return self._max_age is not None

    def columns(self) -> tuple[list[int], list[int]] | None:
        """(buckets, values) of the held intervals, oldest first; None for a window with ages
        (where what a new interval evicts depends on the times, not only on the count)."""
        if self._max_age is not None:
            return None
        items = self._items
        buckets, values = list(map(_BUCKET, items)), list(map(_VALUE, items))
        for c in self._chunks:  # the parts kept aside, as the columns they are
            buckets += islice(c.buckets, c.first, None)
            values += islice(c.values, c.first, None)
        return buckets, values

    def _settle(self) -> None:
        """Count the histograms again if they were left behind (before any interval leaves)."""
        if self._stale:
            self._flush()
            self._stale, self._hists = False, _counted(map(_PAIR, self._items))

    def _flush(self) -> None:
        """Make the held intervals of the parts kept aside (``_defer``) entries of ``_items``."""
        chunks, items = self._chunks, self._items
        while chunks:
            c = chunks.popleft()
            first = c.first
            ats = repeat(None) if c.ats is None else islice(c.ats, first, None)
            items.extend(
                zip(ats, islice(c.buckets, first, None), islice(c.values, first, None), strict=False)
            )

    def _evict(self) -> None:
        _, bucket, value = self._items.popleft()
        self.remove(bucket, value)

    def add(self, bucket: int, value: int, at: float | None = None) -> None:
        self._settle()
        self.added += 1
        items = self._items
        self._ordered = self._ordered and at is not None and (not items or (items[-1][0] or 0.0) <= at)
        if len(items) == self._size:
            self._evict()
        if at is not None and self._max_age is not None:
            while len(items) >= self._floor and (t := items[0][0]) is not None and t < at - self._max_age:
                self._evict()
        items.append((at, bucket, value))
        super().add(bucket, value)

    def extend(
        self,
        buckets: Sequence[int],
        values: Sequence[int],
        ats: Sequence[float | None] = (),
        in_order: bool = False,
    ) -> None:
        """``add`` for each (bucket, value[, at]) in turn, with the same evictions, in one loop;
        ``in_order``: the caller knows ``ats`` all there and in order (not read again). A window
        whose histograms wait (``strata``) takes even a short part without them; an aged one
        keeps a part in time order aside, as its columns (``_defer``): the columns are not
        copied, so the caller must not change them afterwards."""
        items, size, max_age = self._items, self._size, self._max_age
        self.added += len(buckets)
        aged = max_age is not None and bool(ats)
        if aged and (len(buckets) >= _BULK or self._stale):
            self._ordered = self._in_order_after(ats, in_order)
            if self._ordered and self.n <= size:
                self._defer(buckets, values, cast(Sequence[float], ats))
            else:
                self._flush()
                self._extend_aged(buckets, values, ats)
            return
        if max_age is None and buckets and size > 0 and (self._stale or len(buckets) >= size):
            self._ordered = self._in_order_after(ats, in_order)
            self._defer(buckets, values, ats)  # no histogram to keep up: counted when read
            return
        strata, n, floor = self.strata, self.n, self._floor
        if buckets:
            self._ordered = self._in_order_after(ats, in_order)
        span = 0.0 if max_age is None else max_age  # read only when aged
        popleft, append, known = items.popleft, items.append, strata.get
        for k, bucket in enumerate(buckets):
            value = values[k]
            at = ats[k] if ats else None
            full = len(items) == size
            while full or (
                aged
                and at is not None
                and len(items) >= floor
                and (t := items[0][0]) is not None
                and t < at - span
            ):
                full = False
                _, b, v = popleft()
                h = strata[b]
                c = h[v]
                if c == 1:
                    del h[v]
                    if not h:
                        del strata[b]
                else:
                    h[v] = c - 1
                n -= 1
            append((at, bucket, value))
            into = known(bucket)
            if into is None:
                into = strata[bucket] = {}
            into[value] = into.get(value, 0) + 1
            n += 1
        self.n = n

    def _defer(self, buckets: Sequence[int], values: Sequence[int], ats: Sequence[float | None]) -> None:
        """``extend`` keeping the part aside, as its columns (no entry made per interval:
        backfill hands a run's windows thousands of parts, and most of their intervals leave
        again before the window is read). Where the window then starts is found as
        ``_kept_from`` finds it for an aged window (times in order: from the newest alone),
        across the held entries, the parts kept aside and this one; else by the count alone."""
        old, n, max_age = self.n, len(buckets), self._max_age
        drop = old + n - self._size
        if max_age is not None:
            timed = cast(Sequence[float], ats)
            oldest = timed[-1] - max_age
            if old and self._newest() >= oldest:
                by_age = self._older(oldest)
            else:
                by_age = old + bisect_left(timed, oldest)
            drop = max(drop, min(by_age, old + n - self._floor))
        self._chunks.append(_Chunk(ats or None, buckets, values))
        drop = max(0, drop)
        self._drop(drop)
        self.n, self._stale = old + n - drop, True

    def _newest(self) -> float:
        """The newest held time (held times known there and in order, at least one held)."""
        chunks = self._chunks
        return cast(Sequence[float], chunks[-1].ats)[-1] if chunks else self._items[-1][0] or 0.0

    def _older(self, oldest: float) -> int:
        """How many held intervals are older than ``oldest`` (held times known in order)."""
        items, count = self._items, 0
        if items:
            if (items[-1][0] or 0.0) >= oldest:
                return bisect_left(items, oldest, key=_held_time)
            count = len(items)
        for c in self._chunks:
            ats = cast(Sequence[float], c.ats)
            if ats[-1] >= oldest:
                return count + bisect_left(ats, oldest, c.first) - c.first
            count += len(ats) - c.first
        return count

    def _drop(self, count: int) -> None:
        """The ``count`` oldest held intervals leave (entries at C speed, then parts kept aside)."""
        items = self._items
        gone = min(count, len(items))
        if gone == len(items):
            items.clear()
        elif gone:
            deque(starmap(items.popleft, repeat((), gone)), maxlen=0)
        count -= gone
        chunks = self._chunks
        while count:
            c = chunks[0]
            left = len(c.buckets) - c.first
            if count < left:
                c.first += count
                break
            chunks.popleft()
            count -= left

    def _extend_aged(
        self, buckets: Sequence[int], values: Sequence[int], ats: Sequence[float | None]
    ) -> None:
        """``extend`` with ages for a long batch: the evictions are found on the times alone
        (``add``'s rule, step by step) and the intervals move at C speed; the histograms are
        counted again only when next read (``strata``)."""
        items, old = self._items, len(self._items)
        lo = self._kept_from(ats)
        gone = min(lo, old)
        first = lo - gone  # new intervals evicted within the batch never reach the window
        if gone == old:  # nothing held before stays (a batch longer than the window)
            items.clear()
        else:  # popped from the left only (the window is not copied per part), at C speed
            deque(starmap(items.popleft, repeat((), gone)), maxlen=0)
        items.extend(zip(ats[first:], buckets[first:], values[first:], strict=True))
        self.n, self._stale = len(items), True

    def _kept_from(self, ats: Sequence[float | None]) -> int:
        """Where the window starts (an index into the held intervals then ``ats``) once a long
        batch with times ``ats`` is in."""
        items, size, floor = self._items, self._size, self._floor
        max_age = self._max_age
        assert max_age is not None
        old = len(items)
        in_order = self._ordered  # ``extend`` has just found the held times and ``ats`` in order
        if not in_order:  # not known: read them
            times = list(map(_TIME, items))
            self._ordered = None not in times and all(map(le, times, islice(times, 1, None)))
            in_order = self._in_order_after(ats)
        n = len(ats)
        if old <= size and in_order and (last := ats[-1]) is not None:
            # Times in order (the usual case): both of ``add``'s bounds on the window's start
            # only grow from line to line, so where the last line leaves it is all that counts:
            # past the ``size`` newest, and past the too old ones while ``floor`` stay.
            oldest = last - max_age
            if old and (items[-1][0] or 0.0) >= oldest:
                by_age = bisect_left(items, oldest, key=_held_time)
            else:
                by_age = old + bisect_left(cast(Sequence[float], ats), oldest)
            return max(0, old + n - size, min(by_age, old + n - floor))
        self._ordered = False
        times = list(map(_TIME, items))
        times += ats
        lo = 0  # the window is times[lo : old + k] before the k-th new interval is added
        for k, at in enumerate(ats):
            if old + k - lo == size:
                lo += 1
            if at is not None:
                limit = at - max_age
                while old + k - lo >= floor and (t := times[lo]) is not None and t < limit:
                    lo += 1
        return lo

    def _in_order_after(self, ats: Sequence[float | None], known: bool = False) -> bool:
        """Whether the held times stay in order, none missing, with ``ats`` after them
        (``known``: ``ats`` are all there and in order)."""
        if not self._ordered or not ats or (not known and None in ats):
            return False
        timed = cast(Sequence[float], ats)
        return (not self.n or self._newest() <= timed[0]) and (
            known or all(map(le, timed, islice(timed, 1, None)))
        )

    def entries(self) -> list[tuple[float | None, int, int]]:
        """(time, bucket, value) oldest first: the order decides what is evicted next."""
        self._flush()
        return list(self._items)

    @classmethod
    def restored(
        cls,
        size: int,
        max_age: float | None,
        entries: Sequence[tuple[float | None, int, int]],
        keep: int = 0,
    ) -> Sliding:
        """A window refilled from a checkpoint as it was (not replayed: replaying could evict by age
        what an out-of-order time once shielded); only a smaller ``size`` drops the oldest."""
        window = cls(size, max_age, keep)
        for at, bucket, value in entries[max(0, len(entries) - size) :]:
            window._items.append((at, bucket, value))
            Hists.add(window, bucket, value)
        window._ordered = False  # not known until a long batch reads them
        return window


class _Chunk:
    """A part's columns kept aside by ``Sliding._defer``, held from index ``first`` on
    (``ats`` None: no times)."""

    __slots__ = ("ats", "buckets", "first", "values")

    def __init__(
        self, ats: Sequence[float | None] | None, buckets: Sequence[int], values: Sequence[int]
    ) -> None:
        self.ats, self.buckets, self.values, self.first = ats, buckets, values, 0


class Head(Hists):
    """The first ``size`` intervals of a run: what a config change is judged on."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    @property
    def full(self) -> bool:
        return self.n >= self.size

    def add(self, bucket: int, value: int) -> None:
        if not self.full:
            super().add(bucket, value)

    def extend(self, buckets: Sequence[int], values: Sequence[int]) -> None:
        for k in range(min(len(buckets), max(0, self.size - self.n))):
            Hists.add(self, buckets[k], values[k])
