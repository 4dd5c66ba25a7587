"""Files that come, go or move wake the poller; polling at an interval stays the backstop.

An event means "look now" rather than "this changed": the poller still stats
every file itself, so a missed, merged or spurious event costs latency at
worst, never a line. Writes are not subscribed to at all: the kernel sends an
event per ``write``, and waking the loop once per appended line cost most of
the agent's CPU at a few lines a second. Appended lines are read at the next
poll, or at once when a scrape asks for fresh data (``agent/catchup.py``);
rotation (create, move, delete) still wakes the loop right away. If the
observer cannot run (inotify limits, no permission) we log it once and rely
on polling.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from watchdog.events import (
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MOVED,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from acceptmon.clock import Waker
from acceptmon.sources.events import FileEvents

log = logging.getLogger("acceptmon.sources")

#: What the observer subscribes to (on Linux, the inotify mask: no IN_MODIFY, IN_OPEN, IN_CLOSE).
WANTED: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    DirCreatedEvent,
    FileMovedEvent,
    DirMovedEvent,
    FileDeletedEvent,
    DirDeletedEvent,
]
#: The same, checked again per event: an observer may ignore the filter.
_WAKING = frozenset([EVENT_TYPE_CREATED, EVENT_TYPE_MOVED, EVENT_TYPE_DELETED])


class _Wake(FileSystemEventHandler):
    def __init__(self, waker: Waker, events: FileEvents | None) -> None:
        self._waker = waker
        self._events = events

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in _WAKING:
            return
        if self._events is not None:
            for path in (event.src_path, getattr(event, "dest_path", "")):
                if path:
                    self._events.record(os.fsdecode(path))
        self._waker.wake()


class DirectoryWatcher:
    """Watches directories (not recursively); wakes ``waker`` when files in them come, go or move."""

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
            self._observer.schedule(self._handler, directory, recursive=False, event_filter=WANTED)
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
