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

Three more shapes share the table: JSON log lines (vLLM's or SGLang's
``--logging-config`` with a JSON formatter, llama.cpp's ``--log-jsonl``), whose
message is parsed as a line and whose time comes from the JSON; llama.cpp's
per-request and start-up lines (``parse/llamacpp.py``); and LMDeploy's stats line,
which carries a vLLM-style ``SpecDecoding metrics:`` body after its own fields.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timezone, tzinfo
from typing import Any

from acceptmon.log_time import LocalTime
from acceptmon.model import (
    OUT_OF_RANGE,
    DecodeSample,
    Meta,
    ParseError,
    PrefillSample,
    Ranks,
    Record,
    ServerReady,
    ServerStart,
    Shutdown,
    SpecSample,
)
from acceptmon.parse import llamacpp, runtime, sglang, vllm
from acceptmon.parse.layouts import BulkLayout, DecodeShapes, DecodeValues, PrefillShapes
from acceptmon.parse.markers import LMDEPLOY, OTHER, REQUEST, REQUEST_MARKERS, SENTENCE
from acceptmon.parse.prefix import ANSI, PrefixCache, parse_ts
from acceptmon.sources.container.lines import parse_time
from acceptmon.text.redact import redact_args

_DECODE_LEN = len(sglang.DECODE)
_PREFILL_LEN = len(sglang.PREFILL)

#: How far into its message a sentence marker may stand.
_SENTENCE_LEAD = 48
#: A line that starts a new log entry (ends a request's unprefixed continuation).
ENTRY = re.compile(r"\[|\(\w++ pid=\d++\) |[A-Z]++ \d\d-\d\d |\d{4}-\d\d-\d\d")
_LLAMACPP = frozenset(llamacpp.MARKERS)
#: JSON log lines longer than this are not unwrapped (a real one is a few KB; server args ~20 KB).
_MAX_JSON = 512 * 1024
#: Where JSON formatters put the message and the time (python-json-logger, structlog, llama.cpp).
_MESSAGE_KEYS = ("message", "msg")
_TIME_KEYS = ("asctime", "timestamp", "@timestamp", "time", "ts")


class LineParser:
    """Parse one source's lines; keeps the little context some lines need.

    Context: the source's zone (log times are naive wall-clock time; records
    carry aware times), the year for vLLM's year-less timestamps, and which DP
    engine the next vLLM spec line belongs to.
    """

    __slots__ = (
        "_build",
        "_clock",
        "_engine",
        "_first",
        "_json_time",
        "_local",
        "_prefill_shapes",
        "_prefixes",
        "_shapes",
        "_startup",
        "_times",
        "_unwrapping",
        "_vclock",
        "_vllm_opened",
        "_vllm_version",
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
        #: vLLM: a start line was read and no metrics line since (see ``_spec``).
        self._vllm_opened = False
        #: vLLM: the API server's version line, for the ``non-default args`` line after it.
        self._vllm_version: str | None = None
        self._shapes = DecodeShapes()
        self._prefill_shapes = PrefillShapes()
        self._clock = llamacpp.ProcessClock(year_hint if callable(year_hint) else (lambda: year_hint))
        #: llama.cpp: the ``build:`` line's facts, and the start-up being read (until its slots).
        self._build: dict[str, Any] = {}
        self._startup: llamacpp.Startup | None = None
        #: The ``time`` of the JSON line being unwrapped (llama.cpp's may count from start).
        self._json_time: float | None = None
        self._unwrapping = False
        #: Inside a request dump: unprefixed lines are its continuation, not records.
        self.in_request = False
        #: The container runtime's raw time per line of the chunk being parsed, from line ``_first``.
        self._times: tuple[str | None, ...] | None = None
        self._first = 0

    def at_chunk(self, times: tuple[str | None, ...] | None, first: int) -> None:
        """The chunk about to be parsed: its runtime times (``Chunk.times``) and first line number."""
        self._times, self._first = times, first

    def _runtime(self, lineno: int) -> datetime | None:
        """The runtime's time of this line (read only here, where a record needs it), else None."""
        times = self._times
        if times is None or not 0 <= lineno - self._first < len(times):
            return None
        raw = times[lineno - self._first]
        return parse_time(raw) if raw is not None else None

    def _meta(self, prefix: str, lineno: int) -> Meta:
        ts, ranks = self._prefixes.get(prefix)
        if ts is None and self._times is not None and not self._unwrapping:
            ts = self._runtime(lineno)
        return Meta(self.source, lineno, ts, ranks)

    def parse(self, text: str, lineno: int) -> Record | None:
        """Return the record this line holds, a ParseError, or None for noise."""
        if "\r" in text:
            text = text.rstrip("\r").rsplit("\r", 1)[-1]
        if "\x1b" in text:
            text = ANSI.sub("", text)
        if text[:1] == "{" and not self._unwrapping:
            return self._json(text, lineno)
        if self.in_request and ENTRY.match(text):
            self.in_request = False
        i = text.rfind(sglang.DECODE)
        if i >= 0 and self._placed(text, i, sglang.DECODE):
            meta = self._meta(text[:i], lineno)
            if text.startswith(sglang.WINDOW, i + _DECODE_LEN):
                return sglang.parse_window(text[i + _DECODE_LEN + len(sglang.WINDOW) :], meta)
            return sglang.parse_decode(text[i + _DECODE_LEN :], meta)
        m = OTHER.search(text)
        if m is None:
            return None
        if m.group(0) in _LLAMACPP:
            return self._llamacpp(text, lineno)
        if not self._placed(text, m.start(), m.group(0)):
            return None
        return self._other(text, m.start(), m.group(0), lineno)

    def _json(self, text: str, lineno: int) -> Record | None:
        """A JSON log line: its message parsed as a line, stamped with the JSON's time."""
        doc: Any = None
        if len(text) <= _MAX_JSON and '"' in text:
            try:
                doc = json.loads(text)
            except (ValueError, RecursionError):
                doc = None
        msg = None
        if isinstance(doc, dict):
            msg = next((doc[k] for k in _MESSAGE_KEYS if isinstance(doc.get(k), str)), None)
        raw = next((doc[k] for k in _TIME_KEYS if k in doc), None) if msg is not None else None
        self._unwrapping = True
        try:
            if msg is None:  # not a JSON log record: an ordinary line that starts with "{"
                return self.parse(text, lineno)
            if sglang.DECODE not in msg and OTHER.search(msg) is None:
                return None
            number = isinstance(raw, int | float) and not isinstance(raw, bool)
            self._json_time = float(raw) if number and raw is not None else None
            self.in_request = False  # one JSON record is one whole entry: no continuation lines
            record = self.parse(msg.replace("\n", " "), lineno)
        finally:
            self._unwrapping = False
            self._json_time = None
            if msg is not None:
                self.in_request = False
        if record is None or record.meta.ts is not None:
            return record
        ts = self._json_ts(raw) or self._runtime(lineno)
        return replace(record, meta=replace(record.meta, ts=ts)) if ts is not None else record

    def _json_ts(self, raw: Any) -> datetime | None:
        """A JSON time: epoch seconds, ISO 8601 or logging's ``asctime`` (naive: the source's zone)."""
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            try:
                return datetime.fromtimestamp(raw, UTC) if raw >= 1e9 else None
            except (OverflowError, OSError, ValueError):
                return None
        if not isinstance(raw, str):
            return None
        wall = parse_ts(raw.strip().replace("Z", "+00:00") if raw.endswith("Z") else raw.strip())
        if wall is None:
            return None
        return wall if wall.tzinfo is not None else self._local.aware(wall)

    def _llamacpp(self, text: str, lineno: int) -> Record | None:
        """llama.cpp: a request's acceptance, or a start-up line (a start is emitted at its slots)."""
        msg, since, _, wall = llamacpp.unwrap(text)
        json_time = self._json_time
        if llamacpp.MARKER in msg:
            if not llamacpp.message_start(msg, "draft acceptance"):
                return None
            acc = llamacpp.parse(msg)
            ts = self._local.aware(wall) if wall is not None else self._llama_ts(since, json_time, lineno)
            meta = Meta(self.source, lineno, ts)
            if acc is None:
                return ParseError(meta, "llamacpp: draft acceptance out of range or unreadable", OUT_OF_RANGE)
            mean = acc.mean_len
            fits = llamacpp.mean_len_fits(acc)
            if mean is not None and not 1.0 <= mean <= sglang.MAX_ACCEPT_LEN:
                mean = None  # printed, but no accept length: keep the exact counts
            return SpecSample(
                meta, acc.rate, mean, acc.accepted, acc.generated, acc.per_position,
                engine_name="llamacpp", suspect=not fits,
            )  # fmt: skip
        marker = next((m for m in _LLAMACPP if m in msg), "")
        if not marker or not llamacpp.message_start(msg, marker):
            return None
        kind, facts = llamacpp.start_line(msg)
        if kind == "build":
            self._build = facts
            self._llama_ts(since, json_time, lineno, restart=True)
            return None
        if kind == "model":
            ts = self._llama_ts(since, json_time, lineno, restart=not self._build)
            ts = self._local.aware(wall) if wall is not None else ts
            self._startup = llamacpp.Startup(lineno, ts.timestamp() if ts else None, {**self._build, **facts})
            self._build = {}
            return None
        startup = self._startup
        if startup is None:
            return None
        startup.args.update(facts)
        if kind in ("draft", "mtp"):
            return None
        self._startup = None
        started = datetime.fromtimestamp(startup.since, UTC) if startup.since is not None else None
        return ServerStart(Meta(self.source, startup.lineno, started), redact_args(startup.args))

    def _llama_ts(
        self, since: float | None, json_time: float | None, lineno: int, restart: bool = False
    ) -> datetime | None:
        """The JSON time, else the container runtime's, else llama.cpp's clock relative to its start."""
        if json_time is not None:
            epoch = self._clock.json_epoch(json_time, restart)
        elif (given := self._runtime(lineno)) is not None:
            return given
        elif since is not None:
            epoch = self._clock.epoch(since, restart)
        else:
            return None
        return datetime.fromtimestamp(epoch, UTC) if epoch is not None else None

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

    def bulk_decode(self, block: str, n: int) -> tuple[list[tuple[str, ...]], BulkLayout] | None:
        """Rows for ``n`` joined Decode lines in the first learned layout (see DecodeShapes.bulk)."""
        return self._shapes.bulk(block, n)

    def learned(self, decode: bool, prefill: bool) -> bool:
        """Whether the bulk path has a layout for each kind asked for (Decode, Prefill)."""
        return (not decode or len(self._shapes) > 0) and (not prefill or len(self._prefill_shapes) > 0)

    def bulk_prefill(self, block: str, n: int) -> bool:
        return self._prefill_shapes.bulk(block, n)

    def bulk_given(
        self, found: tuple[str, list[list[str]]], n: int
    ) -> tuple[list[list[str]], BulkLayout] | None:
        """``bulk_decode``'s answer, by column, from what a scout read with a regex, if it is
        the learned one."""
        return self._shapes.given(found, n)

    def prefill_given(self, found: tuple[str, bool]) -> bool | None:
        """``bulk_prefill``'s answer a scout found with a regex, if it is the learned one."""
        return self._prefill_shapes.given(found)

    def bulk_patterns(self) -> tuple[str | None, str | None]:
        """The regexes of ``bulk_decode`` and ``bulk_prefill`` (None: no layout learned yet)."""
        return self._shapes.bulk_pattern, self._prefill_shapes.bulk_pattern

    def fixed_zone(self) -> timezone | None:
        """The source's zone as its one offset, where it never changes (``PrefixCache.fixed``)."""
        return self._prefixes.fixed

    def prefix_epochs(self, prefixes: list[str]) -> list[float | None]:
        """The epoch of each prefix, in order (cache hits without a call each)."""
        return self._prefixes.epochs(prefixes)

    def prefix_ranks(self, prefixes: list[str]) -> list[Ranks]:
        """The ranks of each prefix, in order (no time built where the cache can avoid it)."""
        return self._prefixes.ranks(prefixes)

    def prefix_table(self, prefixes: list[str]) -> dict[str, tuple[datetime | None, Ranks]]:
        """(aware time, ranks) of each distinct prefix, as records carry them."""
        return self._prefixes.table(prefixes)

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
        if marker == LMDEPLOY:
            return self._lmdeploy(text, at, lineno)
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

    def _spec(self, text: str, at: int, marker: str, lineno: int) -> Record | None:
        prefix = text[:at]
        wall = vllm.timestamp(prefix, self._vclock)
        ts = self._local.aware(wall) if wall is not None else None
        if ts is None and not self._unwrapping:
            ts = self._runtime(lineno)
        meta = Meta(self.source, lineno, ts, vllm.ranks_of(prefix))
        if marker == vllm.VERSION:
            self._vllm_version = vllm.version_of(text[at + len(marker) :])
            return None
        if marker in vllm.START_MARKERS:
            # v1's engine core logs its config after the API server's non-default args (and,
            # in older releases, once per DP engine): it opens a run only if nothing did since
            # the last metrics line.
            opened, self._vllm_opened = self._vllm_opened, True
            if marker == vllm.ENGINE_V1 and opened:
                return None
            record = vllm.parse_start(marker, text[at + len(marker) :], meta)
            version, self._vllm_version = self._vllm_version, None
            if marker == vllm.NON_DEFAULT and version and isinstance(record, ServerStart):
                return ServerStart(record.meta, {"vllm_version": version, **record.args})
            return record
        self._vllm_opened = False
        engine, self._engine = self._engine, None
        return vllm.parse_spec(text[at + len(marker) :], meta, engine)

    def _lmdeploy(self, text: str, at: int, lineno: int) -> Record | None:
        """LMDeploy's stats line: ``[YYYY-MM-DD HH:MM:SS DPn] Avg thr …, SpecDecoding metrics: …``."""
        spec = text.find(vllm.MARKERS[0], at)
        if spec < 0:
            return None  # a stats line without speculative decoding
        ts, ranks = self._prefixes.get(text[:at])
        if ts is None and not self._unwrapping:
            ts = self._runtime(lineno)
        rank = next((v for k, v in ranks if k == "dp"), None)
        record = vllm.parse_spec(
            text[spec + len(vllm.MARKERS[0]) :], Meta(self.source, lineno, ts, ranks), rank
        )
        return replace(record, engine_name="lmdeploy") if isinstance(record, SpecSample) else record
