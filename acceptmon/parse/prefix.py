"""Timestamp and rank prefixes shared by every log shape.

A prefix is everything in front of the message. Real deployments wrap
SGLang's own ``[ts ranks] `` in container, Ray and journald prefixes, colour
codes and indentation, so the parser strips what it knows and then looks for
the last SGLang bracket; anything else it does not understand is ignored
rather than fatal (the message itself is validated separately).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from itertools import compress, repeat
from operator import add, is_, itemgetter, mul, truediv

from acceptmon.log_time import LocalTime
from acceptmon.model import Ranks

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Linear on adversarial text: every run of blanks or digits is matched possessively
# (``*+``, ``++``), so a failed try never re-splits a long run between two parts.
_RANK = r"(?:DP|PP|TP|EP|ATTN_CP|MOE_DP)-?\d{1,6}+"
_TS = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,6})?|\d\d:\d\d:\d\d(?:[.,]\d{1,6})?"

#: SGLang's ``[%(asctime)s{ranks}]`` (ranks may also stand alone when redacted).
_BRACKET = re.compile(
    rf"\[\s*+(?P<ts>{_TS})?(?P<ranks>(?:\s*+{_RANK})*+)\s*+"
    rf"(?P<enc>(?<=\s)(?:encode_server|encode_dp_worker\[\d++\]))?\]"
)
#: ``[gpu_id=0]`` / ``[gpu=0]`` inside the message of releases up to 0.2.13.
_GPU = re.compile(r"\[gpu(?:_id)?=(?P<gpu>\d{1,6}+)\]\s*+$")
#: Python-logging style: ``2025-12-01 12:00:01.123 INFO 4242 [ TP0 scheduler.py:1234] ``.
_PYLOG = re.compile(
    rf"^\s*+(?P<ts>\d{{4}}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{{1,6}})?)\s++[A-Z]++\s++(?:\d++\s++)?+"
    rf"\[\s*+(?P<ranks>(?:{_RANK}\s*+)*+)(?:[\w.-]++:\d++)?+\s*+\]"
)
_RANK_SPLIT = re.compile(r"([A-Z_]+?)(-?\d+)")

#: A prefix is ``None`` only when what precedes the message is clearly not a
#: prefix (e.g. the tail of another line glued to this one).
Prefix = tuple[datetime | None, Ranks]


def parse_ts(text: str) -> datetime | None:
    """Parse a full ``YYYY-MM-DD HH:MM:SS[.ffffff]`` timestamp; time-only gives None."""
    if len(text) < 19 or text[4] != "-":
        return None
    try:
        return datetime.fromisoformat(text.replace(",", ".").replace(" ", "T", 1))
    except ValueError:
        return None


@lru_cache(maxsize=256)
def parse_ranks(text: str) -> Ranks:
    """Rank labels of a prefix (memoised: a source prints the same few rank sets)."""
    return tuple((name.lower(), int(num)) for name, num in _RANK_SPLIT.findall(text))


#: SGLang's own prefix and nothing else: by far the most common, so tried first.
_PLAIN = re.compile(rf"\[(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{{3}})?)((?: {_RANK})*)\] ")


def _plain(prefix: str) -> Prefix | None:
    plain = _PLAIN.fullmatch(prefix)
    if plain is None:
        return None
    return parse_ts(plain.group(1)), parse_ranks(plain.group(2)) if plain.group(2) else ()


def parse_prefix(prefix: str) -> Prefix:
    """Read timestamp and ranks from the text in front of a message."""
    plain = _plain(prefix)
    return plain if plain is not None else _general(prefix)


def _general(prefix: str) -> Prefix:
    """``parse_prefix`` for all but SGLang's plain prefix."""
    if "\x1b" in prefix:
        prefix = ANSI.sub("", prefix)
    m = _PYLOG.match(prefix)
    if m:
        return parse_ts(m["ts"]), parse_ranks(m["ranks"])
    gpu = _GPU.search(prefix)
    if gpu:
        prefix = prefix[: gpu.start()]
    last = None
    for last in _BRACKET.finditer(prefix):  # noqa: B007 - we want the last bracket
        pass
    ts: datetime | None = None
    ranks: Ranks = ()
    if last is not None:
        ts = parse_ts(last["ts"]) if last["ts"] else None
        ranks = parse_ranks(last["ranks"])
    if gpu:
        ranks = (*ranks, ("gpu", int(gpu["gpu"])))
    return ts, ranks


def epoch(ts: datetime | None) -> float | None:
    """Epoch seconds of a record time (aware since the parser applies the source's zone;
    a naive one, which only hand-built records carry, is read as UTC)."""
    if ts is None:
        return None
    return ts.timestamp() if ts.tzinfo is not None else ts.replace(tzinfo=UTC).timestamp()


