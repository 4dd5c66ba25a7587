"""vLLM spec-decode metric lines (v0 and every v1 shape).

vLLM prints exact token counts, so its counters can be token-exact. Fields
are joined by ``", "`` and so is the per-position list, so fields are found
by their known keys rather than by splitting on commas. Timestamps carry no
year; ``VllmClock`` supplies it from context and handles the new-year wrap.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

from acceptmon.model import OUT_OF_RANGE, Meta, ParseError, SpecSample

MARKERS = ("SpecDecoding metrics:", "Speculative metrics:")

_NUM = r"(-?\d++(?:\.\d++)?+(?:[eE][-+]?\d++)?+|nan|inf)"
_KEYS = re.compile(
    r"(Avg Draft acceptance rate|Draft acceptance rate|Mean acceptance length|System efficiency"
    r"|Number of speculative tokens|Number of accepted tokens|Number of draft tokens(?: tokens)?"
    r"|Number of emitted tokens|Accepted throughput|Drafted throughput|Accepted|Drafted"
    r"|Per-position acceptance rate): "
)
_VALUE = re.compile(_NUM + r"(%)?")
_PREFIX_TS = re.compile(r"(?:^|\s)(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?\s")
_ENGINE = re.compile(r"Engine (\d{1,9}): Avg prompt throughput")
_PROC = re.compile(r"\((?:\w+_)?(DP|TP)(\d{1,6})(?: pid=\d+)?\)")
#: Token counts beyond this are not physical (and lose float precision).
MAX_COUNT = 2.0**53


class VllmClock:
    """Give ``MM-DD HH:MM:SS`` timestamps a year.

    The year comes from a hint (the file's modification time, or a CLI flag)
    for the first line; afterwards a month going backwards by more than six
    months means the log crossed a new year.
    """

    __slots__ = ("_from_hint", "_last", "_year")

    def __init__(self, hint: datetime | None) -> None:
        self._year = hint.year if hint else None
        self._last = (hint.month, hint.day) if hint else (0, 0)
        self._from_hint = hint is not None

    def stamp(self, month: int, day: int, clock: tuple[int, int, int, int]) -> datetime | None:
        """Date a line from its month, day and (hour, minute, second, microsecond)."""
        if self._year is None:
            return None
        if self._from_hint and (month, day) > self._last:
            self._year -= 1  # the log began before the new year the hint lies in
        elif month < self._last[0] - 6:
            self._year += 1
        self._from_hint = False
        self._last = (month, day)
        try:
            return datetime(self._year, month, day, *clock)
        except ValueError:
            return None


def timestamp(prefix: str, clock: VllmClock) -> datetime | None:
    m = _PREFIX_TS.search(prefix)
    if m is None:
        return None
    month, day, h, mi, s = (int(g) for g in m.groups()[:5])
    us = int((m.group(6) or "0").ljust(6, "0"))
    return clock.stamp(month, day, (h, mi, s, us))


def engine_of(text: str) -> int | None:
    """``Engine 001: Avg prompt throughput …`` names the engine of the next spec line."""
    m = _ENGINE.search(text)
    return int(m.group(1)) if m else None


def _fields(body: str) -> dict[str, list[float | None]]:
    keys = list(_KEYS.finditer(body))
    out: dict[str, list[float | None]] = {}
    for i, km in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(body)
        chunk = body[km.end() : end]
        vals: list[float | None] = []
        for vm in _VALUE.finditer(chunk):
            v = float(vm.group(1))  # never raises: huge literals become inf
            vals.append(None if math.isnan(v) else (v / 100.0 if vm.group(2) else v))
        out[km.group(1).replace("tokens tokens", "tokens")] = vals  # some builds misspell it
    return out


def _first(fields: dict[str, list[float | None]], *names: str) -> float | None:
    for name in names:
        vals = fields.get(name)
        if vals:
            return vals[0]
    return None


class _OutOfRange(ValueError):
    pass


def _count(value: float | None) -> int | None:
    """A token count: None when absent, an error unless a finite whole number >= 0."""
    if value is None:
        return None
    if not 0 <= value <= MAX_COUNT or value != int(value):
        raise _OutOfRange
    return int(value)


def _fraction(value: float | None) -> float | None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise _OutOfRange
    return value


def parse_spec(body: str, meta: Meta, engine: int | None) -> SpecSample | ParseError:
    """Parse the text after the ``SpecDecoding metrics:`` / ``Speculative metrics:`` marker.

    Values outside their physical range (counts finite and >= 0, rates within
    [0, 1], accepted <= drafted, mean length >= 1) make the line an
    ``out_of_range`` error rather than data.
    """
    try:
        return _parse_spec(body, meta, engine)
    except _OutOfRange:
        return ParseError(meta, "spec: value out of range", OUT_OF_RANGE)


def _parse_spec(body: str, meta: Meta, engine: int | None) -> SpecSample | ParseError:
    fields = _fields(body)
    accepted = _count(_first(fields, "Accepted", "Number of accepted tokens"))
    drafted = _count(_first(fields, "Drafted", "Number of draft tokens"))
    rate = _fraction(_first(fields, "Avg Draft acceptance rate", "Draft acceptance rate"))
    if accepted is None and drafted is None and rate is None:
        return ParseError(meta, "spec: no acceptance fields")
    if (accepted is None) != (drafted is None):
        return ParseError(meta, "spec: accepted/drafted incomplete")
    if accepted is not None and drafted is not None and accepted > drafted:
        raise _OutOfRange
    per_pos = tuple(v for v in fields.get("Per-position acceptance rate", []) if v is not None)
    if not all(0.0 <= v <= 1.0 for v in per_pos):
        raise _OutOfRange
    k = _count(_first(fields, "Number of speculative tokens")) or (len(per_pos) or None)
    mean_len = _first(fields, "Mean acceptance length")
    if mean_len is not None and not 1.0 <= mean_len <= (k + 1 if k else 1e6):
        raise _OutOfRange
    if drafted and accepted is not None:
        rate = accepted / drafted
    if mean_len is None and rate is not None and k:
        mean_len = 1.0 + rate * k
    cumulative = "System efficiency" in fields  # only v0 prints it, and v0 counts since start
    return SpecSample(
        meta=meta,
        accept_rate=rate,
        accept_len=mean_len,
        accepted_tokens=accepted,
        drafted_tokens=drafted,
        per_position=per_pos,
        num_spec_tokens=k,
        cumulative=cumulative,
        engine=engine,
    )


def ranks_of(prefix: str) -> tuple[tuple[str, int], ...]:
    """``(EngineCore_DP1 pid=7)`` / ``(Worker_TP0 pid=9)`` → (("dp", 1),) / (("tp", 0),)."""
    return tuple((kind.lower(), int(num)) for kind, num in _PROC.findall(prefix))
