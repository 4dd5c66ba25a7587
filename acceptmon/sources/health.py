"""One source's observable events: the counters /metrics shows and the log lines people read.

Every line source (local files, SSH, journald, stdin) reports what happens to
it here, so metrics, logs and tests see the same events: bytes read,
rotations, truncations, files lost before their end, errors by kind. An error
that persists (a missing or unreadable file polled every half second) is one
*problem* per episode, counted and logged once until it clears; a one-off
error is counted every time and logged when it differs from the last one.
Thread-safe: an SSH host's worker thread writes while the loop reads.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

from acceptmon.sources.base import SourceHealth


class SourceEvents:
    """Counters and log-once state of one source."""

    def __init__(self, name: str, logger: logging.Logger, *, host_up: bool = True) -> None:
        self.name = name
        self._log = logger
        self._lock = threading.Lock()
        self._errors: Counter[str] = Counter()
        self._last_error = ""
        self._problems: dict[str, str] = {}
        self._host_up = host_up
        self.bytes_read = 0
        self.rotations = 0
        self.truncations = 0
        self.overlong = 0

    # -- what happened -------------------------------------------------------------------

    def read(self, nbytes: int) -> None:
        with self._lock:
            self.bytes_read += nbytes

    def rotated(self) -> None:
        with self._lock:
            self.rotations += 1

    def truncated(self) -> None:
        with self._lock:
            self.truncations += 1

    def skipped_overlong(self, lines: int) -> None:
        with self._lock:
            self.overlong += lines

    def lost(self, detail: str) -> None:
        """A file went away before we read its end: counted (``kind="lost_unread"``) and logged.

        A deleted log and one compressed before we read its tail look the same:
        the count says lines were missed, the log line which file and from where.
        """
        with self._lock:
            self._errors["lost_unread"] += 1
            self._last_error = detail
        self._log.warning("%s: %s", self.name, detail)

    def error(self, kind: str, message: str) -> None:
        """A one-off error: counted each time, logged when it is news."""
        with self._lock:
            news = self._errors[kind] == 0 or message != self._last_error
            self._errors[kind] += 1
            self._last_error = message
        if news:
            self._log.warning("%s: %s", self.name, message)

    def problem(self, key: str, kind: str, message: str) -> bool:
        """A lasting problem with ``key`` (a path): counted and logged once per episode.

        Returns whether this started a new episode.
        """
        with self._lock:
            if self._problems.get(key) == kind:
                return False
            self._problems[key] = kind
            self._errors[kind] += 1
            self._last_error = message
        self._log.warning("%s: %s", self.name, message)
        return True

    def ok(self, key: str) -> None:
        """``key`` works again: its problem episode, if any, is over."""
        with self._lock:
            if self._problems.pop(key, None) is None:
                return
        self._log.info("%s: %s: recovered", self.name, key)

    def forget(self, key: str) -> None:
        """``key`` is no longer followed: its problem no longer makes the source down."""
        with self._lock:
            self._problems.pop(key, None)

    def host(self, up: bool, kind: str = "", message: str = "") -> None:
        """The connection a remote source reads through came up or went down (counted per attempt)."""
        with self._lock:
            self._host_up = up
            if not up:
                self._errors[kind] += 1
                self._last_error = message

    # -- what /metrics shows ---------------------------------------------------------------

    def snapshot(self, *, up: bool, lag: int, files: int, overlong: int = 0) -> SourceHealth:
        """``up``: what the source itself knows; a down host or an open problem also makes it down."""
        with self._lock:
            return SourceHealth(
                up=up and self._host_up and not self._problems,
                bytes_read=self.bytes_read,
                rotations=self.rotations,
                truncations=self.truncations,
                lag_bytes=lag,
                open_files=files,
                overlong_lines=self.overlong + overlong,
                errors=tuple(sorted(self._errors.items())),
                last_error=self._last_error,
            )
