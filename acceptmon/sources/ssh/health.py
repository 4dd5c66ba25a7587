"""Error counts and up/down state of one SSH source, logged once per change.

Connection failures are counted per attempt (attempts are spaced by the
backoff); file problems are counted once per episode (a missing file polled
every half second is one problem, not thousands).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

from acceptmon.sources.base import SourceHealth

log = logging.getLogger("acceptmon.sources.ssh")

KINDS = ("auth", "host_key", "unreachable", "file_missing", "permission", "io")


class HealthTracker:
    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._host_up = False
        self._bad_files: dict[str, str] = {}
        self._errors: Counter[str] = Counter()
        self._last_error = ""
        self.bytes_read = 0
        self.rotations = 0
        self.truncations = 0

    def host(self, up: bool, kind: str, message: str) -> None:
        with self._lock:
            self._host_up = up
            if not up:
                self._errors[kind] += 1
                self._last_error = message

    def file_problem(self, path: str, kind: str, message: str) -> None:
        with self._lock:
            if self._bad_files.get(path) == kind:
                return
            self._bad_files[path] = kind
            self._errors[kind] += 1
            self._last_error = message
        log.warning("source %s: %s (%s)", self.name, message, kind)

    def file_ok(self, path: str) -> None:
        with self._lock:
            if self._bad_files.pop(path, None) is None:
                return
        log.info("source %s: %s is readable again", self.name, path)

    def forget(self, path: str) -> None:
        with self._lock:
            self._bad_files.pop(path, None)

    def note(self, event: str, detail: str) -> None:
        """A rotation, an in-place truncation, or a file gone before its end.

        A vanished file is logged, not counted as an error: a deleted log and
        a log compressed before we read its tail look the same over SFTP.
        """
        with self._lock:
            if event == "rotation":
                self.rotations += 1
            elif event == "truncation":
                self.truncations += 1
        if event == "lost":
            log.warning("source %s: %s", self.name, detail)
        else:
            log.debug("source %s: %s", self.name, detail)

    def snapshot(self, lag: int, files: int, overlong: int = 0) -> SourceHealth:
        with self._lock:
            return SourceHealth(
                up=self._host_up and not self._bad_files,
                bytes_read=self.bytes_read,
                rotations=self.rotations,
                truncations=self.truncations,
                lag_bytes=lag,
                open_files=files,
                overlong_lines=overlong,
                errors=tuple(sorted(self._errors.items())),
                last_error=self._last_error,
            )
