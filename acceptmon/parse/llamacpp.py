"""llama.cpp server speculative-decoding lines (per request), every released shape.

``server-context.cpp``'s ``print_timing`` ends each request with one line:

    slot print_timing: id  0 | task 42 | draft acceptance = 0.66237 (  257 accepted /   388 generated), mean len =  3.65

Earlier releases wrote ``draft acceptance rate = …`` (no mean length), and a
June 2026 one ``…, mean acceptance length =  2.92, acceptance rate per
position = (0.813, 0.716, 0.619)``. The counts are exact, so counters can be
token-exact. Two optional prefixes: ``--log-prefix --log-timestamps`` prints
``M.SS.mmm.uuu I `` (minutes since the *process started*: no wall clock), and
``--log-jsonl`` wraps the message as ``{"type":"log","time":…,"msg":"…"}``.
Format notes: ``docs/formats/llamacpp.md``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MARKER = "draft acceptance"

_N = r"(\d{1,15}(?:\.\d{1,15})?)"
_LINE = re.compile(
    r"(?:slot print_timing: id +(\d{1,6}) \| task +(-?\d{1,12}) \| )?"
    r"draft acceptance(?: rate)? = " + _N + r" \( *(\d{1,15}) accepted / *(\d{1,15}) generated\)"
    r"(?:, mean (?:acceptance length|len) = +" + _N + r")?"
    r"(?:, acceptance rate per position = \(([\d., ]{0,4000})\))?"
)
#: ``--log-prefix --log-timestamps``: minutes.seconds.milliseconds.microseconds since start, level.
_REL_PREFIX = re.compile(r"(\d{1,9})\.(\d\d)\.(\d{3})\.(\d{3}) [DIWE] ")


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


def unwrap(text: str) -> tuple[str, float | None, float | None]:
    """The message, seconds since start (relative prefix) and the JSON ``time`` (jsonl), if any."""
    if text.startswith("{") and '"msg"' in text:
        try:
            doc = json.loads(text)
        except ValueError:
            return text, None, None
        if isinstance(doc, dict) and isinstance(doc.get("msg"), str):
            t = doc.get("time")
            return (
                doc["msg"],
                None,
                float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None,
            )
        return text, None, None
    m = _REL_PREFIX.match(text)
    if m is None:
        return text, None, None
    minutes, seconds, ms, us = (int(g) for g in m.groups())
    return text[m.end() :], minutes * 60 + seconds + ms / 1e3 + us / 1e6, None


def parse(text: str) -> Acceptance | None:
    """The acceptance a line reports, or None (not such a line, or counts that cannot be)."""
    if MARKER not in text:
        return None
    msg, since, jtime = unwrap(text)
    m = _LINE.search(msg)
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
