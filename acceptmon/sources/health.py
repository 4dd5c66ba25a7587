"""One bookkeeping of a source's health: what ``/metrics`` shows and what the logs say.

File sources (local and SSH) report what happens to them here and nowhere
else: bytes read, rotations, truncations, content lost, and problems. A
problem belongs to a key (a path, the host) and lasts an episode: it is
counted and logged once when it starts or changes kind, not on every poll
that sees it again, and logged once more when it ends. ``down`` is a state
that is not an error (a local log not created yet): not up, logged, not
counted. ``error`` is a one-off, counted each time (a connection attempt).
``snapshot`` is the ``SourceHealth`` that ``health()`` returns.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

from acceptmon.sources.base import SourceHealth

log = logging.getLogger("acceptmon.sources")

#: The key of a remote source's connection among its problems.
TRANSPORT = "(connection)"

#: The error kinds file sources count (``acceptmon_source_errors_total{kind}``).
ERROR_KINDS = (
    "auth",
    "host_key",
    "unreachable",
    "io",
    "file_missing",
    "permission_denied",
    "stat_error",
    "open_error",
    "read_error",
    "resume_lost",
)


class SourceEvents:
    """Thread-safe: an SSH source reports from its host's worker, ``snapshot`` runs on the consumer's."""

    def __init__(self, name: str, *, remote: bool = False) -> None:
        """``remote``: reads over a connection, down until ``transport(True)``."""
        self.name = name
        self._lock = threading.Lock()
        self._bad: dict[str, str] = {TRANSPORT: "connecting"} if remote else {}
        self._errors: Counter[str] = Counter()
        self._last_error = ""
        self._bytes = 0
        self._rotations = 0
        self._truncations = 0
        self._overlong = 0

    # -- problems ------------------------------------------------------------------------

    def problem(self, key: str, kind: str, message: str) -> None:
        """``key`` is unusable for reason ``kind``: counted and logged once per episode."""
        with self._lock:
            if self._bad.get(key) == kind:
                return
            self._bad[key] = kind
            self._errors[kind] += 1
            self._last_error = message
        log.warning("source %s: %s (%s)", self.name, message, kind)

    def down(self, key: str, status: str, message: str) -> None:
        """``key`` is not usable yet, and that is no error (not counted)."""
        with self._lock:
            if self._bad.get(key) == status:
                return
            self._bad[key] = status
        log.warning("source %s: %s", self.name, message)

    def ok(self, key: str) -> None:
        """``key`` works (again): the episode, if any, is over."""
        with self._lock:
            if self._bad.pop(key, None) is None:
                return
        log.info("source %s: %s is readable again", self.name, key)

    def forget(self, key: str) -> None:
        """``key`` is no longer followed: its problem, if any, no longer makes the source down."""
        with self._lock:
            self._bad.pop(key, None)

    def error(self, kind: str, message: str) -> None:
        """A one-off failure, counted every time (each is a separate attempt or loss)."""
        with self._lock:
            self._errors[kind] += 1
            self._last_error = message
        log.warning("source %s: %s", self.name, message)

    def transport(self, up: bool, kind: str = "", message: str = "") -> None:
        """The connection went up, or an attempt failed: each failure counted (the host's
        worker logs changes once for all the sources on that host)."""
        with self._lock:
            if up:
                self._bad.pop(TRANSPORT, None)
                return
            self._bad[TRANSPORT] = kind
            self._errors[kind] += 1
            self._last_error = message

    # -- what happened to the files ------------------------------------------------------

    def read(self, n: int) -> None:
        with self._lock:
            self._bytes += n

    def rotation(self, detail: str) -> None:
        with self._lock:
            self._rotations += 1
        log.debug("source %s: %s", self.name, detail)

    def truncation(self, detail: str) -> None:
        with self._lock:
            self._truncations += 1
        log.debug("source %s: %s", self.name, detail)

    def lost(self, detail: str) -> None:
        """Content gone before we read it (deleted, compressed): logged, not an error kind."""
        log.warning("source %s: %s", self.name, detail)

    def overlong(self, n: int) -> None:
        """Lines dropped for exceeding the line limit, from files now closed."""
        if n:
            with self._lock:
                self._overlong += n

    # -- reading it ----------------------------------------------------------------------

    def is_ok(self, key: str) -> bool:
        with self._lock:
            return key not in self._bad

    def snapshot(self, *, up: bool, lag: int, open_files: int, overlong_open: int = 0) -> SourceHealth:
        """``up``: what only the source knows (it follows something); any open problem makes it down."""
        with self._lock:
            return SourceHealth(
                up=up and not self._bad,
                bytes_read=self._bytes,
                rotations=self._rotations,
                truncations=self._truncations,
                lag_bytes=lag,
                open_files=open_files,
                overlong_lines=self._overlong + overlong_open,
                errors=tuple(sorted(self._errors.items())),
                last_error=self._last_error,
            )