#: Zone names without offset changes, ever: their aware time is one ``replace`` away.
_FIXED = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "UCT", "Universal", "Zulu"})


def fixed_offset(zone: tzinfo) -> timezone | None:
    """The one offset of a zone that never changes it (``timezone``, UTC), else None."""
    if isinstance(zone, timezone):
        return timezone(zone.utcoffset(None))
    if getattr(zone, "key", None) in _FIXED:
        return timezone(zone.utcoffset(datetime(2000, 1, 1)) or timedelta(0))
    return None


#: Prefixes cached per source before the cache starts afresh.
_CACHED = 512
#: Not in the cache: no time's epoch is infinite, and a float keeps the lists ``float | None``.
_MISS = float("-inf")
#: A plain SGLang prefix's seconds, ``[YYYY-MM-DD HH:MM:SS…``: where they stand, and their values.
_SEC = slice(18, 20)
#: A plain prefix around its seconds: what ``_minutes`` is keyed by (``p[:18] + p[20:]``).
_HEAD, _TAIL = slice(None, 18), slice(20, None)
#: No minute entry (``_fixed_epochs``: its time is worked out otherwise).
_NO_MINUTE: tuple[datetime, int, Ranks] = (datetime.min, 0, ())
_SECONDS = {f"{s:02d}": s for s in range(60)}
_UTC_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = 1_000_000


def _micros(ts: datetime) -> int:
    """Microseconds since the epoch of an aware time, as ``timestamp`` counts them."""
    delta = ts - _UTC_EPOCH
    return (delta.days * 86400 + delta.seconds) * _US + delta.microseconds


