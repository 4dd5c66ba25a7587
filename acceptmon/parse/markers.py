"""The one table of line markers: what the per-line parser looks for and what the bulk path cuts at.

Each marker is a literal message fragment with its kind:

- ``batch``: a Decode or Prefill line, which the bulk path takes in stretches;
- ``event``: a line that changes run state or is read on its own (starts,
  stops, crashes, vLLM metrics lines): the bulk path cuts a chunk there and
  hands the line to the per-line parser;
- ``request``: a request dump (``--log-requests``), which may quote any
  marker a user sent and is never parsed for one.

``sentence`` markers stand a few words into their message (``The server is
fired up…``); the others start it. Every regex below is built from this
table, so the two paths cannot disagree on which lines are which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from acceptmon.parse import llamacpp, runtime, sglang, vllm

MarkerKind = Literal["batch", "event", "request"]

#: LMDeploy's per-interval stats line, which carries ``SpecDecoding metrics:`` after its own fields.
LMDEPLOY = "Avg thr (in/out):"


@dataclass(frozen=True, slots=True)
class Marker:
    text: str
    kind: MarkerKind
    sentence: bool = False


MARKERS: tuple[Marker, ...] = (
    Marker(sglang.DECODE, "batch"),
    Marker("Receive: obj=", "request"),
    Marker("Finish: obj=", "request"),
    Marker("Received request ", "request"),
    Marker("Generated response ", "request"),
    Marker(sglang.PREFILL, "batch"),
    Marker("server_args=", "event"),
    Marker("server_args:", "event"),
    Marker("fired up and ready", "event", sentence=True),
    Marker("SIGTERM received", "event"),
    Marker("Shutting down", "event", sentence=True),
    Marker("hit an exception", "event", sentence=True),
    Marker("Exception in ModelTpServer", "event", sentence=True),
    Marker("sigquit from a child", "event", sentence=True),
    Marker("SIGQUIT received", "event", sentence=True),
    Marker("Watchdog timeout", "event", sentence=True),
    *(Marker(m, "event") for m in vllm.MARKERS),
    *(Marker(m, "event") for m in vllm.START_MARKERS),
    *(Marker(m, "event") for m in runtime.MARKERS),
    Marker("Adaptive spec params updated", "event"),
    Marker("Avg prompt throughput", "event", sentence=True),
    Marker(LMDEPLOY, "event"),
    # llama.cpp (per-request and start-up lines; placement is checked in parse/llamacpp.py).
    *(Marker(m, "event") for m in llamacpp.MARKERS),
)


def _texts(*kinds: MarkerKind) -> tuple[str, ...]:
    return tuple(m.text for m in MARKERS if m.kind in kinds)


def _alternation(texts: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(t) for t in texts))


#: Lines that dump a request (and may quote anything a user sent).
REQUEST_MARKERS = _texts("request")
REQUEST = _alternation(REQUEST_MARKERS)
#: Markers of lines that change run state (everything the parser knows but batches).
EVENT_MARKERS = _texts("event")
EVENTS = _alternation(EVENT_MARKERS)
#: Everything but Decode, which the parser finds first with a substring search.
OTHER = _alternation(tuple(m.text for m in MARKERS if m.text != sglang.DECODE))
#: Markers that stand a few words into their message.
SENTENCE = frozenset(m.text for m in MARKERS if m.sentence)
