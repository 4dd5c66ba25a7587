"""llama.cpp server speculative-decoding lines (per request), every released shape.

``server-context.cpp``'s ``print_timing`` ends each request with one line:

    slot print_timing: id  0 | task 42 | draft acceptance = 0.66237 (  257 accepted /   388 generated), mean len =  3.65

Earlier releases wrote ``draft acceptance rate = …`` (no mean length), and a
June 2026 one ``…, mean acceptance length =  2.92, acceptance rate per
position = (0.813, 0.716, 0.619)``. The counts are exact, so counters can be
token-exact. Two optional prefixes: ``--log-prefix --log-timestamps`` prints
``M.SS.mmm.uuu I `` (minutes since the *process started*: no wall clock), and
``--log-jsonl`` wraps the message as ``{"type":"log","time":…,"msg":"…"}``.
Lines as people keep them are read too: behind a log viewer's ``YYYY-MM-DD HH:MM:SS.mmm | ``
(Docker Desktop; a wall clock), with ``[pid] `` before the relative clock, indented, with the
head's ``id``/``task`` left out, or with the message alone on its own physical line (releases
that logged it with ``SLT_CNT`` or after a ``\\n``, so the head stands on the line before).

A server start is the ``load_model: loading model '…'`` line; what follows it up to
``initializing slots`` (the draft model, MTP, the slot count) and the ``build:`` line
before it make the start's arguments (``Startup``). Relative times become wall times
through ``ProcessClock``. Format notes: ``docs/formats/llamacpp.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

MARKER = "draft acceptance"

_N = r"(\d{1,15}(?:\.\d{1,15})?)"
_LINE = re.compile(
    r"(?:slot +print_timing: (?:id +(\d{1,6}) \| task +(-?\d{1,12}) \| )?)?"
    r"draft acceptance(?: rate)? = " + _N + r" \( *(\d{1,15}) accepted / *(\d{1,15}) generated\)"
    r"(?:, mean (?:acceptance length|len) = +" + _N + r")?"
    r"(?:, acceptance rate per position = \(([\d., ]{0,4000})\))?"
)
#: ``--log-prefix --log-timestamps``: minutes.seconds.milliseconds.microseconds since start, level.
_REL_PREFIX = re.compile(r"(?:\[\d{1,10}\] )?(\d{1,9})\.(\d\d)\.(\d{3})\.(\d{3}) [DIWE] ")
#: A log viewer's own wall-clock prefix (Docker Desktop's container log view and its copy).
_VIEWER = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?) \| ")


@dataclass(frozen=True, slots=True)
class Acceptance:
    """One request's speculative decoding, as llama.cpp printed it."""

    accepted: int
    generated: int
    rate: float
    mean_len: float | None
    per_position: tuple[float, ...]
    slot: int | None
    task: int | None
    #: Seconds since the server process started (``--log-timestamps``), if printed.
    since_start: float | None = None
    #: The JSON log record's ``time``, if the line came from ``--log-jsonl``.
    json_time: float | None = None


class Message(NamedTuple):
    """A line's llama.cpp message and the times its prefixes gave."""

    text: str
    #: Seconds since the server process started (``--log-timestamps``).
    since: float | None = None
    #: The JSON record's ``time`` (``--log-jsonl``).
    json_time: float | None = None
    #: A log viewer's wall time (naive: the viewer's local time).
    wall: datetime | None = None


def unwrap(text: str) -> Message:
    """The message behind a viewer's prefix, ``--log-jsonl`` or ``[pid] M.SS.mmm.uuu L ``."""
    wall = None
    v = _VIEWER.match(text)
    if v is not None:
        try:
            wall = datetime.fromisoformat(v.group(1))
        except ValueError:
            return Message(text)
        text = text[v.end() :]
    text = text.lstrip(" \t")
    if text.startswith("{") and '"msg"' in text:
        try:
            doc = json.loads(text)
        except ValueError:
            return Message(text, wall=wall)
        if isinstance(doc, dict) and isinstance(doc.get("msg"), str):
            t = doc.get("time")
            jtime = float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None
            return Message(doc["msg"].strip(), None, jtime, wall)
        return Message(text, wall=wall)
    m = _REL_PREFIX.match(text)
    if m is None:
        return Message(text, wall=wall)
    minutes, seconds, ms, us = (int(g) for g in m.groups())
    return Message(text[m.end() :].lstrip(" \t"), minutes * 60 + seconds + ms / 1e3 + us / 1e6, None, wall)


