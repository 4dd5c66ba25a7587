"""vLLM spec-decode metric lines (v0 and every v1 shape).

vLLM prints exact token counts, so its counters can be token-exact. Fields
are joined by ``", "`` and so is the per-position list, so fields are found
by their known keys rather than by splitting on commas. Timestamps carry no
year; ``VllmClock`` supplies it from context and handles the new-year wrap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo

from acceptmon.log_time import YEAR_SLACK
from acceptmon.model import OUT_OF_RANGE, TOO_LARGE, Meta, ParseError, ServerStart, SpecSample
from acceptmon.parse.server_args import MAX_ARGS_CHARS, parse_mapping, parse_pairs
from acceptmon.text.redact import redact_args

MARKERS = ("SpecDecoding metrics:", "Speculative metrics:")
#: Start lines: v1's API server prints the arguments that differ from the defaults (a dict
#: repr); v0's engine prints ``Initializing an LLM engine (v0.6.3) with config: model=…, …)``,
#: v1's engine core ``Initializing a V1 LLM engine (v0.11.0) with config: model=…,
#: speculative_config=SpeculativeConfig(method=…, model=…, num_spec_tokens=3), …`` (``core.py``;
#: it opens a run only when no ``non-default args`` line opened it, see ``parse/line.py``).
#: ``setup_server`` logs ``vLLM API server version 0.11.0`` just before the non-default args.
NON_DEFAULT, ENGINE_CONFIG, ENGINE_V1, VERSION = (
    "non-default args:",
    "Initializing an LLM engine",
    "Initializing a V1 LLM engine",
    "vLLM API server version ",
)
START_MARKERS = (NON_DEFAULT, ENGINE_CONFIG, ENGINE_V1, VERSION)
_VERSION = re.compile(r"v?(\d[0-9A-Za-z.+-]{0,39})\s*$")

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


#: Where the year of a year-less line comes from: the latest "no later than" time
#: (the file's modification time, or now), asked per line so a long-running
#: agent crosses the new year with the log.
Hint = Callable[[], "datetime | None"]


class VllmClock:
    """Give ``MM-DD HH:MM:SS`` timestamps a year; the result is a naive wall time.

    The first line's year is ``year`` if given (``--year``: exactly that year,
    whatever its month). Otherwise it is the hint's, less one if the line would
    then lie more than ``YEAR_SLACK`` after the hint (a line cannot be written
    after its file was last modified). After the first line, a month going
    backwards by more than six means the log crossed a new year (bounded by
    the hint in the same way when there is no fixed year).
    """

    __slots__ = ("_fixed", "_hint", "_last", "_year", "zone")

    def __init__(self, hint: Hint | datetime | None, year: int | None = None, zone: tzinfo = UTC) -> None:
        self._hint: Hint = hint if callable(hint) else (lambda: hint)
        self._fixed = year
        self._year: int | None = None
        self._last = 0
        self.zone = zone

    def _limit(self) -> datetime | None:
        hint = self._hint()
        if hint is None:
            return None
        wall = hint.astimezone(self.zone).replace(tzinfo=None) if hint.tzinfo is not None else hint
        return wall + YEAR_SLACK

    def stamp(self, month: int, day: int, clock: tuple[int, int, int, int]) -> datetime | None:
        """Date a line from its month, day and (hour, minute, second, microsecond)."""
        try:
            wrap = self._year is not None and month < self._last - 6
            if self._fixed is not None:
                year = self._fixed if self._year is None else self._year + wrap
            else:
                limit = self._limit()
                if limit is None:
                    return None
                year = limit.year if self._year is None else min(self._year + wrap, limit.year)
                if year == limit.year and (month, day, clock) > (limit.month, limit.day, _clock(limit)):
                    year -= 1
            self._year, self._last = year, month
            return datetime(year, month, day, *clock)
        except ValueError:  # 29 Feb of a year without one, month 13, …
            return None


def _clock(ts: datetime) -> tuple[int, int, int, int]:
    return (ts.hour, ts.minute, ts.second, ts.microsecond)


def timestamp(prefix: str, clock: VllmClock) -> datetime | None:
    """The naive wall time of a vLLM prefix (the caller applies the source's zone)."""
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


def version_of(text: str) -> str | None:
    """``0.11.0`` of the API server's version line, or None for anything else."""
    m = _VERSION.match(text.strip())
    return m.group(1) if m else None


def parse_start(marker: str, body: str, meta: Meta) -> ServerStart | ParseError:
    """The text after a start marker → a ServerStart with redacted args.

    The engine config lines (v0, v1) carry the version (``vllm_version``) before ``with config:``.
    """
    if len(body) > MAX_ARGS_CHARS:
        return ParseError(meta, "vllm start: line too large", TOO_LARGE)
    if marker == NON_DEFAULT:
        args = parse_mapping(body)
    else:
        head, sep, rest = body.partition("with config:")
        args = parse_pairs(rest) if sep else None
        version = head.strip().strip("()")
        if args is not None and version.startswith("v") and len(version) < 40:
            args = {"vllm_version": version[1:], **args}
    if args is None:
        return ParseError(meta, "vllm start: unreadable")
    return ServerStart(meta=meta, args=redact_args(args))
