"""Text from logs and file names made safe to print: the one rule, everywhere.

A log line, a file name or a ``server_args`` key can hold terminal escapes (OSC 52 writes
the reader's clipboard, CSI rewrites the screen, bidi overrides make text read other than
it is), a newline that fakes a log line, or a byte that is not UTF-8 (Linux names are
bytes; Python reads such a byte as a lone surrogate no UTF-8 output can carry). Every
label, JSON key, terminal line and log line shows such text through :func:`printable`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

#: How the commonest controls are written; any other unprintable character is ``\\xNN`` below 0x80
#: (a byte), ``\\uNNNN`` or ``\\UNNNNNNNN`` above.
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(name: str) -> str:
    """``name`` (a path, a source name) fit for a label, a JSON string, a terminal or one log line.

    Linux names are bytes: Python reads a byte that is not UTF-8 as a lone surrogate
    (U+DC80-U+DCFF), which no UTF-8 output can carry, and a newline in a name would fake a
    log line. Every unprintable character is escaped visibly instead: that byte as ``\\xff``,
    controls as ``\\n``, ``\\x1b``, ``\\u2028``. This is the one rule for names shown anywhere;
    what must find the file again keeps the exact name. Idempotent (its output is printable),
    so it is safe at any boundary, hence not injective: a name spelling ``\\xff`` in ASCII
    shows like the byte.
    """
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else _escape(c) for c in name)


def _escape(c: str) -> str:
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    if c in _ESCAPES:
        return _ESCAPES[c]
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class PrintableArgs(logging.Filter):
    """Applies ``printable`` to every text or path argument of a log record (the message
    template is ours and may span lines on purpose; the values it formats may not)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_printable_arg(a) for a in args)
        elif isinstance(args, Mapping):
            record.args = {k: _printable_arg(v) for k, v in args.items()}
        return True


def printable_logs() -> None:
    """Install ``PrintableArgs`` on the root logger's handlers (once each)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, PrintableArgs) for f in handler.filters):
            handler.addFilter(PrintableArgs())


def _printable_arg(value: object) -> object:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return printable(value) if isinstance(value, str) else value


def printable_lines(text: str) -> str:
    """``printable`` for multi-line text of our own (a traceback, a report): line breaks stay."""
    return "\n".join(printable(line) for line in text.split("\n"))


class PrintableFormatter(logging.Formatter):
    """Log lines for a terminal: a message quoting a log's text (a path, a key) escapes its
    control characters like every other output; line breaks (tracebacks) stay."""

    def format(self, record: logging.LogRecord) -> str:
        return printable_lines(super().format(record))