def parse(text: str) -> Acceptance | None:
    """The acceptance a line reports, or None (not such a line, or counts that cannot be)."""
    if MARKER not in text:
        return None
    msg, since, jtime, _ = unwrap(text)
    m = _LINE.match(msg)
    if m is None:
        return None
    slot, task, rate, accepted, generated, mean, positions = m.groups()
    acc, gen = int(accepted), int(generated)
    if acc > gen or not 0.0 <= float(rate) <= 1.0:
        return None
    per = tuple(float(p) for p in positions.replace(" ", "").split(",") if p) if positions else ()
    if any(not 0.0 <= p <= 1.0 for p in per):
        per = ()
    return Acceptance(
        acc,
        gen,
        acc / gen if gen else float(rate),
        float(mean) if mean else None,
        per,
        int(slot) if slot is not None else None,
        int(task) if task is not None else None,
        since,
        jtime,
    )


def mean_len_fits(acc: Acceptance) -> bool:
    """Whether ``mean len`` (1 + accepted / verify steps) is possible for the counts.

    Each verify step drafts one token or more, so the steps are between 1 and ``generated``
    and the mean between ``1 + accepted/generated`` and ``1 + accepted`` (printed to 0.01).
    """
    mean = acc.mean_len
    if mean is None or acc.generated == 0:
        return True
    return 1 + acc.accepted / acc.generated - 0.005 <= mean <= 1 + acc.accepted + 0.005


#: Markers of llama.cpp's start-up lines (``parse/markers.py`` cuts chunks at them).
START_MARKERS = ("build: ", "loading model '", "loading draft model '", "creating MTP draft context")
END_MARKERS = ("initializing slots", "model loaded", "server is listening on")
MARKERS = (MARKER, *START_MARKERS, *END_MARKERS)

#: ``srv    load_model: `` / ``main: `` / ``slot print_timing: id  0 | task 4 | ``: who logged it.
_HEAD = re.compile(r"(?:(?:srv|slot|que) {1,16}+)?+\w{1,40}+: (?:id +\d{1,6}+ \| task -?\d{1,12}+ \| )?+")
_BUILD = re.compile(r"build: (\d{1,9}) \(([0-9A-Za-z]{1,40})\) with (.{0,200}?) for (\S{1,100})")
_QUOTED = re.compile(r"loading (draft )?model '([^']{0,4096})'")
_SLOTS = re.compile(r"initializing slots, n_slots = (\d{1,6})")

#: The number a JSON ``time`` must exceed to be a wall clock (epoch seconds), not seconds since start.
_EPOCH_MIN = 1e9


def message_start(msg: str, marker: str) -> bool:
    """Whether ``marker`` opens the message, after llama.cpp's own ``srv  func: `` head (so a
    request body a verbose server logs, which may quote anything, is never taken for a record)."""
    if msg.startswith(marker):
        return True
    head = _HEAD.match(msg)
    return head is not None and msg.startswith(marker, head.end())


@dataclass
class Startup:
    """What a start-up logged so far: its arguments as llama.cpp's own option names."""

    lineno: int
    since: float | None
    args: dict[str, Any] = field(default_factory=dict)


def start_line(msg: str) -> tuple[str, dict[str, Any]]:
    """(``build`` | ``model`` | ``draft`` | ``mtp`` | ``slots`` | ``ready``, facts) of a start-up line."""
    m = _BUILD.search(msg)
    if m is not None and message_start(msg, "build: "):
        return "build", {"build": f"{m.group(1)} ({m.group(2)})", "build_target": m.group(4)}
    m = _QUOTED.search(msg)
    if m is not None:
        return ("draft", {"model_draft": m.group(2)}) if m.group(1) else ("model", {"model": m.group(2)})
    if "creating MTP draft context" in msg:
        return "mtp", {"speculative_type": "draft-mtp"}
    m = _SLOTS.search(msg)
    if m is not None:
        return "slots", {"n_parallel": int(m.group(1))}
    return "ready", {}


class ProcessClock:
    """Wall times for times counted from the process's start (``--log-timestamps``).

    The first line of a process is placed at the hint (the file's modification time, or
    now for a live line) less its offset, and never before the last time given out, so
    times stay in order across restarts (each resets the offset to zero, and an offset
    going backwards is a restart too). Within a process, intervals are exact.
    """

    __slots__ = ("_anchor", "_hint", "_last", "_since")

    def __init__(self, hint: Callable[[], datetime | None]) -> None:
        self._hint = hint
        self._anchor: float | None = None
        self._since = 0.0
        self._last: float | None = None

    def epoch(self, since: float, restart: bool = False) -> float | None:
        if self._anchor is None or restart or since < self._since:
            hint = self._hint()
            if hint is None:
                return None
            anchor = hint.timestamp() - since
            self._anchor = anchor if self._last is None else max(anchor, self._last - since)
        self._since = since
        self._last = self._anchor + since
        return self._last

    def json_epoch(self, time: float, restart: bool = False) -> float | None:
        """A ``--log-jsonl`` ``time``: epoch seconds when it looks like one, else seconds since start."""
        return time if time >= _EPOCH_MIN else self.epoch(time, restart)
