"""One stateful parser per source: a line of text → a record, or nothing.

Most lines in a busy log are Decode lines or noise (HTTP access lines,
tqdm bars, NCCL chatter). The Decode marker is looked for first with a plain
substring search, and every other line must pass one compiled regex before
any further work, which keeps the cost of noise near that of ``grep``.
"""

from __future__ import annotations

import re
from datetime import datetime

from acceptmon.model import Meta, Record, ServerReady, Shutdown
from acceptmon.parse import sglang, vllm
from acceptmon.parse.prefix import ANSI, PrefixCache

_OTHER = re.compile(
    r"Prefill batch|server_args[=:]|fired up and ready|SIGTERM received|Shutting down"
    r"|hit an exception|Exception in ModelTpServer|sigquit from a child|SIGQUIT received|Watchdog timeout"
    r"|SpecDecoding metrics:|Speculative metrics:|Adaptive spec params updated|Avg prompt throughput"
)
_DECODE_LEN = len(sglang.DECODE)
_PREFILL_LEN = len(sglang.PREFILL)


class LineParser:
    """Parse one source's lines; keeps the little context some lines need.

    Context: the year for vLLM's year-less timestamps, and which DP engine
    the next vLLM spec line belongs to.
    """

    __slots__ = ("_engine", "_prefixes", "_vclock", "source")

    def __init__(self, source: str, year_hint: datetime | None = None) -> None:
        self.source = source
        self._prefixes = PrefixCache()
        self._vclock = vllm.VllmClock(year_hint)
        self._engine: int | None = None

    def _meta(self, prefix: str, lineno: int) -> Meta:
        ts, ranks = self._prefixes.get(prefix)
        return Meta(self.source, lineno, ts, ranks)

    def parse(self, text: str, lineno: int) -> Record | None:
        """Return the record this line holds, a ParseError, or None for noise."""
        if "\r" in text:
            text = text.rstrip("\r").rsplit("\r", 1)[-1]
        if "\x1b" in text:
            text = ANSI.sub("", text)
        i = text.rfind(sglang.DECODE)
        if i >= 0:
            return sglang.parse_decode(text[i + _DECODE_LEN :], self._meta(text[:i], lineno))
        m = _OTHER.search(text)
        if m is None:
            return None
        return self._other(text, m.start(), m.group(0), lineno)

    def _other(self, text: str, at: int, marker: str, lineno: int) -> Record | None:
        if marker == "Prefill batch":
            at = text.rfind(marker)
            return sglang.parse_prefill(text[at + _PREFILL_LEN :], self._meta(text[:at], lineno))
        if marker in vllm.MARKERS:
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
        return sglang.crash(message, meta)

    def _spec(self, text: str, at: int, marker: str, lineno: int) -> Record:
        prefix = text[:at]
        ts = vllm.timestamp(prefix, self._vclock)
        meta = Meta(self.source, lineno, ts, vllm.ranks_of(prefix))
        engine, self._engine = self._engine, None
        return vllm.parse_spec(text[at + len(marker) :], meta, engine)
