"""Log-derived text made safe to print on a terminal.

A log line, a file name or a ``server_args`` key can hold terminal escapes:
OSC 52 writes the reader's clipboard, CSI sequences move the cursor and
rewrite what is already on screen, and bidi overrides make text read other
than it is. Every command that prints such text to a terminal passes it
through :func:`printable`; JSON outputs need not (``json.dumps`` escapes it).
"""

from __future__ import annotations

import logging
import re

#: C0 controls, DEL, C1 controls (8-bit CSI/OSC), bidi embeddings, overrides, isolates and
#: marks, and the Unicode line/paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_NEWLINES = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character shown as a visible escape (``\\x1b``, ``\\u202e``),
    so it reads as what it is and does nothing; ``newlines`` keeps line breaks of multi-line text."""
    return (_UNSAFE_KEEP_NEWLINES if newlines else _UNSAFE).sub(_escaped, text)


class PrintableFormatter(logging.Formatter):
    """Log lines for a terminal: a message quoting a log's text (a path, a key) escapes its
    control characters like every other output; line breaks (tracebacks) stay."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), newlines=True)
