"""Local log files: one path or glob, followed across rotations, resumed exactly.

Work per poll is bounded (``poll_bytes``); when nothing changed it costs one
``stat`` per followed path (plus one of the glob's directory). Checkpoints are
built only from committed positions, so a crash re-reads at most the lines
handed out but not yet committed and never skips one.
"""

from __future__ import annotations

import dataclasses
import glob
import logging
import os
import stat
from collections import deque
from typing import Any

from acceptmon.clock import Clock
from acceptmon.model import Chunk
from acceptmon.sources.base import SourceHealth
from acceptmon.sources.events import FileEvents
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.lines import MAX_LINE_BYTES
from acceptmon.sources.matching import GlobMatcher
from acceptmon.sources.tail.entry import files_of
from acceptmon.sources.tail.follower import Emitted, FollowSettings, PathFollower
from acceptmon.sources.tail.fs import FileSystem
from acceptmon.sources.tail.localfs import LocalFS
from acceptmon.sources.tail.stream import identity_of
from acceptmon.statefiles import CHECKPOINT_VERSION
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.sources")


class LocalSource:
    """Follows the files a path or glob names; see ``Source`` for the contract.

    A glob's files are unrelated series (two servers logging side by side),
    so each matched file is its own ``source``: ``name:relative/path`` (the
    path relative to the glob's fixed directory). A file's rotations stay
    with it, so ``server.log`` and ``server.log.1`` are one source.

    Files are read through ``fs`` (default: the local disk); tests pass an
    in-memory filesystem with inodes. Globs and file events look at the disk.
    """

    def __init__(
        self,
        name: str,
        pattern: str,
        *,
        from_beginning: bool = True,
        clock: Clock,
        read_size: int = 1 << 20,
        poll_bytes: int | None = None,
        rotate_wait: float = 5.0,
        rescan_interval: float = 2.0,
        fs: FileSystem | None = None,
        max_line: int = MAX_LINE_BYTES,
        max_pending: int = 100_000,
        events: FileEvents | None = None,
        quiet_after: float = 10.0,
        backstop: float = 5.0,
        max_detached: int = 4,
    ) -> None:
        self.name = name
        self.pattern = pattern
        self._fs = fs or LocalFS()
        self._cfg = FollowSettings(name, self._fs, clock, read_size, rotate_wait, max_line, max_detached)
        self._health = SourceEvents(name, log)
        self._matcher = GlobMatcher(pattern, clock, rescan_interval) if glob.has_magic(pattern) else None
        self._from_beginning = from_beginning
        self._poll_bytes = poll_bytes or 4 * read_size
        self._followers: dict[str, PathFollower] = {}
        self._pending: deque[Emitted] = deque(maxlen=max_pending)
        self._restored: dict[str, Any] | None = None
        self._started = False
        self._turn = 0
        self._events = events
        self._quiet_after = quiet_after
        self._backstop = backstop
        self._rescan_interval = rescan_interval
        #: Per path: last change seen, last look, its directories, resolved path.
        self._looks: dict[str, tuple[float, float, frozenset[str], str]] = {}
        self._event_seq = 0

    def restore(self, state: dict[str, Any]) -> None:
        files = files_of(state)
        if isinstance(files, dict):
            self._restored = files
        elif state:
            log.warning("%s: ignoring a checkpoint this version cannot read", self.name)

    def poll(self) -> list[Chunk]:
        if not self._started:
            self._start()
        else:
            self._rescan()
        now = self._cfg.clock.monotonic()
        touched: set[str] | None = None
        if self._events is not None:
            self._event_seq, touched = self._events.touched_since(self._event_seq)
        for f in list(self._followers.values()):
            self._look(f, now, touched)
        emitted = self._read_round()
        self._pending.extend(emitted)
        for path in [p for p, f in self._followers.items() if not f.matched and f.idle]:
            del self._followers[path]
            self._looks.pop(path, None)
            self._health.forget(path)
        return [c for c, _, _ in emitted]

    def _look(self, f: PathFollower, now: float, touched: set[str] | None) -> None:
        """Stat ``f`` if it may have changed: always without events, else when recently
        active, named by an event, or at the slow backstop interval."""
        if self._events is None:
            f.look()
            return
        seen = self._looks.get(f.path)
        if (
            seen is not None
            and touched is not None
            and f.status == "ok"
            and f.current is not None
            and not f.current.stale
        ):
            changed_at, looked_at, dirs, real = seen
            if (
                now - changed_at >= self._quiet_after
                and now - looked_at < self._backstop
                and not f.detached
                and dirs <= self._events.dirs()
                and f.path not in touched
                and real not in touched
            ):
                return
        before = _signature(f)
        f.look()
        if seen is None or _signature(f) != before:
            real = os.path.realpath(f.path)
            dirs = frozenset((os.path.dirname(os.path.abspath(f.path)), os.path.dirname(real)))
            self._looks[f.path] = (now, now, dirs, real)
        else:
            self._looks[f.path] = (seen[0], now, seen[2], seen[3])

    def _start(self) -> None:
        self._started = True
        restored = self._restored or {}
        start_at_end = not self._from_beginning and self._restored is None
        for path in self._match():
            self._followers[path] = self._follower(path, start_at_end=start_at_end)
        for path, entries in restored.items():
            f = self._followers.get(path)
            if f is None:
                f = self._followers[path] = self._follower(path)
                f.matched = self._matcher is None
            if isinstance(entries, dict):
                f.resume(entries)

    def _follower(self, path: str, *, start_at_end: bool = False) -> PathFollower:
        cfg = self._cfg
        if self._matcher is not None:
            cfg = dataclasses.replace(cfg, source=file_source(self.name, self._matcher.directory, path))
        return PathFollower(path, cfg, self._health, start_at_end=start_at_end)

    def _match(self) -> list[str]:
        return [self.pattern] if self._matcher is None else self._matcher.match()

    def _rescan(self) -> None:
        if self._matcher is None:
            return
        # Directory events wake us when files come and go: the periodic rescan is only a backstop.
        watched = self._events is not None and os.path.abspath(self._matcher.directory) in self._events.dirs()
        self._matcher.interval = self._rescan_interval * (5 if watched else 1)
        if not self._matcher.changed():
            return
        matched = set(self._matcher.match())
        for path, f in self._followers.items():
            if f.matched and path not in matched:
                f.leave()
        for path in sorted(matched):
            old = self._followers.get(path)
            if old is not None:
                old.matched = True
                continue
            new = self._followers[path] = self._follower(path)
            self._take_renamed(new)

    def _take_renamed(self, new: PathFollower) -> None:
        """A file renamed within the glob continues where it was, instead of being read again."""
        try:
            identity = identity_of(self._fs.stat(new.path))
        except OSError:
            return
        for f in self._followers.values():
            s = f.take_detached(identity) if f is not new else None
            if s is not None:
                new.take_over(s)
                return

    def _read_round(self) -> list[Emitted]:
        """Share the byte budget fairly: start with a different path each poll."""
        followers = list(self._followers.values())
        if not followers:
            return []
        self._turn = (self._turn + 1) % len(followers)
        out: list[Emitted] = []
        budget = self._poll_bytes
        for f in followers[self._turn :] + followers[: self._turn]:
            got, used = f.read(budget)
            out += got
            budget -= used
            if budget <= 0:
                break
        return out

    def commit(self, chunk: Chunk) -> None:
        """Mark ``chunk`` and every chunk handed out before it as processed."""
        count = next((i + 1 for i, (c, _, _) in enumerate(self._pending) if _same(c, chunk)), 0)
        for _ in range(count):
            c, s, lineno = self._pending.popleft()
            assert c.end is not None
            s.committed, s.committed_lineno = c.end.offset, lineno
        for f in self._followers.values():
            f.prune()

    def checkpoint(self) -> dict[str, Any]:
        if not self._started:
            files = self._restored
            return {} if files is None else {"version": CHECKPOINT_VERSION, "files": files}
        files = {path: f.state() for path, f in self._followers.items() if f.registered}
        return {"version": CHECKPOINT_VERSION, "files": files}

    def health(self) -> SourceHealth:
        followers = [f for f in self._followers.values() if f.matched]
        open_streams = [s for f in self._followers.values() for s in f.streams() if s.handle is not None]
        return self._health.snapshot(
            up=bool(followers) and all(f.status == "ok" for f in followers),
            lag=sum(max(0, s.size - s.emitted) for s in open_streams),
            files=len(open_streams),
            overlong=sum(s.splitter.overlong for s in open_streams),
        )

    def watch_dirs(self) -> list[str]:
        """Directories whose events should wake the poller (pattern's and each file's, links resolved)."""
        dirs = {self._matcher.directory if self._matcher else os.path.dirname(self.pattern) or "."}
        for path in self._followers:
            dirs.add(os.path.dirname(path) or ".")
            dirs.add(os.path.dirname(os.path.realpath(path)))
        return sorted(d for d in dirs if _is_dir(d))

    def close(self) -> None:
        for f in self._followers.values():
            f.close()
        self._pending.clear()


def file_source(name: str, directory: str, path: str) -> str:
    """The ``source`` of one file a glob matched: ``name:path-relative-to-the-glob's-directory``,
    ``printable`` (the follower keeps the exact path)."""
    rel = os.path.relpath(path, directory)
    return printable(f"{name}:{path if rel.startswith('..') else rel}")


def _signature(f: PathFollower) -> tuple[object, ...]:
    cur = f.current
    return (f.status, len(f.detached), None if cur is None else (cur.identity, cur.size, cur.mtime_ns))


def _same(a: Chunk, b: Chunk) -> bool:
    return a is b or (a.end == b.end and a.lineno == b.lineno and a.path == b.path)


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False
