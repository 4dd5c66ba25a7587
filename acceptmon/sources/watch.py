"""Filesystem events only wake the poller; polling at an interval stays the backstop.

An event means "look now" rather than "this changed": the poller still stats
every file itself, so a missed, merged or spurious event costs latency at
worst, never a line. If the observer cannot run (inotify limits, no
permission) we log it once and rely on polling.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from watchdog.events import (
    EVENT_TYPE_CLOSED_NO_WRITE,
    EVENT_TYPE_OPENED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from acceptmon.clock import Waker
from acceptmon.sources.events import FileEvents

log = logging.getLogger("acceptmon.sources")

#: Events our own reads cause: waking on them would make the poller spin.
_IGNORED = frozenset([EVENT_TYPE_OPENED, EVENT_TYPE_CLOSED_NO_WRITE])


class _Wake(FileSystemEventHandler):
    def __init__(self, waker: Waker, events: FileEvents | None) -> None:
        self._waker = waker
        self._events = events

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED:
            return
        if self._events is not None:
            for path in (event.src_path, getattr(event, "dest_path", "")):
                if path:
                    self._events.record(os.fsdecode(path))
        self._waker.wake()


class DirectoryWatcher:
    """Watches directories (not recursively) and wakes ``waker`` on any change in them."""

    def __init__(
        self,
        waker: Waker,
        *,
        observer_factory: Callable[[], Any] = Observer,
        events: FileEvents | None = None,
    ) -> None:
        self._events = events
        self._handler = _Wake(waker, events)
        self._factory = observer_factory
        self._observer: Any = None
        self._watched: set[str] = set()
        self._failed: set[str] = set()
        self.active = False

    def start(self) -> bool:
        """Start watching; False (logged once) if events are unavailable."""
        try:
            self._observer = self._factory()
            self._observer.start()
        except (OSError, RuntimeError) as e:
            log.warning("file events unavailable (%s); relying on polling", e)
            self._observer = None
            return False
        self.active = True
        for directory in sorted(self._watched):
            self._schedule(directory)
        return True

    def add(self, directory: str) -> None:
        """Watch ``directory`` too (idempotent; a failure is logged once per directory)."""
        directory = os.path.abspath(directory)
        if directory in self._watched:
            return
        self._watched.add(directory)
        if self.active:
            self._schedule(directory)

    def _schedule(self, directory: str) -> None:
        try:
            self._observer.schedule(self._handler, directory, recursive=False)
            if self._events is not None:
                self._events.watching(directory)
        except (OSError, RuntimeError) as e:
            self._watched.discard(directory)  # try again on a later add
            if directory not in self._failed:
                self._failed.add(directory)
                log.warning("cannot watch %s (%s); polling it", directory, e)

    def stop(self) -> None:
        if self._events is not None:
            self._events.not_watching()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        self.active = False
