"""Log a problem when it starts or changes, not on every retry of it.

A dead webhook fails every few seconds for hours; one line when it starts,
one when it changes, and one when it recovers is what an operator can read.
Repeats go to DEBUG.
"""

from __future__ import annotations

import logging


class StatusLog:
    def __init__(self, logger: logging.Logger, prefix: str) -> None:
        self._log = logger
        self._prefix = prefix
        self._kind: str | None = None

    def problem(self, kind: str, message: str, level: int = logging.WARNING) -> None:
        """Log ``message`` at ``level`` if ``kind`` differs from the current problem."""
        repeat = kind == self._kind
        self._kind = kind
        self._log.log(logging.DEBUG if repeat else level, "%s: %s", self._prefix, message)

    def clear(self, message: str, kind: str | None = None) -> None:
        """The problem (or only ``kind``, if given) is gone: say so once."""
        if self._kind is not None and kind in (None, self._kind):
            self._kind = None
            self._log.info("%s: %s", self._prefix, message)
