"""A lean inotify observer for ``DirectoryWatcher``: one thread, one read per burst of events.

watchdog's ``Observer`` hands every event through three threads (inotify
reader, emitter, dispatcher), about half a millisecond of CPU per appended
line on a small VM, which at a line every 100 ms is most of the agent's idle
cost. This one blocks in ``select`` on the inotify descriptor, reads what is
there and calls the handler on the same thread. When events come faster than
``coalesce`` seconds apart it pauses that long before it reads again: events
of a busy file meanwhile queue up in the kernel, which merges repeated
identical ones, so a burst of appends wakes the agent a few dozen times a
second rather than once per line, while an event after a quiet spell is
handed on at once (and costs no extra wake-up). Only events that change something are asked for:
the agent's own reads (open, access, close without write) raise none.

It offers the part of watchdog's observer API ``DirectoryWatcher`` uses
(``start``, ``schedule``, ``stop``, ``join``) and hands the handler
watchdog's event types, so the handler cannot tell the two apart. Linux only:
elsewhere ``observer`` returns watchdog's.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import logging
import os
import select
import struct
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from watchdog.events import (
    DirDeletedEvent,
    DirModifiedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
)

log = logging.getLogger("acceptmon.sources")

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED, IN_ONLYDIR, IN_ISDIR = 0x4000, 0x8000, 0x01000000, 0x40000000
IN_CLOEXEC, IN_NONBLOCK = 0o2000000, 0o4000
#: What can mean new lines or a rotation; never open/access/close-no-write (our own reads).
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
#: Pause after a read: events of a busy file merge in the kernel meanwhile (well under the 50 ms
#: append→visible budget, and only after an event was already handed on).
COALESCE = 0.02
_HEADER = struct.Struct("iIII")
#: Entries of a directory announced on a queue overflow (then the poller's backstop takes over).
_OVERFLOW_NAMES = 4096


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class InotifyObserver:
    """Watches directories (not recursively) and calls each one's handler with its events."""

    def __init__(self, coalesce: float = COALESCE) -> None:
        self._coalesce = coalesce
        self._fd = -1
        self._wake_r = self._wake_w = -1
        self._dirs: dict[int, tuple[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._libc: Any = None

    def start(self) -> None:
        """Open the inotify instance (``OSError`` when the instance limit is reached) and read it."""
        self._libc = _libc()
        fd = self._libc.inotify_init1(IN_CLOEXEC | IN_NONBLOCK)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self._fd = fd
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="acceptmon-inotify", daemon=True)
        self._thread.start()

    def schedule(self, handler: Any, path: str, recursive: bool = False) -> None:
        """Watch ``path``; ``OSError`` if it cannot be (watch limit, no permission, not a directory)."""
        if recursive:
            raise ValueError("only non-recursive watches")
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), MASK)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
        with self._lock:
            self._dirs[wd] = (path, handler)

    def stop(self) -> None:
        self._stop.set()
        if self._wake_w >= 0:
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
        for fd in (self._fd, self._wake_r, self._wake_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._wake_r = self._wake_w = -1

    def _run(self) -> None:
        last = float("-inf")
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._fd, self._wake_r], [], [])
                if self._wake_r in ready:
                    return
                data = os.read(self._fd, 1 << 16)
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno == errno.EAGAIN:
                    continue
                log.warning("file events stopped (%s); relying on polling", exc.strerror)
                return
            for handler, event in self._events(data):
                try:
                    handler.dispatch(event)
                except Exception as exc:  # one bad event never stops the thread
                    log.debug("file event handler failed: %s", type(exc).__name__)
            now = time.monotonic()
            if now - last < self._coalesce:  # a burst: let the kernel merge what follows
                self._stop.wait(self._coalesce)
            last = now

    def _events(self, data: bytes) -> Iterator[tuple[Any, FileSystemEvent]]:
        at = 0
        while at + _HEADER.size <= len(data):
            wd, mask, _cookie, size = _HEADER.unpack_from(data, at)
            raw = data[at + _HEADER.size : at + _HEADER.size + size].rstrip(b"\0")
            at += _HEADER.size + size
            if mask & IN_Q_OVERFLOW:
                yield from self._overflow()
                continue
            with self._lock:
                entry = self._dirs.pop(wd, None) if mask & IN_IGNORED else self._dirs.get(wd)
            if entry is None or mask & IN_IGNORED:
                continue
            directory, handler = entry
            path = os.path.join(directory, os.fsdecode(raw)) if raw else directory
            event = _event(mask, path)
            if event is not None:
                yield handler, event

    def _overflow(self) -> Iterator[tuple[Any, FileSystemEvent]]:
        """Events were lost: say every file of every watched directory may have changed."""
        with self._lock:
            dirs = list(self._dirs.values())
        for directory, handler in dirs:
            yield handler, DirModifiedEvent(directory)
            try:
                names = sorted(os.listdir(directory))[:_OVERFLOW_NAMES]
            except OSError:
                continue
            for name in names:
                yield handler, FileModifiedEvent(os.path.join(directory, name))


def _event(mask: int, path: str) -> FileSystemEvent | None:
    if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
        return DirDeletedEvent(path)
    if mask & IN_ISDIR:
        return DirModifiedEvent(path)
    if mask & IN_CREATE:
        return FileCreatedEvent(path)
    if mask & IN_DELETE:
        return FileDeletedEvent(path)
    if mask & IN_MOVED_FROM:
        return FileMovedEvent(path, "")
    if mask & IN_MOVED_TO:
        return FileMovedEvent("", path)
    if mask & IN_CLOSE_WRITE:
        return FileClosedEvent(path)
    if mask & (IN_MODIFY | IN_ATTRIB):
        return FileModifiedEvent(path)
    return None


def observer() -> Any:
    """The observer ``DirectoryWatcher`` uses by default: this one on Linux, else watchdog's."""
    if sys.platform.startswith("linux"):
        return InotifyObserver()
    from watchdog.observers import Observer

    return Observer()