class PrefixCache:
    """Memoise prefixes: consecutive lines share one per second and rank.

    Cached timestamps are already aware, in the zone of ``local`` (the source's).
    A new second is a new prefix, so a miss is common on a busy log: in a zone
    with a fixed offset it skips ``LocalTime.aware``'s fold and gap logic, which
    gives the very same time there, and a plain SGLang prefix whose minute, ranks
    and rest were seen before (only its seconds differ) is not parsed again: its
    time is that minute's plus the seconds, to the microsecond (``_minutes``).
    """

    __slots__ = ("_cache", "_epochs", "_fixed", "_local", "_minutes")

    def __init__(self, local: LocalTime | None = None) -> None:
        self._cache: dict[str, Prefix] = {}
        self._epochs: dict[str, float | None] = {}
        self._local = local or LocalTime()
        self._fixed = fixed_offset(self._local.zone)
        #: plain prefix with its seconds cut out → (its time at second 0, microseconds then, ranks)
        self._minutes: dict[str, tuple[datetime, int, Ranks]] = {}

    @property
    def fixed(self) -> timezone | None:
        """The zone's one offset where it never changes (then a prefix's time is its alone,
        whatever was parsed before it), else None."""
        return self._fixed

    def _room(self) -> None:
        if len(self._epochs) >= _CACHED:
            self._cache.clear()
            self._epochs.clear()
        if len(self._minutes) >= _CACHED:
            self._minutes.clear()

    def _minute(self, prefix: str) -> tuple[tuple[datetime, int, Ranks] | None, int | None]:
        """The minute entry a plain prefix shares (in a fixed-offset zone), and its seconds."""
        sec = _SECONDS.get(prefix[_SEC]) if self._fixed is not None else None
        if sec is None:
            return None, None
        return self._minutes.get(prefix[:18] + prefix[20:]), sec

    def get(self, prefix: str) -> Prefix:
        hit = self._cache.get(prefix)
        if hit is None:
            self._room()
            minute, sec = self._minute(prefix)
            if minute is not None and sec is not None:
                ts: datetime | None = minute[0].replace(second=sec)
                hit = self._cache[prefix] = (ts, minute[2])
                self._epochs[prefix] = (minute[1] + sec * _US) / _US
                return hit
            fixed = self._fixed
            plain = _plain(prefix) if sec is not None else None
            wall, ranks = (
                plain if plain is not None else parse_prefix(prefix) if sec is None else _general(prefix)
            )
            ts = None
            if wall is not None:
                ts = (
                    self._local.aware(wall)
                    if fixed is None or wall.tzinfo is not None
                    else wall.replace(tzinfo=fixed)
                )
                if plain is not None and sec is not None:
                    base = ts.replace(second=0)
                    self._minutes[prefix[:18] + prefix[20:]] = (base, _micros(base), ranks)
            hit = self._cache[prefix] = (ts, ranks)
            self._epochs[prefix] = epoch(ts)
        return hit

    def table(self, prefixes: list[str]) -> dict[str, Prefix]:
        """``get`` of each distinct prefix. In a fixed-offset zone ``get``'s minute rule is
        written out in one loop (a busy log has a new prefix every second, so most are misses,
        and a call each costs more than the arithmetic); elsewhere ``get``, in line order."""
        if self._fixed is None:
            return {p: self.get(p) for p in dict.fromkeys(prefixes)}
        cache, minutes, get = self._cache, self._minutes, self.get
        out: dict[str, Prefix] = {}
        for p in dict.fromkeys(prefixes):
            hit = cache.get(p)
            if hit is None:
                sec = _SECONDS.get(p[_SEC])
                minute = minutes.get(p[:18] + p[20:]) if sec is not None else None
                hit = (minute[0].replace(second=sec), minute[2]) if minute and sec is not None else get(p)
            out[p] = hit
        return out

    def ranks(self, prefixes: list[str]) -> list[Ranks]:
        """Each prefix's ranks, in order. Ranks do not depend on the time, so a prefix whose
        minute is known builds no time (most of a busy log's); the others are looked up whole."""
        table: dict[str, Ranks] = {}
        minutes, get = self._minutes, self.get
        fixed = self._fixed is not None
        for p in dict.fromkeys(prefixes):
            minute = minutes.get(p[:18] + p[20:]) if fixed and p[_SEC] in _SECONDS else None
            table[p] = minute[2] if minute is not None else get(p)[1]
        return list(map(table.__getitem__, prefixes))

    def epochs(self, prefixes: list[str]) -> list[float | None]:
        """``epoch`` of each prefix, in order; cache hits cost no call each.

        Misses are then parsed in line order, as one ``epoch`` call per prefix would.
        Where the zone has offset changes, a time depends on the times parsed before
        it (``LocalTime``'s fold rule), so when the misses could fill the cache (which
        is then cleared, and later prefixes parsed again) it goes one call per prefix.
        """
        if self._fixed is not None:  # times do not depend on order: each distinct prefix once
            return list(map(self._fixed_epochs(prefixes).__getitem__, prefixes))
        out: list[float | None] = list(map(self._epochs.get, prefixes, repeat(_MISS)))
        misses = out.count(_MISS)
        if misses and len(self._cache) + misses >= _CACHED:
            return list(map(self.epoch, prefixes))
        at, one = 0, self.epoch
        for _ in range(misses):
            at = out.index(_MISS, at)
            out[at] = one(prefixes[at])
        return out

    def _fixed_epochs(self, prefixes: list[str]) -> dict[str, float | None]:
        """``epoch`` of each distinct prefix in a fixed-offset zone: ``epoch``'s minute rule
        mapped over them at C speed (a busy log has a new prefix every second, and a Python
        step per prefix cost more than the arithmetic). A minute not seen yet is learned
        from its first prefix (``epoch``), then mapped like the others; a prefix that is
        not plain goes through ``epoch`` alone."""
        distinct = list(dict.fromkeys(prefixes))
        secs: list[int] = list(map(_SECONDS.get, map(itemgetter(_SEC), distinct), repeat(-1)))
        keys: list[str] = list(map(add, map(itemgetter(_HEAD), distinct), map(itemgetter(_TAIL), distinct)))
        minutes, one = self._minutes, self.epoch
        found = list(map(minutes.get, keys, repeat(_NO_MINUTE)))
        if any(map(is_, found, repeat(_NO_MINUTE))):
            unknown = compress(zip(keys, distinct, strict=True), map(is_, found, repeat(_NO_MINUTE)))
            for p in dict(reversed(list(unknown))).values():  # the first prefix of each new minute
                one(p)
            found = list(map(minutes.get, keys, repeat(_NO_MINUTE)))
        values: list[float | None] = list(
            map(truediv, map(add, map(itemgetter(1), found), map(mul, secs, repeat(_US))), repeat(_US))
        )
        if any(map(is_, found, repeat(_NO_MINUTE))) or -1 in secs:
            for i, (seen, sec) in enumerate(zip(found, secs, strict=True)):
                if seen is _NO_MINUTE or sec < 0:
                    values[i] = one(distinct[i])
        return dict(zip(distinct, values, strict=True))

    def epoch(self, prefix: str) -> float | None:
        """The prefix's timestamp as epoch seconds (the fast path needs only this)."""
        try:
            return self._epochs[prefix]
        except KeyError:
            pass
        minute, sec = self._minute(prefix)
        if minute is None or sec is None:
            self.get(prefix)
            return self._epochs[prefix]
        self._room()
        value = self._epochs[prefix] = (minute[1] + sec * _US) / _US
        return value
