"""One stateful parser per source: a line of text → a record, or nothing.

Most lines in a busy log are Decode lines or noise (HTTP access lines,
tqdm bars, NCCL chatter). The Decode marker is looked for first with a plain
substring search, and every other line must pass one compiled regex before
any further work, which keeps the cost of noise near that of ``grep``.

Which fragment marks which kind of line is one table (``parse/markers.py``),
shared with the bulk path. A record counts only where the engine writes it: at the start of the message,
right after the prefix (a few words in, for the sentence-like start, stop and
crash lines). With ``--log-requests`` the engines dump user prompts into the
same log (``Receive: obj=…``, ``Finish: obj=…``, vLLM's ``Received request …``
and ``Generated response …``); such lines, and the unprefixed continuation
lines that follow one, are request logs and never parsed for markers.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo

from acceptmon.log_time import LocalTime
from acceptmon.model import DecodeSample, Meta, PrefillSample, Ranks, Record, ServerReady, Shutdown
from acceptmon.parse import runtime, sglang, vllm
from acceptmon.parse.layouts import DecodeShapes, DecodeValues, PrefillShapes
from acceptmon.parse.markers import OTHER, REQUEST, REQUEST_MARKERS, SENTENCE
from acceptmon.parse.prefix import ANSI, PrefixCache

_DECODE_LEN = len(sglang.DECODE)
_PREFILL_LEN = len(sglang.PREFILL)

#: How far into its message a sentence marker may stand.
_SENTENCE_LEAD = 48
#: A line that starts a new log entry (ends a request's unprefixed continuation).
ENTRY = re.compile(r"\[|\(\w++ pid=\d++\) |[A-Z]++ \d\d-\d\d |\d{4}-\d\d-\d\d")


def has_request(lines: tuple[str, ...] | list[str]) -> bool:
    """Whether any line may be a request dump (C-level substring passes only)."""
    block = "\n".join(lines)
    return any(m in block for m in REQUEST_MARKERS)


class LineParser:
    """Parse one source's lines; keeps the little context some lines need.

    Context: the source's zone (log times are naive wall-clock time; records
    carry aware times), the year for vLLM's year-less timestamps, and which DP
    engine the next vLLM spec line belongs to.
    """

    __slots__ = (
        "_engine",
        "_local",
        "_prefill_shapes",
        "_prefixes",
        "_shapes",
        "_vclock",
        "in_request",
        "source",
    )

    def __init__(
        self,
        source: str,
        year_hint: vllm.Hint | datetime | None = None,
        zone: tzinfo = UTC,
        year: int | None = None,
    ) -> None:
        self.source = source
        self._local = LocalTime(zone)
        self._prefixes = PrefixCache(self._local)
        self._vclock = vllm.VllmClock(year_hint, year, zone)
        self._engine: int | None = None
        self._shapes = DecodeShapes()
        self._prefill_shapes = PrefillShapes()
        #: Inside a request dump: unprefixed lines are its continuation, not records.
        self.in_request = False

    def _meta(self, prefix: str, lineno: int) -> Meta:
        ts, ranks = self._prefixes.get(prefix)
        return Meta(self.source, lineno, ts, ranks)

    def parse(self, text: str, lineno: int) -> Record | None:
        """Return the record this line holds, a ParseError, or None for noise."""
        if "\r" in text:
            text = text.rstrip("\r").rsplit("\r", 1)[-1]
        if "\x1b" in text:
            text = ANSI.sub("", text)
        if self.in_request and ENTRY.match(text):
            self.in_request = False
        i = text.rfind(sglang.DECODE)
        if i >= 0 and self._placed(text, i, sglang.DECODE):
            return sglang.parse_decode(text[i + _DECODE_LEN :], self._meta(text[:i], lineno))
        m = OTHER.search(text)
        if m is None or not self._placed(text, m.start(), m.group(0)):
            return None
        return self._other(text, m.start(), m.group(0), lineno)

    def _placed(self, text: str, at: int, marker: str) -> bool:
        """Whether the marker at ``at`` starts the message (see the module docstring)."""
        if marker in REQUEST_MARKERS or REQUEST.search(text, 0, at) is not None:
            self.in_request = True
            return False
        close = text.rfind("]", 0, at)
        lead = text[close + 1 : at]
        if close < 0 and self.in_request:
            return False
        if marker in SENTENCE:
            return len(lead) <= _SENTENCE_LEAD
        # Right after the prefix (or at the start of an unprefixed line, as 0.2.x prints server_args).
        return not lead or lead.isspace()

    def fast_decode(self, text: str, at: int) -> tuple[DecodeValues, float | None] | None:
        """Values of a Decode line (marker at ``at``) in a learned layout, else None.

        Lines with carriage returns or colour codes always take the general path.
        """
        if "\r" in text or "\x1b" in text:
            return None
        values = self._shapes.match(text[at + _DECODE_LEN :])
        if values is None:
            return None
        return values, self._prefixes.epoch(text[:at])

    def fast_prefill(self, text: str) -> bool:
        """Whether ``text`` is a valid Prefill line in a learned layout."""
        if "\r" in text or "\x1b" in text:
            return False
        at = text.rfind(sglang.PREFILL)
        return at >= 0 and self._prefill_shapes.match(text[at + _PREFILL_LEN :])

    def bulk_decode(self, block: str, n: int) -> tuple[list[tuple[str, ...]], tuple[int | None, ...]] | None:
        """Rows for ``n`` joined Decode lines in the first learned layout (see DecodeShapes.bulk)."""
        return self._shapes.bulk(block, n)

    def bulk_prefill(self, block: str, n: int) -> bool:
        return self._prefill_shapes.bulk(block, n)

    def prefix_epoch(self, prefix: str) -> float | None:
        return self._prefixes.epoch(prefix)

    def prefix_epochs(self, prefixes: list[str]) -> list[float | None]:
        """``prefix_epoch`` of each, in order (cache hits without a call each)."""
        return self._prefixes.epochs(prefixes)

    def prefix(self, prefix: str) -> tuple[datetime | None, Ranks]:
        """(aware time, ranks) of a prefix, as records carry them (cached per prefix)."""
        return self._prefixes.get(prefix)

    def learn(self, text: str, record: Record) -> None:
        """Remember the layout of a batch line the general parser accepted (if new)."""
        if "\r" in text or "\x1b" in text:
            return
        if isinstance(record, DecodeSample):
            if self.fast_decode(text, text.rfind(sglang.DECODE)) is not None:
                return
            self._shapes.learn(text[text.rfind(sglang.DECODE) + _DECODE_LEN :])
        elif isinstance(record, PrefillSample) and not self.fast_prefill(text):
            self._prefill_shapes.learn(text[text.rfind(sglang.PREFILL) + _PREFILL_LEN :])

    def _other(self, text: str, at: int, marker: str, lineno: int) -> Record | None:
        if marker == "Prefill batch":
            at = text.rfind(marker)
            return sglang.parse_prefill(text[at + _PREFILL_LEN :], self._meta(text[:at], lineno))
        if marker in vllm.MARKERS or marker in vllm.START_MARKERS:
            return self._spec(text, at, marker, lineno)
        if marker == "Avg prompt throughput":
            self._engine = vllm.engine_of(text)
            return None
        meta = self._meta(text[:at], lineno)
        message = text[at:]
        if marker.startswith("server_args"):
            return sglang.parse_server_args(message, meta)
        if marker == "fired up and ready":
            return ServerReady(meta)
        if marker in ("SIGTERM received", "Shutting down"):
            return Shutdown(meta, message[:200])
        if marker == "Adaptive spec params updated":
            return sglang.parse_adaptive(message, meta)
        if marker in runtime.MARKERS:
            return runtime.parse(marker, message, meta)
        return sglang.crash(message, meta)

    def _spec(self, text: str, at: int, marker: str, lineno: int) -> Record:
        prefix = text[:at]
        wall = vllm.timestamp(prefix, self._vclock)
        ts = self._local.aware(wall) if wall is not None else None
        meta = Meta(self.source, lineno, ts, vllm.ranks_of(prefix))
        if marker in vllm.START_MARKERS:
            return vllm.parse_start(marker, text[at + len(marker) :], meta)
        engine, self._engine = self._engine, None
        return vllm.parse_spec(text[at + len(marker) :], meta, engine)
